// Which status changes of a CR are this process's own writes, watched back. A failing CR's own status
// write must not cut its backoff short (queue.ts addUnlessFailing), but a status someone else wrote
// (by hand, another tool) is news: the CR runs at once and its status is put right, not a minute later.

/** A status write of ours whose answer has not come back yet: its watch event may arrive first. */
const PENDING = '';

export class OwnStatusWrites {
  /** CR key -> resourceVersion our last status write produced (PENDING while it is in flight). */
  private readonly written = new Map<string, string>();

  /** A status write of `key` is about to be sent. */
  writing(key: string): void {
    this.written.set(key, PENDING);
  }

  /** It was written as `resourceVersion` (undefined: it failed, or its answer said nothing). */
  wrote(key: string, resourceVersion: string | undefined): void {
    if (resourceVersion === undefined) this.written.delete(key);
    else this.written.set(key, resourceVersion);
  }

  /**
   * Whether a status-only change of `key` at `resourceVersion` is ours: the version our last write
   * produced, or any while a write is in flight (a hand-written status racing it is put right at the
   * CR's next run).
   */
  isOwn(key: string, resourceVersion: string | undefined): boolean {
    const mine = this.written.get(key);
    return mine !== undefined && (mine === PENDING || mine === resourceVersion);
  }

  forget(key: string): void {
    this.written.delete(key);
  }
}
