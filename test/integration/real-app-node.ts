// The set-up of the real-node tests of a real-app kind: a control plane with the real node, the real
// app's image loaded (test/integration/realapp), a fresh namespace and an operator serving the kind in it.
import { KubeConfig } from '@kubernetes/client-node';
import { AppKind } from 'cdk8s-appkind';
import { kindsFromDocument } from 'appkind-operator/kinds';
import { RestClient } from '../../operator/runtime/rest.js';
import { ControlPlane } from '../../tools/controlplane/controlplane.js';
import { createTestNamespace } from './cluster.js';
import { OperatorProcess, startOperatorOn } from './operator-process.js';
import { realAppImage } from './realapp/image.js';

const log = (line: string): void => void process.stderr.write(`${line}\n`);

/** What a real-app test works with; stop() stops the operator (resolving with its exit code) and the control plane. */
export interface RealAppNode {
  readonly cp: ControlPlane;
  readonly kc: KubeConfig;
  readonly rest: RestClient;
  readonly ns: string;
  readonly kind: AppKind;
  readonly operator: OperatorProcess;
  stop(): Promise<number | null>;
}

/**
 * The kind `kindOf(image)` gives (as a kinds file says it) served in a fresh namespace `prefix`-...,
 * after `prepare` (objects the operator must find at its start, such as a Secret). The control plane
 * is stopped when any step fails.
 */
export async function startRealAppNode(
  prefix: string,
  kindOf: (image: string) => Record<string, unknown>,
  prepare: (rest: RestClient, ns: string) => Promise<unknown> = async () => undefined,
): Promise<RealAppNode> {
  const image = await realAppImage();
  const cp = await ControlPlane.start({ realNode: true, log });
  try {
    await cp.loadImageArchive(image.archive);
    const kc = cp.kubeConfig();
    const rest = new RestClient(kc);
    const ns = await createTestNamespace(kc, prefix);
    const config = [kindOf(image.name)];
    const kind = kindsFromDocument(config, 'the test kind')[0]!;
    await prepare(rest, ns);
    const operator = await startOperatorOn(cp, ns, [kind], { APPKIND_KINDS: JSON.stringify(config) });
    const stop = async () => {
      const code = await operator.stop('SIGTERM');
      await cp.stop();
      return code;
    };
    return { cp, kc, rest, ns, kind, operator, stop };
  } catch (e) {
    await cp.stop();
    throw e;
  }
}
