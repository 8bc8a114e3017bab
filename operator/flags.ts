import { parseArgs } from 'node:util';
import { ConfigError } from './kinds/config.js';
import { DEFAULT_HEALTH_PORT, DEFAULT_METRICS_PORT, DEFAULT_WORKERS } from './settings.js';

/** Command-line flags and the environment variables they set (a flag wins over the variable). */
const FLAGS = {
  config: { env: 'APPKIND_CONFIG', help: 'YAML/JSON file listing the kinds' },
  namespace: { env: 'APPKIND_WATCH_NAMESPACE', help: 'namespace to watch (repeat or comma-separate; default all)' },
  workers: { env: 'APPKIND_WORKERS', help: `parallel reconciles (default ${DEFAULT_WORKERS})` },
  'field-manager': { env: 'APPKIND_FIELD_MANAGER', help: 'server-side apply field manager (default appkind-operator)' },
  'log-level': { env: 'APPKIND_LOG_LEVEL', help: 'debug, info, warn or error (default info)' },
  'leader-elect': { env: 'APPKIND_LEADER_ELECT', help: 'true to elect a leader on a Lease (default false)' },
  'metrics-port': { env: 'APPKIND_METRICS_PORT', help: `port for /metrics (default ${DEFAULT_METRICS_PORT}; 0 any, -1 off)` },
  'metrics-secure': {
    env: 'APPKIND_METRICS_SECURE',
    help: 'false: plain HTTP /metrics without authentication (default true: HTTPS, TokenReview + SubjectAccessReview)',
  },
  'metrics-cert-dir': {
    env: 'APPKIND_METRICS_CERT_DIR',
    help: 'folder with tls.crt and tls.key for /metrics (default a self-signed certificate)',
  },
  'health-port': {
    env: 'APPKIND_HEALTH_PORT',
    help: `port for /healthz and /readyz, plain HTTP (default ${DEFAULT_HEALTH_PORT}; 0 any, -1 off)`,
  },
} as const;

export const USAGE = [
  'Usage: appkind-operator [flags]   (npm run operator -- [flags])',
  'Every flag can also be set through the environment variable in brackets.',
  ...Object.entries(FLAGS).map(([flag, f]) => `  --${flag.padEnd(16)} ${f.help} [${f.env}]`),
  '  --help             this text',
].join('\n');

/**
 * The environment with the flags applied on top, or `help: true`. Unknown flags are a ConfigError
 * naming the flag, so a typo never silently falls back to a default.
 */
export function applyFlags(argv: string[], env: NodeJS.ProcessEnv): { env: NodeJS.ProcessEnv; help: boolean } {
  const options = Object.fromEntries(Object.keys(FLAGS).map((flag) => [flag, { type: 'string' as const, multiple: flag === 'namespace' }]));
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: { ...options, help: { type: 'boolean' } }, strict: true, allowPositionals: false });
  } catch (e) {
    throw new ConfigError(`${(e as Error).message}\n${USAGE}`);
  }
  const out: NodeJS.ProcessEnv = { ...env };
  for (const [flag, { env: name }] of Object.entries(FLAGS)) {
    const value = (parsed.values as Record<string, string | string[] | undefined>)[flag];
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(',') : value;
  }
  return { env: out, help: parsed.values.help === true };
}
