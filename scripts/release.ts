// `npm run release`: everything a user installs from, written to release/ in one command:
//   install.yaml                           the CRDs, namespace, RBAC, kinds ConfigMap and operator Deployment
//                                          (`kubectl apply -f` installs, `kubectl delete -f` removes)
//   kinds.yaml                             the kinds' CRDs and the operator's RBAC for them alone (after an
//                                          edit of the kinds ConfigMap: `npm run kinds` applies the same)
//   appkind-operator-<version>.tgz         the Helm chart charts/appkind-operator (helm install) with this
//                                          image and these kinds; its folder is chart/appkind-operator/
//   appkind-operator-<version>.oci.tar     the operator image (podman load / docker load -i)
//   cdk8s-appkind-<version>.tgz            the construct library's npm package
//   packages/<target>/                     jsii-pacmak's output for every target: built where this machine
//                                          has the toolchain and registry, else generated sources (see SUMMARY)
//   SHA256SUMS, SUMMARY.txt                checksums, and what was built and what only generated, and why
// Usage: npm run release -- [--image REF] [--out DIR] [--no-image] [--no-packages] [--monitoring]
//   --image REF   the operator image reference install.yaml names and the archive is tagged with
//                 (default APPKIND_OPERATOR_IMAGE, else appkind-operator:<version>)
//   --monitoring  install.yaml also holds OperatorMonitoring's ServiceMonitor, PrometheusRule and
//                 Grafana dashboard ConfigMap, and the chart's monitoring.enabled defaults to true
//                 (needs the prometheus-operator CRDs; docs/monitoring.md)
// Kinds come from the usual configuration (APPKIND_CONFIG, the six variables, else the sample kind);
// APPKIND_KIND_GROUPS (comma-separated) lists the API groups AppKinds may define kinds in, written into
// install.yaml (the bundle's kindGroups) and the chart's kindGroups (default none: no CRD is made);
// APPKIND_APPKIND_SELECTOR, the AppKinds the operator serves, into both the same way (default every AppKind).
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError } from 'appkind-operator/kinds';
import { withPrefixedSettings } from 'appkind-operator/settings';
import { normalizeImageName } from '../tools/controlplane/node/images.js';
import { CHART_NAME, writeChart } from '../tools/release/chart.js';
import { bundleProps, installYaml, kindsYaml } from '../tools/release/manifests.js';

const ROOT = join(import.meta.dirname, '..');
let OUT = join(ROOT, 'release');
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'lib', 'package.json'), 'utf8')) as { version: string }).version;
const QUIET_JSII = { JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION: '1', JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION: '1' };
/** jsii-pacmak's targets besides js (the npm tarball). */
const PACMAK_TARGETS = ['python', 'go', 'java', 'dotnet'] as const;

