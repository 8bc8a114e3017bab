import { describe, expect, test } from '@jest/globals';
import { ConfigError } from 'appkind-operator/kinds';
import { applyFlags, USAGE } from '../../operator/flags.js';
import { loadSettings } from '../../operator/settings.js';

describe('operator flags', () => {
  test('flags set the same settings as the environment, and win over it', () => {
    const { env, help } = applyFlags(['--namespace', 'a', '--namespace', 'b,c', '--workers', '4', '--field-manager', 'me', '--log-level', 'debug'], { WORKERS: '1', LOG_LEVEL: 'warn' });
    expect(help).toBe(false);
    const settings = loadSettings(env);
    expect(settings).toMatchObject({ namespaces: ['a', 'b', 'c'], workers: 4, fieldManager: 'me', logLevel: 'debug' });
  });

  test('DEGRADED_RETRY_SECONDS: 60 by default, from 1 to 3600, anything else names the setting', () => {
    expect(loadSettings({}).degradedRetrySeconds).toBe(60);
    expect(loadSettings({ DEGRADED_RETRY_SECONDS: '5' }).degradedRetrySeconds).toBe(5);
    expect(() => loadSettings({ DEGRADED_RETRY_SECONDS: '0' })).toThrow(/DEGRADED_RETRY_SECONDS="0" is not an integer from 1 to 3600/);
    expect(() => loadSettings({ DEGRADED_RETRY_SECONDS: '1.5' })).toThrow(ConfigError);
  });

  test('no flags leave the environment as it is', () => {
    expect(applyFlags([], { WORKERS: '3' }).env).toEqual({ WORKERS: '3' });
  });

  test('an unknown flag is an error that names it and shows the usage', () => {
    expect(() => applyFlags(['--worker', '2'], {})).toThrow(ConfigError);
    expect(() => applyFlags(['--worker', '2'], {})).toThrow(/--worker/);
    expect(USAGE).toContain('--workers');
  });

  test('--help', () => {
    expect(applyFlags(['--help'], {}).help).toBe(true);
  });
});
