// The env OperatorBundle writes, read by the operator's own settings loader: every value it sets
// arrives as it was given, and what it leaves to the defaults is what a local run gets.
import { afterAll, describe, expect, it } from '@jest/globals';
import { Chart, Testing } from 'cdk8s';
import { AppKind, LogLevel, OperatorBundle, OperatorBundleProps } from 'cdk8s-appkind';
import { OPERATOR_SETTINGS } from 'cdk8s-appkind/build/operator-settings.js';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { loadSettings, OperatorSettings } from '../../operator/settings.js';
import { USAGE } from '../../operator/flags.js';

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string } };
}
interface Manifest {
  kind: string;
  data?: Record<string, string>;
  spec?: { template?: { spec: { containers: { env: EnvVar[] }[] } } };
}

const TAKARA: AppKind = { group: 'maho.takara.org', version: 'v1alpha1', kind: 'Takara', plural: 'takaras', image: 'memcached:1.6', port: 11211, appName: 'takara' };
const dir = mkdtempSync(join(tmpdir(), 'settings-bundle-'));
afterAll(() => rmSync(dir, { recursive: true }));

/** What the kubelet would give the operator container: the bundle's env with the pod fields filled in. */
function bundleEnv(props: Partial<OperatorBundleProps> = {}): { env: Record<string, string>; kindsFile: string } {
  const chart = new Chart(Testing.app(), 'bundle');
  new OperatorBundle(chart, 'operator', { kinds: [SAMPLE_KIND, TAKARA], ...props });
  const objs = Testing.synth(chart) as Manifest[];
  const pod = { 'metadata.name': 'appkind-operator-7d9f-abcde', 'metadata.namespace': props.namespace ?? 'appkind-system' } as Record<string, string>;
  const env: Record<string, string> = {};
  for (const v of objs.find((o) => o.kind === 'Deployment')!.spec!.template!.spec.containers[0]!.env) {
    const field = v.valueFrom?.fieldRef?.fieldPath;
    env[v.name] = field ? pod[field]! : v.value!;
  }
  // The kinds file is the ConfigMap the Deployment mounts at APPKIND_CONFIG; here it is written to a temporary folder.
  const kindsFile = join(dir, `kinds-${Object.keys(props).length}.yaml`);
  writeFileSync(kindsFile, objs.find((o) => o.kind === 'ConfigMap')!.data!['kinds.yaml']!);
  return { env, kindsFile };
}

const load = ({ env, kindsFile }: ReturnType<typeof bundleEnv>): OperatorSettings => loadSettings({ ...env, APPKIND_CONFIG: kindsFile });

