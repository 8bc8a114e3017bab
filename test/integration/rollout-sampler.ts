// How many Deployments roll at once, counted from their own status as the Deployment controller writes
// it: the tests of a kind's change in waves sample them until the rollout is done.
import { KubernetesObject, V1Deployment } from '@kubernetes/client-node';

export type Deployment = V1Deployment & KubernetesObject;

/** Rolling, as the Deployment controller reports it: its template not yet observed, or not every replica updated and ready. */
export function rolling(d: Deployment): boolean {
  const want = d.spec?.replicas ?? 1;
  const s = d.status ?? {};
  const complete = (s.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0) && s.updatedReplicas === want && s.replicas === want && (s.readyReplicas ?? 0) >= want;
  return !complete;
}

export interface RolloutSampling<G> {
  /** The Deployments, listed once a sample. */
  readonly list: () => Promise<Deployment[]>;
  /** The group a Deployment's rolling counts toward (its new image, its kind), or undefined for none. */
  readonly groupOf: (d: Deployment) => G | undefined;
  /** The rollout is over. */
  readonly done: (all: Deployment[]) => boolean;
  /** Where the rollout stands, for the failure when it is not over within `timeoutMs`. */
  readonly progress: (all: Deployment[]) => string;
  readonly timeoutMs: number;
}

/** Samples the Deployments every 200 ms until `done` holds of them; resolves with the most of each group seen rolling at once. */
export async function sampleRollout<G>(opts: RolloutSampling<G>): Promise<{ most: Map<G, number>; samples: number }> {
  const deadline = Date.now() + opts.timeoutMs;
  const most = new Map<G, number>();
  let samples = 0;
  for (;;) {
    const all = await opts.list();
    samples++;
    const now = new Map<G, number>();
    for (const d of all) {
      const group = opts.groupOf(d);
      if (group !== undefined && rolling(d)) now.set(group, (now.get(group) ?? 0) + 1);
    }
    for (const [group, n] of now) most.set(group, Math.max(most.get(group) ?? 0, n));
    if (opts.done(all)) return { most, samples };
    if (Date.now() > deadline) throw new Error(`rollout not over within ${opts.timeoutMs} ms: ${opts.progress(all)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
