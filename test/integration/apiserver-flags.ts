// A kube-apiserver with more admission plugins than the harness enables: a wrapper script that runs
// the real binary with the extra flag, handed to ControlPlane.start({ binaries }).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { resolveBinaries, type Binaries } from '../../tools/controlplane/binaries.js';

/** The control-plane binaries, with kube-apiserver wrapped (in `dir`) to also enable `plugins`. */
export async function apiserverWithAdmissionPlugins(dir: string, plugins: string[]): Promise<Binaries> {
  const binaries = await resolveBinaries();
  const real = binaries['kube-apiserver'];
  if (/['\n]/.test(real)) throw new Error(`kube-apiserver path cannot be quoted for a shell: ${real}`);
  const wrapper = join(dir, 'kube-apiserver');
  // exec: the wrapper's pid becomes the API server's, so stopping and restarting work unchanged.
  writeFileSync(wrapper, `#!/bin/sh\nexec '${real}' "$@" --enable-admission-plugins=${plugins.join(',')}\n`, { mode: 0o755 });
  return { ...binaries, 'kube-apiserver': wrapper };
}
