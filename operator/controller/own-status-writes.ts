// Which status changes of a CR are this process's own writes, watched back. A failing CR's own status
// write must not cut its backoff short (queue.ts addUnlessFailing), but a status someone else wrote
// (by hand, another tool) is news: the CR runs at once and its status is put right, not a minute later.
//
// Also the status our last write produced while the CR cache has not shown it yet: a reconcile that
// runs in between (a Deployment or pod event of the same rollout) would otherwise compare against the
// status before it and write the same status again.
import { AppStatus } from './status.js';

/** Own writes remembered per CR: a watch event may come after the answer to a later write. */
const VERSIONS_KEPT = 4;

interface Written {
  /** A write is in flight: its watch event may arrive before its answer. */
  pending: boolean;
  /** The resourceVersions our last few writes produced, newest last. */
  versions: string[];
  /** The CR's resourceVersion in the cache when the write in flight was sent. */
  basedOn?: string;
  /**
   * The status our last write produced, the resourceVersion it produced and the CR's it was based on,
   * until the cache moves past it.
   */
  ahead?: { basedOn: string; version: string; status: Partial<AppStatus> };
}

export class OwnStatusWrites {
  private readonly written = new Map<string, Written>();

  private entry(key: string): Written {
    let w = this.written.get(key);
    if (!w) this.written.set(key, (w = { pending: false, versions: [] }));
    return w;
  }

  /** A status write of `key`, based on the CR at `basedOn` (its resourceVersion in the cache), is about to be sent. */
  writing(key: string, basedOn?: string): void {
    const w = this.entry(key);
    w.pending = true;
    w.ahead = undefined;
    w.basedOn = basedOn;
  }

  /**
   * It was written: the CR as the API server answered (undefined: it failed). Its resourceVersion is
   * ours when watched back, and its status stands in for the cache's until the cache has moved on.
   */
  wrote(key: string, written: { metadata?: { resourceVersion?: string }; status?: Partial<AppStatus> } | undefined): void {
    const w = this.entry(key);
    w.pending = false;
    const version = written?.metadata?.resourceVersion;
    if (version === undefined) return;
    w.versions = [...w.versions.filter((v) => v !== version), version].slice(-VERSIONS_KEPT);
    if (w.basedOn !== undefined && written?.status && version !== w.basedOn)
      w.ahead = { basedOn: w.basedOn, version, status: written.status };
  }

  /**
   * Whether a status-only change of `key` at `resourceVersion` is ours: a version one of our last
   * writes produced, or any while a write is in flight (a hand-written status racing it is put right
   * at the CR's next run).
   */
  isOwn(key: string, resourceVersion: string | undefined): boolean {
    const w = this.written.get(key);
    if (!w) return false;
    return w.pending || (resourceVersion !== undefined && w.versions.includes(resourceVersion));
  }

  /**
   * The status our last write produced, when the cache has not shown that write yet: it holds `key` at
   * the version the write was based on, or at one an earlier write of ours produced (two writes back
   * to back, the cache one behind: compared with the first, the second would be written again).
   * Undefined once the cache shows the write, or anything else.
   */
  statusAhead(key: string, cachedVersion: string | undefined): Partial<AppStatus> | undefined {
    const w = this.written.get(key);
    if (!w?.ahead) return undefined;
    const behind = cachedVersion === w.ahead.basedOn || (cachedVersion !== w.ahead.version && w.versions.includes(cachedVersion ?? ''));
    if (cachedVersion !== undefined && behind) return w.ahead.status;
    w.ahead = undefined;
    return undefined;
  }

  forget(key: string): void {
    this.written.delete(key);
  }
}
