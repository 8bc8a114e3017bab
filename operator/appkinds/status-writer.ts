// An AppKind's status written only when it differs from the cached one, as a merge patch that also
// removes the fields no longer set, and not again while the cache is behind this process's own write;
// an Event when its Ready condition changes.
import type { EventRecorder } from '../runtime/events.js';
import type { Logger } from '../runtime/log.js';
import type { RestClient } from '../runtime/rest.js';
import type { AppKindResource, AppKindStatus } from './types.js';

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** The JSON merge patch from `live` to `next`: a key `next` drops is null, in nested objects too (lists are replaced whole). */
export function mergePatch(live: Record<string, unknown>, next: Record<string, unknown>): Record<string, unknown> {
  const patch: Record<string, unknown> = Object.fromEntries(
    Object.keys(live)
      .filter((k) => next[k] === undefined)
      .map((k) => [k, null]),
  );
  for (const [k, v] of Object.entries(next)) {
    if (v === undefined) continue;
    const before = live[k];
    patch[k] = isObject(v) && isObject(before) ? mergePatch(before, v) : v;
  }
  return patch;
}

/** JSON with keys sorted and undefined dropped: equal for equal statuses whatever order the server keeps. */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v)
            .filter(([, x]) => x !== undefined)
            .sort(([a], [b]) => a.localeCompare(b)),
        )
      : v,
  );
}

export interface AppKindStatusWriterDeps {
  readonly rest: Pick<RestClient, 'patchStatus'>;
  readonly events: EventRecorder;
  /** Ready reasons that are no news worth an Event (a moment's wait). */
  readonly quietReasons?: readonly string[];
}

export class AppKindStatusWriter {
  /**
   * The last status written per AppKind and the resourceVersion the write made: until the cache
   * shows that write, the same status is not written again (nor its Event recorded twice).
   */
  private readonly written = new Map<string, { status: string; resourceVersion?: string }>();

  constructor(private readonly deps: AppKindStatusWriterDeps) {}

  /** A merge patch of status when it differs from the cached one; an Event when Ready changes. */
  async write(ak: AppKindResource, status: AppKindStatus, log: Logger): Promise<void> {
    const live = ak.status ?? {};
    const name = ak.metadata!.name!;
    const next = canonical(status);
    if (canonical(live) === next) return;
    if (this.cacheBehindWrite(name, ak, next)) return;
    const written = await this.deps.rest.patchStatus(ak, mergePatch({ ...live }, { ...status }));
    this.written.set(name, { status: next, resourceVersion: written.metadata?.resourceVersion });
    const before = live.conditions?.find((c) => c.type === 'Ready');
    const ready = status.conditions?.find((c) => c.type === 'Ready');
    const news = ready && !this.deps.quietReasons?.includes(ready.reason);
    if (ready && news && (ready.status !== before?.status || ready.reason !== before?.reason || ready.message !== before?.message)) {
      log.info('appkind status', { ready: ready.status, reason: ready.reason });
      void this.deps.events.record(ak, ready.status === 'True' ? 'Normal' : 'Warning', ready.reason, ready.message, log);
    }
  }

  /** The AppKind is gone: nothing written of it is remembered. */
  forget(name: string): void {
    this.written.delete(name);
  }

  /** Whether `status` is what this process last wrote and the cached AppKind is older than that write. */
  private cacheBehindWrite(name: string, ak: AppKindResource, status: string): boolean {
    const last = this.written.get(name);
    if (!last) return false;
    const cached = ak.metadata?.resourceVersion;
    // resourceVersions are etcd revisions: numbers in practice, opaque by contract (then: equal or not).
    const behind =
      /^\d+$/.test(cached ?? '') && /^\d+$/.test(last.resourceVersion ?? '')
        ? BigInt(cached!) < BigInt(last.resourceVersion!)
        : cached !== last.resourceVersion;
    if (!behind) this.written.delete(name);
    return behind && last.status === status;
  }
}
