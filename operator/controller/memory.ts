// What the reconciler remembers between reconciles, in one place. A level-based reconcile reads the
// caches; these facts are what the caches cannot tell, each closing a race between the watches and
// the reconciler's own writes (each shown by a test that fails without it):
// - own status writes (OwnStatusWrites): a CR's status change watched back is ours, so it does not cut
//   a failing CR's backoff short (failure-loop.test.ts), while a status someone else wrote runs the CR
//   at once (inputs.test.ts); and the status our last write produced while the cache has not shown it,
//   so a reconcile in between does not write it again (status-writes.test.ts).
// - deleted children (DeletedChildren): a child's DELETED event can come before its CR's, and a
//   reconcile in between would create the child again for a CR that no longer exists
//   (deleted-cr-race.test.ts).
// - conflict watches (ConflictWatches): an object not ours that blocks a CR is in no label-selected
//   cache, so its deletion is watched by name while it blocks one (conflict-wait.test.ts).
// - NodePort waits (NodePortWaits): a Service not ours holding a CR's NodePort is in no cache either,
//   so every Service is watched while some CR waits for a port (nodeport-wait.test.ts).
// - kind rollouts (KindWaves): which apps of a kind roll to its new settings now, which wait their turn,
//   which failed; the caches hold only the Deployments, not the order of the waves (waves.test.ts).
// The reconciler reads and writes the first three and the rollouts (ReconcilerFacts); the watches'
// observe hooks tell the facts what was watched (MemoryObserver); the event mappings get a read-only
// view (MemoryView).
import type { KubernetesObject } from '@kubernetes/client-node';
import { WatchContext } from '../runtime/controller.js';
import { ConflictTracker, ConflictWatches } from './conflicts.js';
import { DeletedChildren } from './deleted-children.js';
import { NodePortWaits } from './nodeports.js';
import { OwnStatusWrites } from './own-status-writes.js';
import { KindWaves, KindWavesOptions } from './waves.js';

/** What the reconciler reads and writes of its memory; a fact left out is not remembered (tests leave some out). */
export interface ReconcilerFacts {
  readonly ownStatusWrites?: Pick<OwnStatusWrites, 'statusAhead' | 'writing' | 'wrote'>;
  readonly deletedChildren?: Pick<DeletedChildren, 'seen' | 'size'>;
  readonly conflicts?: ConflictTracker;
  readonly waves?: KindWaves;
}

/** What the event mappings read of the reconciler's memory. */
export interface MemoryView {
  /** Whether the CR `key` at `resourceVersion` is our own status write, watched back. */
  isOwnStatusWrite(key: string, resourceVersion: string | undefined): boolean;
}

/** What the watches tell the reconciler's memory, each event before any mapping sees it. */
export interface MemoryObserver {
  /** The CR `key` (of `uid`) was deleted: nothing of it to remember. */
  crDeleted(key: string, uid: string | undefined): void;
  /** A watch event of a child of `kind` (delete: `deleted`). */
  childObserved(kind: string, obj: KubernetesObject, deleted: boolean): void;
  /** Whether the CR `key` waits for a NodePort now (Degraded and asking for one). */
  waitsForNodePort(key: string, waits: boolean): void;
}

/**
 * The five facts. The conflict and NodePort watches are built here and registered with the
 * controller (watchesWhile), which starts and stops them; the reconciler reaches three of the facts
 * and the rollouts here (ReconcilerFacts), and the CR watch tells the NodePort waits which CRs wait
 * (MemoryObserver).
 */
export class ReconcilerMemory implements ReconcilerFacts, MemoryView, MemoryObserver {
  readonly ownStatusWrites = new OwnStatusWrites();
  readonly deletedChildren = new DeletedChildren();
  readonly waves: KindWaves;
  private conflictWatches?: ConflictWatches;
  private nodePortWaits?: NodePortWaits;

  /** `waves`: how the kind rollouts count a kind's CRs and wake the apps whose turn came. */
  constructor(waves: KindWavesOptions = { total: () => 1, wake: () => undefined }) {
    this.waves = new KindWaves(waves);
  }

  /** The watches of objects blocking a CR (built once, by the controller's watchesWhile). */
  watchConflicts(ctx: WatchContext, onGone: (obj: KubernetesObject) => void): ConflictWatches {
    return (this.conflictWatches = new ConflictWatches(ctx, onGone));
  }

  /** The watches of objects blocking a CR; the controller builds them before its first reconcile. */
  get conflicts(): ConflictTracker {
    if (!this.conflictWatches) throw new Error('reconciler memory: the conflict watches are not built yet');
    return this.conflictWatches;
  }

  /** The watch of every Service while a CR waits for a NodePort (built once, by the controller's watchesWhile). */
  watchNodePorts(ctx: WatchContext, onFreed: (ports: number[]) => void, onListed: (key: string) => void): NodePortWaits {
    return (this.nodePortWaits = new NodePortWaits(ctx, onFreed, onListed));
  }

  private get portWaits(): NodePortWaits {
    if (!this.nodePortWaits) throw new Error('reconciler memory: the NodePort watch is not built yet');
    return this.nodePortWaits;
  }

  isOwnStatusWrite(key: string, resourceVersion: string | undefined): boolean {
    return this.ownStatusWrites.isOwn(key, resourceVersion);
  }

  crDeleted(key: string, uid: string | undefined): void {
    this.ownStatusWrites.forget(key);
    this.deletedChildren.ownerDeleted(uid);
    this.waves.forget(key.split('/')[0]!, key);
  }

  childObserved(kind: string, obj: KubernetesObject, deleted: boolean): void {
    this.deletedChildren.observed(kind, obj, deleted);
  }

  waitsForNodePort(key: string, waits: boolean): void {
    this.portWaits.observe(key, waits);
  }

  /** The read-only view the event mappings get. */
  get view(): MemoryView {
    return { isOwnStatusWrite: (key, resourceVersion) => this.isOwnStatusWrite(key, resourceVersion) };
  }
}
