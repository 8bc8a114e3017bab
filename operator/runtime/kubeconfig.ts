// Where the API server is and how to authenticate to it: the kubeconfig (KUBECONFIG, ~/.kube/config)
// or the pod's ServiceAccount, in the order client-node's KubeConfig.loadFromDefault looks for them.
// The usual cases (a token, a token file, a client certificate, basic auth; CA file or data;
// insecure-skip-tls-verify, tls-server-name; the in-cluster ServiceAccount) are read here. Anything
// else (exec and auth-provider plugins, impersonation, proxy-url, several files in KUBECONFIG, a key
// this loader does not know) is handed to client-node's KubeConfig, imported only then: importing
// client-node loads its generated API models, about 90 MiB of RSS the operator does not otherwise use.
import { existsSync, readFileSync } from 'node:fs';
import type { RequestOptions } from 'node:https';
import { isIPv6 } from 'node:net';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import { parse as parseYaml } from 'yaml';

/** The API server of the current context. */
export interface ClusterEndpoint {
  readonly server: string;
  readonly proxyUrl?: string;
}

/**
 * What the REST client reads of a kubeconfig; client-node's KubeConfig has the same two methods,
 * so tests and tools pass theirs.
 */
export interface KubeAccess {
  getCurrentCluster(): ClusterEndpoint | null;
  /** CA, client certificate and auth header into `opts`, read anew at each call (a rotated token file). */
  applyToHTTPSOptions(opts: RequestOptions): Promise<void>;
}

export const SERVICEACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

interface Cluster extends ClusterEndpoint {
  readonly caFile?: string;
  readonly caData?: string;
  readonly skipTLSVerify?: boolean;
  readonly tlsServerName?: string;
}

interface User {
  readonly token?: string;
  readonly tokenFile?: string;
  readonly certFile?: string;
  readonly certData?: string;
  readonly keyFile?: string;
  readonly keyData?: string;
  readonly username?: string;
  readonly password?: string;
}

/** The fields of a kubeconfig cluster and user this loader understands; any other one goes to client-node. */
const CLUSTER_KEYS = new Set([
  'server',
  'certificate-authority',
  'certificate-authority-data',
  'insecure-skip-tls-verify',
  'tls-server-name',
  'extensions',
]);
const USER_KEYS = new Set([
  'token',
  'tokenFile',
  'token-file',
  'client-certificate',
  'client-certificate-data',
  'client-key',
  'client-key-data',
  'username',
  'password',
  'extensions',
]);

/** One context's cluster and user, read from a kubeconfig file or the pod's ServiceAccount. */
export class SimpleKubeConfig implements KubeAccess {
  constructor(
    private readonly cluster: Cluster,
    private readonly user: User,
    /** Where this came from, for logs: a file path or `in-cluster`. */
    readonly source: string,
  ) {}

  getCurrentCluster(): ClusterEndpoint {
    return { server: this.cluster.server };
  }

  async applyToHTTPSOptions(opts: RequestOptions): Promise<void> {
    const { cluster, user } = this;
    if (cluster.skipTLSVerify) opts.rejectUnauthorized = false;
    if (cluster.tlsServerName) opts.servername = cluster.tlsServerName;
    const ca = bytes(cluster.caFile, cluster.caData);
    if (ca) opts.ca = ca;
    const cert = bytes(user.certFile, user.certData);
    if (cert) opts.cert = cert;
    const key = bytes(user.keyFile, user.keyData);
    if (key) opts.key = key;
    const headers = (opts.headers ??= {}) as Record<string, string>;
    const token = user.tokenFile ? readFileSync(user.tokenFile, 'utf8').trim() : user.token;
    if (token) headers.Authorization = `Bearer ${token}`;
    if (user.username) opts.auth = `${user.username}:${user.password ?? ''}`;
  }
}

function bytes(file: string | undefined, data: string | undefined): Buffer | undefined {
  if (file) return readFileSync(file);
  if (data) return Buffer.from(data, 'base64');
  return undefined;
}

/** Thrown for a kubeconfig this loader leaves to client-node. */
class NotSimple extends Error {}

type Named<K extends string> = { name?: string } & { [key in K]?: Record<string, unknown> | null };

/**
 * The current context of one kubeconfig file, or undefined when it uses something only client-node
 * handles. Relative file paths are relative to the file, as kubectl has them.
 */
