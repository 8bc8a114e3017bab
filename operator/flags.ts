// The operator's command line: flags that set the settings' environment variables, and the usage text.
import { parseArgs } from 'node:util';
import { ConfigError } from './kinds/validate.js';
import { OPERATOR_SETTINGS, SettingRow } from 'cdk8s-appkind/build/operator-settings.js';

/** Command-line flags and the environment variables they set (a flag wins over the variable), from the settings table. */
const FLAGS: Record<string, SettingRow & { readonly default?: unknown }> = Object.fromEntries(
  Object.values(OPERATOR_SETTINGS as Record<string, SettingRow>)
    .filter((row) => row.flag)
    .map((row) => [row.flag!, row]),
);

/** A flag's line of help: the table's words, and its default when it has one. */
const helpOf = (row: SettingRow & { readonly default?: unknown }) =>
  row.default === undefined ? row.help : `${row.help} (default ${String(row.default)})`;

export const USAGE = [
  'Usage: appkind-operator [flags]   (npm run operator -- [flags])',
  'Every flag can also be set through the environment variable in brackets.',
  ...Object.entries(FLAGS).map(([flag, f]) => `  --${flag.padEnd(16)} ${helpOf(f)} [${f.env}]`),
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