const summary: string[] = [];
const say = (line: string) => {
  process.stderr.write(`release: ${line}\n`);
  summary.push(line);
};

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}): { ok: boolean; output: string } {
  const r = spawnSync(cmd, args, { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  return { ok: r.status === 0, output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}

/** The last lines of a failed tool's output that say why. */
const why = (output: string) =>
  output
    .trim()
    .split('\n')
    .map((l) => l.replace(/^#STD(OUT|ERR)> /, '').trim())
    .filter((l) => /error|fail|cannot|not found|not available|could not|refused|ENOENT/i.test(l) && !/^at /.test(l))
    .slice(0, 1)
    .join('')
    .slice(0, 300) || output.trim().split('\n').slice(-1)[0];

function manifests(image: string, env: NodeJS.ProcessEnv, monitoring: boolean): void {
  writeFileSync(join(OUT, 'install.yaml'), installYaml(env, image, monitoring));
  writeFileSync(join(OUT, 'kinds.yaml'), kindsYaml(env));
  const extra = monitoring ? ', with the ServiceMonitor, PrometheusRule and Grafana dashboard' : '';
  say(`install.yaml: operator image ${image}${extra}; kinds.yaml: the same kinds' CRDs and RBAC`);
}

/** The Helm chart charts/appkind-operator with the release's image and kinds: its folder, and the archive `helm package` would make (a gzipped tar of that folder). */
function chart(image: string, env: NodeJS.ProcessEnv, monitoring: boolean): void {
  const dir = join(OUT, 'chart', CHART_NAME);
  const props = bundleProps(env, image);
  writeChart(dir, image, props.kinds, monitoring, props.kindGroups, props.appKindSelector);
  const archive = `${CHART_NAME}-${VERSION}.tgz`;
  execFileSync('tar', ['-czf', join(OUT, archive), '-C', join(OUT, 'chart'), CHART_NAME]);
  const same = `the objects of install.yaml${monitoring ? ', monitoring.enabled' : ''}, less the Namespace --create-namespace makes`;
  say(`${archive}: the Helm chart charts/${CHART_NAME} with this image and these kinds (default values: ${same}), its folder chart/${CHART_NAME}/`);
}

function library(): void {
  const r = run('npm', ['pack', '--workspace=lib', '--pack-destination', OUT, '--silent']);
  if (!r.ok) throw new Error(`npm pack --workspace=lib failed:\n${r.output}`);
  say(`cdk8s-appkind-${VERSION}.tgz: the npm package (jsii target js)`);
}

/** Each target built with its toolchain where that works here, else its generated sources. */
function packages(): void {
  const pacmak = join(ROOT, 'node_modules', '.bin', 'jsii-pacmak');
  for (const target of PACMAK_TARGETS) {
    // pacmak writes a target's output to <outdir>/<target>.
    const outdir = join(OUT, 'packages');
    const out = join(outdir, target);
    const built = run(pacmak, ['--targets', target, '--outdir', outdir, 'lib'], QUIET_JSII);
    if (built.ok) {
      say(`packages/${target}: built (${files(out).join(', ')})`);
      continue;
    }
    rmSync(out, { recursive: true, force: true });
    const generated = run(pacmak, ['--code-only', '--targets', target, '--outdir', outdir, 'lib'], QUIET_JSII);
    if (!generated.ok) throw new Error(`jsii-pacmak --code-only --targets ${target} failed:\n${generated.output}`);
    say(`packages/${target}: sources generated, not built here: ${why(built.output)}`);
  }
}

/**
 * The operator image built from the Dockerfile (npm run image) and saved as an OCI archive under its
 * full name (docker.io/library/... for a bare name, as a kubelet resolves it), which `podman load`
 * reads from org.opencontainers.image.ref.name and `docker load`, `ctr import` and `kind load
 * image-archive` from io.containerd.image.name.
 */
function image(ref: string): void {
  const archive = join(OUT, `appkind-operator-${VERSION}.oci.tar`);
  const name = normalizeImageName(ref);
  execFileSync('bash', [join(ROOT, 'tools', 'image', 'build.sh'), ref], { cwd: ROOT, stdio: ['ignore', process.stderr, process.stderr] });
  const saved = run('bash', ['-c', 'source tools/image/engine.sh && podman_ tag "$1" "$2" && podman_ save --format oci-archive -o "$3" "$2"', 'save', ref, name, archive]);
  if (!saved.ok) throw new Error(`podman save ${ref} failed:\n${saved.output}`);
  // The archive is written anew around the edited index.json (tar --delete on podman's archive loses its oci-layout).
  const tmp = mkdtempSync(join(tmpdir(), 'appkind-release-'));
  try {
    execFileSync('tar', ['-xf', archive, '-C', tmp]);
    const index = JSON.parse(readFileSync(join(tmp, 'index.json'), 'utf8')) as { manifests: { annotations?: Record<string, string> }[] };
    for (const m of index.manifests) m.annotations = { ...m.annotations, 'org.opencontainers.image.ref.name': name, 'io.containerd.image.name': name };
    writeFileSync(join(tmp, 'index.json'), JSON.stringify(index));
    execFileSync('tar', ['-cf', archive, '-C', tmp, 'oci-layout', 'index.json', 'blobs']);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  say(`${relative(OUT, archive)}: the operator image ${name} (podman load -i, docker load -i, kind load image-archive)`);
}

/** Files under `dir`, relative to it. */
function files(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => statSync(join(dir, f)).isFile())
    .sort();
}

function checksums(): void {
  const lines = files(OUT)
    .filter((f) => !f.startsWith('chart/') && (!f.startsWith('packages/') || /\.(whl|tar\.gz|jar|nupkg|tgz)$/.test(f)))
    .map((f) => `${createHash('sha256').update(readFileSync(join(OUT, f))).digest('hex')}  ${f}`);
  writeFileSync(join(OUT, 'SHA256SUMS'), `${lines.join('\n')}\n`);
}

function main(): void {
  const { values } = parseArgs({
    options: {
      image: { type: 'string' },
      out: { type: 'string' },
      'no-image': { type: 'boolean' },
      'no-packages': { type: 'boolean' },
      monitoring: { type: 'boolean' },
    },
    strict: true,
  });
  const { env, deprecations } = withPrefixedSettings(process.env);
  for (const d of deprecations) process.stderr.write(`release: ${d}\n`);
  if (values.out) OUT = resolve(values.out);
  const ref = values.image ?? env.APPKIND_OPERATOR_IMAGE ?? `appkind-operator:${VERSION}`;
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT);
  manifests(ref, env, values.monitoring ?? false);
  chart(ref, env, values.monitoring ?? false);
  library();
  if (!values['no-packages']) packages();
  if (!values['no-image']) image(ref);
  writeFileSync(join(OUT, 'SUMMARY.txt'), `cdk8s-appkind ${VERSION}\n${summary.map((l) => `- ${l}`).join('\n')}\n`);
  checksums();
  process.stderr.write(`release: wrote ${relative(process.cwd(), OUT) || '.'}/\n`);
}

try {
  main();
} catch (e) {
  if (!(e instanceof ConfigError)) throw e;
  process.stderr.write(`release: ${e.message}\n`);
  process.exit(2);
}
