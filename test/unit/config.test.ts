import { describe, expect, test } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, kindFromEnv, kindsFromDocument, kindsFromFile, loadAppKinds, SAMPLE_KIND } from 'appkind-operator/kinds';

const WALKTHROUGH = { IMAGENAME: 'takeyan/flask:0.0.3', CLUSTERPORT: '5000', APPNAME: 'echoflask', VERSION: 'v1alpha1', GROUPNAME: 'swallowlab', CRKIND: 'EchoFlask' };
const TAKARA = { IMAGENAME: 'memcached:1.6-alpine', CLUSTERPORT: '11211', APPNAME: 'takara', VERSION: 'v1alpha1', GROUPNAME: 'maho.takara.org', CRKIND: 'Takara' };

function writeTemp(name: string, text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'appkind-config-')), name);
  writeFileSync(file, text);
  return file;
}

describe('kind configuration', () => {
  test('the six walkthrough variables give the walkthrough kind; GROUPNAME without a dot gets .com', () => {
    expect(kindFromEnv(WALKTHROUGH)).toEqual({ ...SAMPLE_KIND, maxSize: 100 });
  });

  test('a second kind from the six variables', () => {
    expect(kindFromEnv(TAKARA)).toEqual({
      group: 'maho.takara.org', version: 'v1alpha1', kind: 'Takara', plural: 'takaras', image: 'memcached:1.6-alpine', port: 11211, appName: 'takara', maxSize: 100,
    });
  });

  test('APPKIND_ALLOWED_IMAGES (comma-separated) and allowedImages in a file give the kind its image patterns', () => {
    expect(kindFromEnv({ ...WALKTHROUGH, APPKIND_ALLOWED_IMAGES: 'registry.example.com/*, takeyan/flask:*' })?.allowedImages).toEqual(['registry.example.com/*', 'takeyan/flask:*']);
    expect(kindFromEnv(WALKTHROUGH)).not.toHaveProperty('allowedImages');
    const file = writeTemp('kinds.yaml', 'kinds:\n  - {group: a.example.com, version: v1, kind: A, image: "a:1", port: 80, allowedImages: ["a:*"]}\n');
    expect(kindsFromFile(file)[0]!.allowedImages).toEqual(['a:*']);
  });

  test.each([
    [{ APPKIND_ALLOWED_IMAGES: 'reg*/x' }, /environment: APPKIND_ALLOWED_IMAGES has the pattern "reg\*\/x" has a "\*" before its end/],
    [{ APPKIND_ALLOWED_IMAGES: "x'y" }, /APPKIND_ALLOWED_IMAGES has the pattern "x'y" has characters an image reference cannot have/],
  ])('a bad image pattern names the variable: %j', (extra, message) => {
    expect(() => kindFromEnv({ ...WALKTHROUGH, ...extra })).toThrow(message);
  });

  test('short names come from APPKIND_SHORTNAMES (comma-separated) or shortNames in a file; bad or shared ones are refused', () => {
    expect(kindFromEnv({ ...WALKTHROUGH, APPKIND_SHORTNAMES: 'ef, echo' })?.shortNames).toEqual(['ef', 'echo']);
    expect(kindFromEnv(WALKTHROUGH)).not.toHaveProperty('shortNames');
    const file = writeTemp('kinds.yaml', 'kinds:\n  - {group: a.example.com, version: v1, kind: AppOne, image: "a:1", port: 80, shortNames: []}\n');
    expect(kindsFromFile(file)[0]!.shortNames).toEqual([]);
    expect(() => kindFromEnv({ ...WALKTHROUGH, APPKIND_SHORTNAMES: 'Ef' })).toThrow(/environment: APPKIND_SHORTNAMES has "Ef", not a lower-case DNS-1035 label/);
    const twice = writeTemp('kinds.yaml', 'kinds:\n  - {group: a.example.com, version: v1, kind: AppOne, image: "a:1", port: 80}\n  - {group: a.example.com, version: v1, kind: AnotherOne, image: "a:1", port: 80, shortNames: [aone]}\n  - {group: a.example.com, version: v1, kind: AllOut, image: "a:1", port: 80}\n');
    expect(() => kindsFromFile(twice)).toThrow(/kinds AppOne and AllOut both have the short name "ao"; give one of them other shortNames/);
  });

  test('allowedImages that is not a list of strings is refused', () => {
    const file = writeTemp('kinds.yaml', 'kinds:\n  - {group: a.example.com, version: v1, kind: A, image: "a:1", port: 80, allowedImages: [1]}\n');
    expect(() => kindsFromFile(file)).toThrow(/kinds\[0\]: allowedImages must be a list of image patterns/);
  });

  test('pod security settings come from APPKIND_RUN_AS_NON_ROOT, APPKIND_RUN_AS_USER, APPKIND_READ_ONLY_ROOT_FILESYSTEM or the file', () => {
    expect(kindFromEnv({ ...WALKTHROUGH, APPKIND_RUN_AS_NON_ROOT: 'true', APPKIND_RUN_AS_USER: '1000', APPKIND_READ_ONLY_ROOT_FILESYSTEM: 'false' })).toMatchObject({
      runAsNonRoot: true, runAsUser: 1000, readOnlyRootFilesystem: false,
    });
    const file = writeTemp('kinds.yaml', 'kinds:\n  - {group: a.example.com, version: v1, kind: A, image: "a:1", port: 80, runAsNonRoot: true, runAsUser: 65532, readOnlyRootFilesystem: true}\n');
    expect(kindsFromFile(file)[0]).toMatchObject({ runAsNonRoot: true, runAsUser: 65532, readOnlyRootFilesystem: true });
    expect(() => kindFromEnv({ ...WALKTHROUGH, APPKIND_RUN_AS_NON_ROOT: 'yes please' })).toThrow(/environment: APPKIND_RUN_AS_NON_ROOT is "yes please", not true or false/);
    expect(() => kindFromEnv({ ...WALKTHROUGH, APPKIND_RUN_AS_NON_ROOT: 'true', APPKIND_RUN_AS_USER: '0' })).toThrow(/APPKIND_RUN_AS_USER is 0 \(root\) while APPKIND_RUN_AS_NON_ROOT is true/);
    expect(() => kindFromEnv({ ...WALKTHROUGH, APPKIND_RUN_AS_USER: '-1' })).toThrow(/APPKIND_RUN_AS_USER is "-1", not an integer from 0 to 2147483647/);
  });

  test('nothing configured means the sample kind', () => {
    expect(loadAppKinds({})).toEqual([SAMPLE_KIND]);
  });

  test('some but not all six variables is an error that lists the missing ones', () => {
    expect(() => kindFromEnv({ CRKIND: 'Takara', IMAGENAME: 'x' })).toThrow(/CRKIND, IMAGENAME set but GROUPNAME, VERSION, CLUSTERPORT, APPNAME missing/);
  });

  test.each([
    [{ CRKIND: 'takara' }, /CRKIND "takara" is not a valid Kind; use UpperCamelCase/],
    [{ CRKIND: 'Ta-kara' }, /CRKIND "Ta-kara" is not a valid Kind/],
    [{ GROUPNAME: 'Maho_Takara.org' }, /GROUPNAME "Maho_Takara.org" is not a DNS subdomain/],
    [{ CLUSTERPORT: '70000' }, /CLUSTERPORT is "70000", not an integer from 1 to 65535; set CLUSTERPORT/],
    [{ CLUSTERPORT: 'http' }, /CLUSTERPORT is "http"/],
    [{ VERSION: '1.0' }, /VERSION "1.0" is not a Kubernetes API version; use a form like v1/],
    [{ APPNAME: 'Echo Flask' }, /APPNAME "Echo Flask" is not a lower-case DNS label/],
    [{ IMAGENAME: 'a b' }, /IMAGENAME "a b" contains white space/],
  ])('bad setting %j stops with a message naming the variable and the fix', (bad, message) => {
    expect(() => kindFromEnv({ ...TAKARA, ...bad })).toThrow(ConfigError);
    expect(() => kindFromEnv({ ...TAKARA, ...bad })).toThrow(message);
  });

  test('a config file lists several kinds (YAML)', () => {
    const kinds = loadAppKinds({ APPKIND_CONFIG: join(import.meta.dirname, '..', '..', 'examples', 'appkinds.yaml') });
    expect(kinds.map((k) => `${k.kind}.${k.group}/${k.version} ${k.image}:${k.port}`)).toEqual([
      'EchoFlask.swallowlab.com/v1alpha1 takeyan/flask:0.0.3:5000',
      'Takara.maho.takara.org/v1alpha1 memcached:1.6-alpine:11211',
    ]);
  });

  test('the config file wins over the six variables; APPKIND_KINDS carries JSON', () => {
    const file = writeTemp('kinds.json', JSON.stringify({ kinds: [{ group: 'a.example.com', version: 'v1', kind: 'Alpha', image: 'nginx', port: 80 }] }));
    expect(loadAppKinds({ ...TAKARA, APPKIND_CONFIG: file }).map((k) => k.kind)).toEqual(['Alpha']);
    expect(loadAppKinds({ APPKIND_KINDS: JSON.stringify([{ group: 'b.example.com', version: 'v2', kind: 'Beta', image: 'nginx', port: 80, maxSize: 5 }]) }))
      .toEqual([{ group: 'b.example.com', version: 'v2', kind: 'Beta', plural: 'betas', image: 'nginx', port: 80, appName: 'beta', maxSize: 5 }]);
  });

  test('config file mistakes name the file, the entry and the field', () => {
    const bad = writeTemp('bad.yaml', 'kinds:\n  - {group: ok.example.com, version: v1, kind: Good, image: nginx, port: 80}\n  - {group: ok.example.com, version: v1, kind: bad, image: nginx, port: 80}\n');
    expect(() => kindsFromFile(bad)).toThrow(/bad\.yaml kinds\[1\]: kind "bad" is not a valid Kind/);
    const twice = writeTemp('twice.yaml', 'kinds:\n  - {group: a.b.c, version: v1, kind: Same, image: x, port: 1}\n  - {group: a.b.c, version: v1, kind: Same, image: y, port: 2}\n');
    expect(() => kindsFromFile(twice)).toThrow(/kind Same \(sames.a.b.c\) is listed twice/);
    const sameKind = writeTemp('same.yaml', 'kinds:\n  - {group: a.example.com, version: v1, kind: Web, image: x, port: 1}\n  - {group: b.example.com, version: v1, kind: Web, image: y, port: 2}\n');
    expect(() => kindsFromFile(sameKind)).toThrow(/two kinds are named Web; give each kind its own name/);
    expect(() => kindsFromFile(writeTemp('empty.yaml', 'kinds: []\n'))).toThrow(/no kinds/);
    expect(() => kindsFromFile('/nonexistent/appkinds.yaml')).toThrow(/APPKIND_CONFIG: cannot read \/nonexistent\/appkinds.yaml/);
    expect(() => loadAppKinds({ APPKIND_KINDS: '{not json' })).toThrow(/APPKIND_KINDS: not valid JSON/);
  });

  test('rollout: maxConcurrent as a number or a quoted percentage (kept as a string), a deadline in seconds; mistakes name the setting and the fix', () => {
    const file = writeTemp('waves.yaml', 'kinds:\n  - {group: a.example.com, version: v1, kind: A, image: "a:1", port: 80, rollout: {maxConcurrent: 5, progressDeadlineSeconds: 60}}\n  - {group: a.example.com, version: v1, kind: B, image: "b:1", port: 80, rollout: {maxConcurrent: "25%"}}\n');
    const [a, b] = kindsFromFile(file);
    expect(a!.rollout).toEqual({ maxConcurrent: '5', progressDeadlineSeconds: 60 });
    expect(b!.rollout).toEqual({ maxConcurrent: '25%' });
    const zero = writeTemp('zero.yaml', 'kinds:\n  - {group: a.example.com, version: v1, kind: A, image: "a:1", port: 80, rollout: {maxConcurrent: "0%"}}\n');
    expect(() => kindsFromFile(zero)).toThrow(/kinds\[0\]: rollout.maxConcurrent does not match .*; give a number of apps like 5, or a percentage from 1% to 100% like "10%" \(quoted\)/);
    const word = writeTemp('word.yaml', 'kinds:\n  - {group: a.example.com, version: v1, kind: A, image: "a:1", port: 80, rollout: {maxConcurrent: true}}\n');
    expect(() => kindsFromFile(word)).toThrow(/kinds\[0\]: rollout.maxConcurrent must be a number or a percentage; give a number of apps like 5/);
  });

  test('a setting the operator does not know is refused with the key and the file, never dropped', () => {
    const file = writeTemp('typo.yaml', 'kinds:\n  - {group: a.example.com, version: v1, kind: A, image: "a:1", port: 80, argz: ["-v"]}\n');
    expect(() => kindsFromFile(file)).toThrow(ConfigError);
    expect(() => kindsFromFile(file)).toThrow(/typo\.yaml kinds\[0\]: "argz" is not a known setting; remove it or use one of: group, version, kind/);
    const nested = writeTemp('nested.yaml', 'kinds:\n  - group: a.example.com\n    version: v1\n    kind: A\n    image: "a:1"\n    port: 80\n    env: [{name: DB, valueFrom: {secretKeyRf: {name: db, key: url}}}]\n');
    expect(() => kindsFromFile(nested)).toThrow(/nested\.yaml kinds\[0\]: env\[0\]\.valueFrom\.secretKeyRf is not a known setting; remove it, or use one of: configMapKeyRef, secretKeyRef, fieldRef/);
    expect(() => loadAppKinds({ APPKIND_KINDS: JSON.stringify([{ group: 'a.example.com', version: 'v1', kind: 'A', image: 'a', port: 80, hostPath: '/' }]) }))
      .toThrow(/APPKIND_KINDS kinds\[0\]: "hostPath" is not a known setting/);
    expect(() => loadAppKinds({ APPKIND_KINDS: '[["not", "a", "mapping"]]' })).toThrow(/APPKIND_KINDS kinds\[0\]: a kind must be a mapping/);
  });

  test.each([
    ['args: "-m 64"', /kinds\[0\]: args must be array/],
    ['resources: {limits: {memory: 1}}', /kinds\[0\]: resources\.limits\.memory must be string; quote the value/],
    ['resources: {limits: {cpu: "lots"}}', /resources\.limits\.cpu does not match .*; give a Kubernetes quantity such as 500m or 128Mi/],
    ['volumes: [{name: data, hostPath: {path: /var}}]', /volumes\[0\]\.hostPath is not a known setting; remove it, or use one of: name, emptyDir, configMap, secret, persistentVolumeClaim/],
    ['volumeMounts: [{name: data}]', /volumeMounts\[0\] lacks mountPath; add it/],
    ['serviceType: LoadBalancer', /serviceType must be one of "NodePort", "ClusterIP"/],
    ['readinessProbe: {httpGet: {}, tcpSocket: {}}', /kinds\[0\]: readinessProbe needs exactly one of httpGet, tcpSocket or exec/],
    ['volumeMounts: [{name: cache, mountPath: /cache}]', /volumeMount \/cache names the volume "cache", which volumes does not list; add it to volumes/],
    ['overrides: {env: {allow: [A]}}', /overrides\.env\.allow is not a known setting; remove it, or use one of: deny/],
    ['overrides: {env: "yes"}', /overrides\.env must be true, false or an object of the documented fields/],
    ['imagePullPolicy: Sometimes', /kinds\[0\]: imagePullPolicy must be one of "Always", "IfNotPresent", "Never"/],
    ['podDisruptionBudget: {maxUnavailable: 1}', /kinds\[0\]: podDisruptionBudget\.maxUnavailable must be string; quote the value/],
    ['podDisruptionBudget: {minAvailable: "half"}', /podDisruptionBudget\.minAvailable does not match .*; give a number like "1" or a percentage like "50%"/],
    ['podDisruptionBudget: {minAvailable: "1", maxUnavailable: "1"}', /kinds\[0\]: podDisruptionBudget has both minAvailable and maxUnavailable; give one/],
    ['networkPolicy: {}', /kinds\[0\]: networkPolicy lacks from; add it/],
    ['networkPolicy: {from: [{podSelector: {}, ipBlock: {cidr: 10.0.0.0/8}}]}', /kinds\[0\]: networkPolicy\.from\[0\] needs podSelector and\/or namespaceSelector, or ipBlock alone/],
    ['topologySpreadConstraints: [{maxSkew: 1}]', /kinds\[0\]: topologySpreadConstraints\[0\] lacks topologyKey; add it/],
    ['topologySpreadConstraints: [{topologyKey: zone, maxSkew: 0}]', /kinds\[0\]: topologySpreadConstraints\[0\]\.maxSkew must be >= 1/],
    ['topologySpreadConstraints: [{topologyKey: zone, whenUnsatisfiable: Never}]', /topologySpreadConstraints\[0\]\.whenUnsatisfiable must be one of "ScheduleAnyway", "DoNotSchedule"/],
    ['podAntiAffinity: {topologyKey: zone, preferred: true}', /podAntiAffinity\.preferred is not a known setting; remove it, or use one of: topologyKey, required/],
    ['portName: memcached-binary', /kinds\[0\]: portName "memcached-binary" is not an IANA service name; give at most 15 lower-case letters/],
    ['resources: {limits: {ephemeral-storage: 1Gi}}', /resources\.limits\.ephemeral-storage is not a known setting; remove it, or use one of: cpu, memory, ephemeralStorage/],
    ['runAsGroup: -1', /kinds\[0\]: runAsGroup must be >= 0/],
    ['overrides: {hostNetwork: true}', /overrides\.hostNetwork is not a known setting; remove it, or use one of: args, env, envFrom, resources, podDisruptionBudget, serviceAccountName/],
  ])('a misshapen setting (%s) names the setting, the file and the fix', (setting, message) => {
    const file = writeTemp('kinds.yaml', `kinds:\n  - {group: a.example.com, version: v1, kind: A, image: "a:1", port: 80, ${setting}}\n`);
    expect(() => kindsFromFile(file)).toThrow(ConfigError);
    expect(() => kindsFromFile(file)).toThrow(message);
    expect(() => kindsFromFile(file)).toThrow(/kinds\.yaml kinds\[0\]/);
  });

  test('the real apps\' settings pass through; overrides written as true become {}', () => {
    const file = writeTemp('kinds.yaml', [
      'kinds:',
      '  - group: a.example.com', '    version: v1', '    kind: A', '    image: "a:1"', '    port: 80',
      '    args: ["-m", "64"]',
      '    env: [{name: DB, valueFrom: {secretKeyRef: {name: db, key: url}}}]',
      '    readinessProbe: {httpGet: {path: /healthz}}',
      '    overrides: {env: true, resources: true, args: false}',
    ].join('\n'));
    expect(kindsFromFile(file)[0]).toMatchObject({
      args: ['-m', '64'],
      env: [{ name: 'DB', valueFrom: { secretKeyRef: { name: 'db', key: 'url' } } }],
      readinessProbe: { httpGet: { path: '/healthz' } },
      overrides: { env: {}, resources: {} },
    });
    expect(kindsFromFile(file)[0]!.overrides).not.toHaveProperty('args');
  });

  test('APPKIND_KIND_SETTINGS gives the six-variable kind every other setting, with the same checks', () => {
    expect(kindFromEnv({ ...TAKARA, APPKIND_KIND_SETTINGS: '{args: ["-m", "64"], overrides: {args: true}}' })).toMatchObject({ args: ['-m', '64'], overrides: { args: true } });
    expect(() => kindFromEnv({ ...TAKARA, APPKIND_KIND_SETTINGS: '{argz: []}' })).toThrow(/environment: "argz" is not a known setting/);
    expect(() => kindFromEnv({ ...TAKARA, APPKIND_KIND_SETTINGS: '{image: "x"}' })).toThrow(/APPKIND_KIND_SETTINGS sets image, which have variables of their own/);
    expect(() => kindFromEnv({ ...TAKARA, APPKIND_KIND_SETTINGS: '[1]' })).toThrow(/APPKIND_KIND_SETTINGS must be a mapping/);
  });
  test('versions: several served, exactly one stored, the kind\'s version among the served; each mistake named with its fix', () => {
    const base = { group: 'v.example.com', version: 'v1alpha1', kind: 'Ver', image: 'nginx', port: 80 };
    const versions = [{ name: 'v1alpha1' }, { name: 'v1', storage: true }];
    expect(kindsFromDocument({ kinds: [{ ...base, versions }] }, 'f.yaml')[0]!.versions).toEqual(versions);
    const refused = (v: unknown[], version = 'v1alpha1') => () => kindsFromDocument({ kinds: [{ ...base, version, versions: v }] }, 'f.yaml');
    expect(refused([{ name: 'v1alpha1' }, { name: 'v1' }])).toThrow(/f\.yaml kinds\[0\]: versions has no storage versions \(none\); mark exactly one with storage: true/);
    expect(refused([{ name: 'v1alpha1', storage: true }, { name: 'v1', storage: true }])).toThrow(/versions has 2 storage versions \(v1alpha1, v1\); mark exactly one/);
    expect(refused([{ name: 'v1', storage: true }, { name: 'v1' }])).toThrow(/versions lists v1 twice; list each version once/);
    expect(refused([{ name: 'v1', storage: true }])).toThrow(/versions does not list v1alpha1, the kind's version; list it, or set version to one of v1/);
    expect(refused([{ name: 'v1alpha1', served: false }, { name: 'v1', storage: true }])).toThrow(/versions does not serve v1alpha1, the kind's version .*; serve it, or set version to a served one/);
    expect(refused([{ name: 'v1alpha1' }, { name: 'v1', storage: true, served: false }])).toThrow(/stores CRs at v1, which is not served; serve the storage version/);
    expect(refused([])).toThrow(ConfigError);
  });
});