describe('the settings table', () => {
  it('every variable the bundle writes is a setting the operator reads', () => {
    const rows = new Set(Object.values(OPERATOR_SETTINGS).map((row) => row.env));
    const written = Object.keys(bundleEnv({ metricsCertSecret: 'metrics-tls' }).env);
    expect(written.length).toBeGreaterThan(10);
    expect(written.filter((name) => !rows.has(name))).toEqual([]);
  });

  it("the bundle's defaults are the operator's, but for leader election, which it always turns on", () => {
    const bundle = load(bundleEnv());
    const local = loadSettings({});
    expect(bundle.leaderElect).toBe(true);
    expect(local.leaderElect).toBe(false);
    for (const key of ['workers', 'logLevel', 'metricsPort', 'healthPort', 'leaseDurationSeconds', 'renewDeadlineSeconds', 'retryPeriodSeconds', 'shutdownGraceSeconds', 'leaseName', 'metricsSecure'] as const) {
      expect([key, bundle[key]]).toEqual([key, local[key]]);
    }
  });

  it('every value the bundle is given arrives in the operator as given', () => {
    const props = {
      namespace: 'ops',
      name: 'my-operator',
      watchNamespaces: ['team-a', 'team-b'],
      kindGroups: ['apps.example.com', 'team.example.org'],
      workers: 3,
      logLevel: LogLevel.DEBUG,
      leaseDurationSeconds: 30,
      renewDeadlineSeconds: 20,
      retryPeriodSeconds: 5,
      shutdownGraceSeconds: 45,
      metricsCertSecret: 'metrics-tls',
      appKindSelector: 'team in (payments,billing)',
    };
    const settings = load(bundleEnv(props));
    expect(settings).toMatchObject({
      serveAppKinds: true,
      appKindSelector: 'team in (payments,billing)',
      namespaces: ['team-a', 'team-b'],
      kindGroups: ['apps.example.com', 'team.example.org'],
      workers: 3,
      logLevel: 'debug',
      leaderElect: true,
      leaseName: 'my-operator',
      leaseNamespace: 'ops',
      identity: 'appkind-operator-7d9f-abcde',
      leaseDurationSeconds: 30,
      renewDeadlineSeconds: 20,
      retryPeriodSeconds: 5,
      shutdownGraceSeconds: 45,
      metricsPort: OPERATOR_SETTINGS.metricsPort.default,
      healthPort: OPERATOR_SETTINGS.healthPort.default,
      metricsSecure: true,
      metricsCertDir: '/etc/appkind-metrics-cert',
      configMap: { namespace: 'ops', name: 'my-operator-kinds' },
    });
    expect(settings.kinds.map((k) => k.kind)).toEqual([SAMPLE_KIND.kind, 'Takara']);
  });

  it('APPKIND_KIND_GROUPS: none when unset; a Kubernetes group or the AppKind API group is refused naming the variable', () => {
    expect(loadSettings({}).kindGroups).toEqual([]);
    expect(loadSettings({ APPKIND_KIND_GROUPS: ' apps.example.com , ' }).kindGroups).toEqual(['apps.example.com']);
    for (const group of ['apps.k8s.io', 'appkind.io', 'apps']) {
      expect(() => loadSettings({ APPKIND_KIND_GROUPS: group })).toThrow(new RegExp(`^APPKIND_KIND_GROUPS: "${group}" .*; list API groups of your own`));
    }
  });

  it('APPKIND_APPKIND_SELECTOR: every AppKind when unset, none turns AppKinds off, a label selector is kept as written', () => {
    const selection = (env: NodeJS.ProcessEnv) => {
      const { serveAppKinds, appKindSelector } = loadSettings(env);
      return { serveAppKinds, appKindSelector };
    };
    expect(selection({})).toEqual({ serveAppKinds: true, appKindSelector: undefined });
    expect(selection({ APPKIND_APPKIND_SELECTOR: ' ' })).toEqual({ serveAppKinds: true, appKindSelector: undefined });
    expect(selection({ APPKIND_APPKIND_SELECTOR: 'none' })).toEqual({ serveAppKinds: false, appKindSelector: undefined });
    for (const selector of ['team=payments', 'appkind.io/test-namespace==ns-1,tier!=dev', 'team in (a, b),!legacy', 'env notin (dev),canary', 'team=']) {
      expect(selection({ APPKIND_APPKIND_SELECTOR: selector })).toEqual({ serveAppKinds: true, appKindSelector: selector });
    }
    // The bundle writes no variable for the default, and the operator's flag sets it too.
    expect(bundleEnv().env.APPKIND_APPKIND_SELECTOR).toBeUndefined();
    expect(load(bundleEnv({ appKindSelector: 'none' })).serveAppKinds).toBe(false);
    expect(USAGE).toContain('--appkind-selector');
  });

  it('APPKIND_APPKIND_SELECTOR: an invalid selector is refused, naming the variable, the problem and the fix', () => {
    const refused = {
      'team=a=b': 'is none of key=value',
      'team=pay ments': 'is none of key=value',
      'team=a,': 'an empty requirement',
      'team in ()': 'lists no value',
      'team in (a,-b)': 'the value "-b" is not a label value',
      'Team.Example.com/x=y': 'the key prefix "Team.Example.com" is not a DNS subdomain',
      [`${'k'.repeat(64)}=v`]: 'is not a label key',
    };
    for (const [selector, problem] of Object.entries(refused)) {
      expect(() => loadSettings({ APPKIND_APPKIND_SELECTOR: selector })).toThrow(
        `APPKIND_APPKIND_SELECTOR="${selector}" is not a label selector: `,
      );
      expect(() => loadSettings({ APPKIND_APPKIND_SELECTOR: selector })).toThrow(problem);
    }
    expect(() => loadSettings({ APPKIND_APPKIND_SELECTOR: 'team=a,' })).toThrow(/; write one such as team=payments .*none to serve no AppKind, or unset APPKIND_APPKIND_SELECTOR/);
    expect(() => bundleEnv({ appKindSelector: 'team in ()' })).toThrow(/^OperatorBundle: appKindSelector "team in \(\)" is not a label selector: .* lists no value; write one such as team=payments/);
  });

  it('the usage text shows each flag with its variable and the default from the table', () => {
    expect(USAGE).toContain(`--workers          parallel reconciles (default ${OPERATOR_SETTINGS.workers.default}) [APPKIND_WORKERS]`);
    expect(USAGE).toContain(`(default ${OPERATOR_SETTINGS.metricsPort.default}) [APPKIND_METRICS_PORT]`);
    expect(USAGE).toContain('[APPKIND_LEADER_ELECT]');
  });

  it("OperatorBundleProps documents the table's defaults (the @default of its props, as the built assembly records them)", () => {
    const assembly = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'lib', '.jsii'), 'utf8')) as {
      types: Record<string, { properties?: { name: string; docs?: { default?: string } }[] }>;
    };
    const documented = Object.fromEntries(assembly.types['cdk8s-appkind.OperatorBundleProps']!.properties!.map((p) => [p.name, p.docs?.default]));
    for (const key of ['workers', 'leaseDurationSeconds', 'renewDeadlineSeconds', 'retryPeriodSeconds', 'shutdownGraceSeconds'] as const) {
      expect([key, documented[key]]).toEqual([key, String(OPERATOR_SETTINGS[key].default)]);
    }
    expect(documented.logLevel).toBe(`LogLevel.${OPERATOR_SETTINGS.logLevel.default.toUpperCase()}`);
  });
});
