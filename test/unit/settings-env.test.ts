import { describe, expect, test } from '@jest/globals';
import { kindFromEnv, loadAppKinds, watchNamespaces } from 'appkind-operator/kinds';
import { loadSettings, PREFIXED_SETTINGS, withPrefixedSettings } from '../../operator/settings.js';

const WALKTHROUGH = { GROUPNAME: 'swallowlab', VERSION: 'v1alpha1', CRKIND: 'EchoFlask', IMAGENAME: 'takeyan/flask:0.0.3', CLUSTERPORT: '5000', APPNAME: 'echoflask' };

describe('settings under one prefix, APPKIND_', () => {
  test('every operator setting is read under its APPKIND_ name, with no warning', () => {
    const s = loadSettings({ APPKIND_WORKERS: '3', APPKIND_LOG_LEVEL: 'debug', APPKIND_WATCH_NAMESPACE: 'a,b', APPKIND_POD_NAME: 'p', APPKIND_POD_NAMESPACE: 'ops' });
    expect(s).toMatchObject({ workers: 3, logLevel: 'debug', namespaces: ['a', 'b'], identity: 'p', leaseNamespace: 'ops' });
    expect(s.deprecations).toEqual([]);
  });

  test('an old unprefixed name still works, with a warning naming the new name', () => {
    const s = loadSettings({ WORKERS: '3', LEASE_DURATION_SECONDS: '30' });
    expect(s).toMatchObject({ workers: 3, leaseDurationSeconds: 30 });
    expect(s.deprecations).toEqual([
      'WORKERS is deprecated; it is read as APPKIND_WORKERS for now: rename it to APPKIND_WORKERS',
      'LEASE_DURATION_SECONDS is deprecated; it is read as APPKIND_LEASE_DURATION_SECONDS for now: rename it to APPKIND_LEASE_DURATION_SECONDS',
    ]);
  });

  test('the prefixed name wins when both are set, and the old one is reported as ignored', () => {
    const s = loadSettings({ WORKERS: '3', APPKIND_WORKERS: '5' });
    expect(s.workers).toBe(5);
    expect(s.deprecations).toEqual(['WORKERS is deprecated and ignored here: APPKIND_WORKERS is set too; unset WORKERS']);
  });

  test('an error names the prefixed variable', () => {
    expect(() => loadSettings({ APPKIND_WORKERS: 'many' })).toThrow(/APPKIND_WORKERS="many" is not an integer/);
  });

  test('the six walkthrough variables and APPKIND_CONFIG keep their names; a kind setting beyond them has the prefix, the old name still read', () => {
    expect(PREFIXED_SETTINGS).not.toEqual(expect.arrayContaining(['GROUPNAME']));
    for (const v of Object.keys(WALKTHROUGH)) expect(PREFIXED_SETTINGS as readonly string[]).not.toContain(v);
    expect(kindFromEnv({ ...WALKTHROUGH, APPKIND_MAXSIZE: '7' })?.maxSize).toBe(7);
    expect(kindFromEnv({ ...WALKTHROUGH, MAXSIZE: '7' })?.maxSize).toBe(7);
    expect(withPrefixedSettings({ ...WALKTHROUGH, MAXSIZE: '7' }).deprecations).toEqual([expect.stringMatching(/^MAXSIZE is deprecated/)]);
    expect(loadAppKinds({ ...WALKTHROUGH, DOMAIN: 'example.org' })[0]!.group).toBe('swallowlab.example.org');
    expect(watchNamespaces({ WATCH_NAMESPACE: 'x' })).toEqual(['x']);
  });
});
