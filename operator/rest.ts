import { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { request as httpsRequest, RequestOptions } from 'node:https';
import { request as httpRequest } from 'node:http';

/** The body as JSON; a plain-text body (`404 page not found`) as its message. */
function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return { message: text.trim() };
  }
}

/** A request the API server answered with an error Status. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(readonly code: number, readonly reason: string, message: string, readonly verb: string, readonly path: string) {
    super(message);
  }
}

export interface RequestOpts {
  readonly query?: Record<string, string | number | boolean | undefined>;
  readonly body?: unknown;
  readonly contentType?: string;
}

export const APPLY_PATCH = 'application/apply-patch+yaml';
export const MERGE_PATCH = 'application/merge-patch+json';

interface Resource {
  readonly name: string;
  readonly namespaced: boolean;
}

/**
 * A small JSON client for the API server. client-node's typed serializer drops fields whose JSON
 * name differs from its model's (`default`, `x-kubernetes-*` in CRD schemas) and turns timestamps
 * into Dates; the reconciler needs objects exactly as the server and render() spell them.
 */
export class RestClient {
  private readonly server: string;
  private readonly discovery = new Map<string, Promise<Resource[]>>();

  constructor(private readonly kc: KubeConfig, private readonly onRequest: (verb: string, code: number) => void = () => undefined) {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster; set KUBECONFIG or run in a cluster');
    this.server = cluster.server.replace(/\/$/, '');
  }

  async request<T>(method: string, path: string, opts: RequestOpts = {}): Promise<T> {
    const url = new URL(this.server + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const options: RequestOptions = { method, headers: { Accept: 'application/json' } };
    await this.kc.applyToHTTPSOptions(options);
    options.headers = { ...options.headers, ...(body !== undefined ? { 'Content-Type': opts.contentType ?? 'application/json', 'Content-Length': Buffer.byteLength(body) } : {}) };
    const send = url.protocol === 'http:' ? httpRequest : httpsRequest;
    const { code, text } = await new Promise<{ code: number; text: string }>((resolve, reject) => {
      const req = send(url, options, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ code: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.setTimeout(60_000, () => req.destroy(new Error(`${method} ${path}: no answer within 60 s`)));
      req.end(body);
    }).catch((e: Error) => {
      this.onRequest(method, 0);
      throw new ApiError(0, 'ConnectionFailed', `${method} ${path}: ${e.message}`, method, path);
    });
    this.onRequest(method, code);
    const parsed = parseJson(text);
    if (code >= 200 && code < 300) return parsed as T;
    const status = (parsed ?? {}) as { reason?: string; message?: string };
    throw new ApiError(code, status.reason ?? 'Unknown', status.message ?? (text || `HTTP ${code}`), method, path);
  }

  /** URL path of a collection or, with a name, of one object; resource names come from discovery. */
  async path(apiVersion: string, kind: string, namespace?: string, name?: string): Promise<string> {
    const resource = (await this.resources(apiVersion)).find((r) => r.kind === kind);
    if (!resource) throw new ApiError(404, 'NotFound', `the server does not serve ${kind} in ${apiVersion}; is its CRD installed?`, 'GET', apiVersion);
    const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    const ns = resource.namespaced && namespace ? `/namespaces/${namespace}` : '';
    return `${base}${ns}/${resource.name}${name ? `/${name}` : ''}`;
  }

  private async resources(apiVersion: string): Promise<(Resource & { kind: string })[]> {
    let found = this.discovery.get(apiVersion);
    if (!found) {
      const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
      found = this.discover(base);
      found.catch(() => this.discovery.delete(apiVersion));
      this.discovery.set(apiVersion, found);
    }
    return (await found) as (Resource & { kind: string })[];
  }

  /** A group version's resources; a CRD established a moment ago may need a few tries to appear. */
  private async discover(base: string): Promise<(Resource & { kind: string })[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        const list = await this.request<{ resources: (Resource & { kind: string })[] }>('GET', base);
        return list.resources.filter((x) => !x.name.includes('/'));
      } catch (e) {
        if (!(e instanceof ApiError) || e.code !== 404 || attempt >= 10) throw e;
        await new Promise((r) => setTimeout(r, 300));
      }
    }
  }

  /** Server-side apply under `fieldManager`, taking over conflicting fields. */
  async apply<T extends KubernetesObject>(obj: T, fieldManager: string): Promise<T> {
    const body = { ...obj, metadata: { ...obj.metadata } };
    // managedFields and a stale resourceVersion in an apply body are rejected or cause conflicts.
    delete body.metadata.managedFields;
    delete body.metadata.resourceVersion;
    const path = await this.path(obj.apiVersion!, obj.kind!, obj.metadata?.namespace, obj.metadata?.name);
    return this.request<T>('PATCH', path, { body, contentType: APPLY_PATCH, query: { fieldManager, force: true } });
  }

  /** The live object, or undefined when it does not exist. */
  async get<T extends KubernetesObject>(ref: KubernetesObject): Promise<T | undefined> {
    try {
      return await this.request<T>('GET', await this.path(ref.apiVersion!, ref.kind!, ref.metadata?.namespace, ref.metadata?.name));
    } catch (e) {
      if (e instanceof ApiError && e.code === 404) return undefined;
      throw e;
    }
  }

  /** Deletes an object; only the exact object (uid precondition) when it carries a uid. */
  async delete(obj: KubernetesObject): Promise<void> {
    const path = await this.path(obj.apiVersion!, obj.kind!, obj.metadata?.namespace, obj.metadata?.name);
    const uid = obj.metadata?.uid;
    await this.request('DELETE', path, { body: { propagationPolicy: 'Background', ...(uid ? { preconditions: { uid } } : {}) } });
  }

  /** Objects of a kind (one namespace or all), with the list's resourceVersion. */
  async list<T extends KubernetesObject>(apiVersion: string, kind: string, namespace?: string, labelSelector?: string): Promise<{ items: T[]; resourceVersion?: string }> {
    const list = await this.request<{ items: T[]; metadata?: { resourceVersion?: string } }>('GET', await this.path(apiVersion, kind, namespace), { query: { labelSelector } });
    return { items: list.items.map((i) => ({ ...i, apiVersion, kind })), resourceVersion: list.metadata?.resourceVersion };
  }

  /** JSON merge patch of an object's status subresource. */
  async patchStatus(obj: KubernetesObject, status: unknown): Promise<void> {
    const path = await this.path(obj.apiVersion!, obj.kind!, obj.metadata?.namespace, obj.metadata?.name);
    await this.request('PATCH', `${path}/status`, { body: { status }, contentType: MERGE_PATCH });
  }
}
