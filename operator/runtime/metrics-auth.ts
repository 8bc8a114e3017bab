// Who may read /metrics, decided as controller-runtime's filters.WithAuthenticationAndAuthorization
// (the kubebuilder v4 scaffold) decides it: the bearer token is reviewed by the API server (a
// TokenReview), then the user it names is authorized for the request's path, a non-resource URL, with
// the HTTP method as the verb (a SubjectAccessReview). Answers are cached as controller-runtime caches
// them, so a scrape every 15 s costs two API requests a few times an hour, not two every scrape.
import { createHash } from 'node:crypto';

/** The API requests the reviews are sent with (the operator's RestClient). */
export interface ReviewClient {
  request<T>(method: string, path: string, opts?: { body?: unknown }): Promise<T>;
}

/** The user a TokenReview names (authentication.k8s.io/v1 UserInfo). */
export interface ReviewedUser {
  readonly username: string;
  readonly uid?: string;
  readonly groups?: string[];
  readonly extra?: Record<string, string[]>;
}

/** What the caller answers: the request goes on, or it is refused with this status and text. */
export type AuthDecision =
  | { readonly allowed: true; readonly user: string }
  | { readonly allowed: false; readonly status: 401 | 403 | 500; readonly message: string; readonly reason?: string };

/** Cache lifetimes (controller-runtime's, pkg/metrics/filters) and bounds. */
export interface MetricsAuthOptions {
  /** How long a token's review (authenticated or not) is reused. @default 60000 (controller-runtime's CacheTTL) */
  readonly authenticationTtlMs?: number;
  /** How long an allowed SubjectAccessReview is reused. @default 300000 (controller-runtime's AllowCacheTTL) */
  readonly allowTtlMs?: number;
  /** How long a denied SubjectAccessReview is reused. @default 30000 (controller-runtime's DenyCacheTTL) */
  readonly denyTtlMs?: number;
  /** Most answers kept per cache; the oldest go first (random tokens cannot grow memory). @default 1024 */
  readonly maxEntries?: number;
  /** Clock, for tests. @default Date.now */
  readonly now?: () => number;
}

interface TokenReviewStatus {
  authenticated?: boolean;
  user?: ReviewedUser;
  error?: string;
}

interface SubjectAccessReviewStatus {
  allowed?: boolean;
  denied?: boolean;
  reason?: string;
  evaluationError?: string;
}

/** Answers that expire; a pending answer is shared by everyone asking for the same key meanwhile. */
class ExpiringCache<V> {
  private readonly entries = new Map<string, { value: Promise<V>; expires: number }>();

  constructor(
    private readonly maxEntries: number,
    private readonly now: () => number,
  ) {}

  /** The cached answer for `key`, or `compute()`'s, kept for `ttl(answer)` ms; a failure is not kept. */
  get(key: string, compute: () => Promise<V>, ttl: (value: V) => number): Promise<V> {
    const now = this.now();
    const hit = this.entries.get(key);
    if (hit && hit.expires > now) return hit.value;
    if (hit) this.entries.delete(key);
    const entry = { value: compute(), expires: Number.POSITIVE_INFINITY };
    this.entries.set(key, entry);
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.maxEntries) break;
      this.entries.delete(oldest);
    }
    entry.value.then(
      (v) => (entry.expires = this.now() + ttl(v)),
      () => {
        if (this.entries.get(key) === entry) this.entries.delete(key);
      },
    );
    return entry.value;
  }

  get size(): number {
    return this.entries.size;
  }
}

const TOKEN_REVIEWS = '/apis/authentication.k8s.io/v1/tokenreviews';
const SUBJECT_ACCESS_REVIEWS = '/apis/authorization.k8s.io/v1/subjectaccessreviews';

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  const m = /^bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m?.[1];
}

/**
 * Authenticates and authorizes requests to the metrics endpoint through the API server. The operator's
 * identity needs `create` on tokenreviews and subjectaccessreviews; a scraper needs `get` on the
 * non-resource URL `/metrics` (the bundle's `<name>-metrics-reader` ClusterRole).
 */
export class MetricsAuthorizer {
  private readonly tokens: ExpiringCache<TokenReviewStatus>;
  private readonly decisions: ExpiringCache<SubjectAccessReviewStatus>;
  private readonly authenticationTtlMs: number;
  private readonly allowTtlMs: number;
  private readonly denyTtlMs: number;

  constructor(
    private readonly client: ReviewClient,
    opts: MetricsAuthOptions = {},
  ) {
    const now = opts.now ?? Date.now;
    const max = opts.maxEntries ?? 1024;
    this.tokens = new ExpiringCache(max, now);
    this.decisions = new ExpiringCache(max, now);
    this.authenticationTtlMs = opts.authenticationTtlMs ?? 60_000;
    this.allowTtlMs = opts.allowTtlMs ?? 300_000;
    this.denyTtlMs = opts.denyTtlMs ?? 30_000;
  }

  /**
   * The decision for a request with this Authorization header, HTTP method and path: 401 without a
   * bearer token or with one the API server does not authenticate, 403 when the user may not `verb`
   * the path, 500 when a review could not be made (the API server unreachable); as controller-runtime.
   */
  async decide(authorization: string | undefined, method: string, path: string): Promise<AuthDecision> {
    const token = bearerToken(authorization);
    if (!token) return { allowed: false, status: 401, message: 'Unauthorized', reason: 'no bearer token' };
    let review: TokenReviewStatus;
    try {
      const key = createHash('sha256').update(token).digest('base64');
      review = await this.tokens.get(
        key,
        () => this.reviewToken(token),
        () => this.authenticationTtlMs,
      );
    } catch (e) {
      return { allowed: false, status: 500, message: 'Authentication failed', reason: (e as Error).message };
    }
    if (!review.authenticated || !review.user?.username) {
      return { allowed: false, status: 401, message: 'Unauthorized', reason: review.error ?? 'token not authenticated' };
    }
    const user = review.user;
    const verb = method.toLowerCase();
    let decision: SubjectAccessReviewStatus;
    try {
      const key = JSON.stringify([user.username, user.uid, user.groups, user.extra, verb, path]);
      decision = await this.decisions.get(
        key,
        () => this.reviewAccess(user, verb, path),
        (d) => (d.allowed ? this.allowTtlMs : this.denyTtlMs),
      );
    } catch (e) {
      return { allowed: false, status: 500, message: `Authorization for user ${user.username} failed`, reason: (e as Error).message };
    }
    if (!decision.allowed) {
      const reason = decision.reason || decision.evaluationError || 'no RBAC rule allows it';
      return { allowed: false, status: 403, message: `Authorization denied for user ${user.username}`, reason };
    }
    return { allowed: true, user: user.username };
  }

  /** Reviews kept (tokens, decisions), for tests. */
  get cached(): { tokens: number; decisions: number } {
    return { tokens: this.tokens.size, decisions: this.decisions.size };
  }

  private async reviewToken(token: string): Promise<TokenReviewStatus> {
    const body = { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } };
    const answer = await this.client.request<{ status?: TokenReviewStatus }>('POST', TOKEN_REVIEWS, { body });
    return answer.status ?? {};
  }

  private async reviewAccess(user: ReviewedUser, verb: string, path: string): Promise<SubjectAccessReviewStatus> {
    const body = {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: { user: user.username, uid: user.uid, groups: user.groups, extra: user.extra, nonResourceAttributes: { path, verb } },
    };
    const answer = await this.client.request<{ status?: SubjectAccessReviewStatus }>('POST', SUBJECT_ACCESS_REVIEWS, { body });
    return answer.status ?? {};
  }
}
