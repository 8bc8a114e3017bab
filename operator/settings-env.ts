// Settings variables carry one prefix, APPKIND_ (WORKERS, VERSION or LOG_LEVEL alone collide with CI
// systems and base images). The names of earlier releases are still read, each with a deprecation
// warning, so an existing install keeps working until it is edited.

/** The prefix of every setting but the walkthrough's six kind variables. */
export const SETTINGS_PREFIX = 'APPKIND_';

/** Settings read under APPKIND_<name>, and under <name> (deprecated) when the prefixed one is unset. */
export const PREFIXED_SETTINGS = [
  // The operator process (operator/settings.ts, operator/flags.ts).
  'WATCH_NAMESPACE',
  'WORKERS',
  'STATUS_INTERVAL_MS',
  'FIELD_MANAGER',
  'LOG_LEVEL',
  'METRICS_PORT',
  'HEALTH_PORT',
  'LEADER_ELECT',
  'LEASE_NAME',
  'LEASE_NAMESPACE',
  'LEASE_DURATION_SECONDS',
  'RENEW_DEADLINE_SECONDS',
  'RETRY_PERIOD_SECONDS',
  'POD_NAME',
  'POD_NAMESPACE',
  'SHUTDOWN_GRACE_SECONDS',
  'WATCH_STALE_SECONDS',
  'DEGRADED_RETRY_SECONDS',
  // A kind from the environment, beyond the six walkthrough variables (operator/kinds/sources.ts).
  'PLURAL',
  'SHORTNAMES',
  'MAXSIZE',
  'ALLOWED_IMAGES',
  'RUN_AS_NON_ROOT',
  'RUN_AS_USER',
  'READ_ONLY_ROOT_FILESYSTEM',
  'KIND_SETTINGS',
  'DOMAIN',
  // The install bundle `npx cdk8s synth` and `npm run release` write (main.ts, scripts/release.ts).
  'OPERATOR_IMAGE',
  'OPERATOR_NAMESPACE',
] as const;

export type PrefixedSetting = (typeof PREFIXED_SETTINGS)[number];

/** `APPKIND_WORKERS` for `WORKERS`. */
export const prefixed = (name: PrefixedSetting): string => `${SETTINGS_PREFIX}${name}`;

/** The environment with every old name copied to its APPKIND_ name, and one warning per old name set. */
export interface PrefixedEnv {
  readonly env: NodeJS.ProcessEnv;
  readonly deprecations: string[];
}

/**
 * Copies each deprecated unprefixed setting to its APPKIND_ name when that is unset; the prefixed name
 * wins when both are set. Everything downstream reads the APPKIND_ names only.
 */
export function withPrefixedSettings(env: NodeJS.ProcessEnv): PrefixedEnv {
  const out: NodeJS.ProcessEnv = { ...env };
  const deprecations: string[] = [];
  for (const name of PREFIXED_SETTINGS) {
    const old = env[name];
    if (old === undefined || old === '') continue;
    const now = prefixed(name);
    if (env[now] !== undefined && env[now] !== '') {
      deprecations.push(`${name} is deprecated and ignored here: ${now} is set too; unset ${name}`);
    } else {
      out[now] = old;
      deprecations.push(`${name} is deprecated; it is read as ${now} for now: rename it to ${now}`);
    }
  }
  return { env: out, deprecations };
}
