// The walkthrough's app on the real node: examples/echo built into an image (cached by its sources,
// examples/echo/build.sh) and loaded under the sample kind's image name as a local stand-in, since
// no registry can serve takeyan/flask:0.0.3 here.
import { execFileSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ControlPlane } from './controlplane/controlplane.js';

const buildScript = join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'examples', 'echo', 'build.sh');
export const ECHO_STAND_IN_FOR = 'takeyan/flask:0.0.3';

/** The echo image as a docker archive; built on first use (needs Go and buildah), then reused. */
export function echoImageArchive(): string {
  const out = execFileSync('bash', [buildScript], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return out.trim().split('\n').pop() ?? '';
}

/** Loads the echo app into the real node as `takeyan/flask:0.0.3` (docker.io/...), saying so. */
export async function loadEchoStandIn(cp: ControlPlane, log: (line: string) => void): Promise<string> {
  const name = await cp.loadImageArchive(echoImageArchive(), ECHO_STAND_IN_FOR);
  log(`controlplane: loaded ${name} on the real node: a local stand-in (examples/echo, GET /api/echo on port 5000), not the published image`);
  return name;
}