export function simpleKubeConfigFromFile(file: string): SimpleKubeConfig | undefined {
  try {
    return fromYaml(readFileSync(file, 'utf8'), file);
  } catch (e) {
    if (e instanceof NotSimple) return undefined;
    throw e;
  }
}

function fromYaml(text: string, file: string): SimpleKubeConfig {
  const config = (parseYaml(text) ?? {}) as {
    'current-context'?: string;
    contexts?: Named<'context'>[];
    clusters?: Named<'cluster'>[];
    users?: Named<'user'>[];
  };
  const find = <K extends string>(list: Named<K>[] | undefined, name: unknown, field: K): Record<string, unknown> => {
    const found = list?.find((e) => e.name === name)?.[field];
    if (!found) throw new NotSimple(); // no current context, cluster or user: client-node says what is missing
    return found;
  };
  const context = find(config.contexts, config['current-context'], 'context');
  const cluster = find(config.clusters, context.cluster, 'cluster');
  const user = config.users?.find((u) => u.name === context.user)?.user ?? {};
  if (typeof cluster.server !== 'string') throw new NotSimple();
  if (Object.keys(cluster).some((k) => !CLUSTER_KEYS.has(k)) || Object.keys(user).some((k) => !USER_KEYS.has(k))) throw new NotSimple();
  const dir = dirname(file);
  const path = (p: unknown): string | undefined => (typeof p === 'string' && p ? (isAbsolute(p) ? p : join(dir, p)) : undefined);
  const str = (s: unknown): string | undefined => (typeof s === 'string' && s ? s : undefined);
  return new SimpleKubeConfig(
    {
      server: cluster.server.replace(/\/$/, ''),
      caFile: path(cluster['certificate-authority']),
      caData: str(cluster['certificate-authority-data']),
      skipTLSVerify: cluster['insecure-skip-tls-verify'] === true,
      tlsServerName: str(cluster['tls-server-name']),
    },
    {
      token: str(user.token),
      tokenFile: path(user.tokenFile ?? user['token-file']),
      certFile: path(user['client-certificate']),
      certData: str(user['client-certificate-data']),
      keyFile: path(user['client-key']),
      keyData: str(user['client-key-data']),
      username: str(user.username),
      password: str(user.password),
    },
    file,
  );
}

/** The pod's ServiceAccount: its token (read again at each credential check, as it is rotated) and CA. */
export function inClusterConfig(env: NodeJS.ProcessEnv = process.env, dir = SERVICEACCOUNT_DIR): SimpleKubeConfig {
  const host = env.KUBERNETES_SERVICE_HOST ?? '';
  const port = env.KUBERNETES_SERVICE_PORT ?? '';
  const scheme = ['80', '8080', '8001'].includes(port) ? 'http' : 'https';
  return new SimpleKubeConfig(
    { server: `${scheme}://${isIPv6(host) ? `[${host}]` : host}:${port}`, caFile: join(dir, 'ca.crt') },
    { tokenFile: join(dir, 'token') },
    'in-cluster',
  );
}

/**
 * The kubeconfig as client-node's `KubeConfig.loadFromDefault()` finds it (KUBECONFIG, else
 * ~/.kube/config, else the pod's ServiceAccount, else http://localhost:8080), read by this module
 * when it can be and by client-node otherwise.
 */
export async function loadKubeAccess(env: NodeJS.ProcessEnv = process.env): Promise<KubeAccess> {
  const files = (env.KUBECONFIG ?? '').split(delimiter).filter(Boolean);
  const home = env.HOME ? join(env.HOME, '.kube', 'config') : undefined;
  let simple: SimpleKubeConfig | undefined;
  if (files.length === 1) simple = simpleKubeConfigFromFile(files[0]!);
  else if (files.length === 0 && home && existsSync(home)) simple = simpleKubeConfigFromFile(home);
  else if (files.length === 0 && existsSync(join(SERVICEACCOUNT_DIR, 'token'))) simple = inClusterConfig(env);
  else if (files.length === 0) simple = new SimpleKubeConfig({ server: 'http://localhost:8080' }, {}, 'default');
  if (simple) return simple;
  // KUBECONFIG's files, merged as loadFromDefault merges them, or ~/.kube/config.
  const { KubeConfig } = await import('@kubernetes/client-node');
  const [first, ...more] = files.length ? files : [home!];
  const kc = new KubeConfig();
  kc.loadFromFile(first!);
  for (const file of more) {
    const next = new KubeConfig();
    next.loadFromFile(file);
    kc.mergeConfig(next);
  }
  return kc;
}
