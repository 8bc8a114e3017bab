// Runs the operator image with podman the way a kubelet would run the bundle's operator pod: user,
// read-only root filesystem, capabilities, no-new-privileges, seccomp, env (downward API filled in),
// command, volumes, resources, termination grace period and the ServiceAccount files, all taken from
// the pod spec of the synthesized bundle. What differs, and why:
// - host networking (no container networks on these machines; DESIGN.md "Containers on these
//   machines"): every container shares the host's ports, so each named container port is moved to a
//   free port through the env variable that sets it (APPKIND_METRICS_PORT, APPKIND_HEALTH_PORT), as two pods would not
//   collide; probes and the test then use the moved ports.
// - emptyDir volumes are tmpfs mounts of the volume's sizeLimit; configMap volumes are folders of the
//   bundle's ConfigMap data (mounted once: the kubelet's updates of an edited ConfigMap are not played).
import type { V1Container, V1PodSpec, V1Probe, V1SecurityContext } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { podEnv, type OperatorPod } from './bundle-file.js';
import { requireFirstUse } from './first-use.js';
import { LogLine, OperatorProcess } from './operator-process.js';

const exec = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');

/** podman with the settings these machines need (the same as tools/image/engine.sh). */
export const PODMAN_ENV = { CONTAINERS_CONF: join(root, 'tools', 'image', 'containers.conf') };
const RUNTIME_FLAGS = ['--runtime', '/usr/sbin/runc', '--cgroup-manager=cgroupfs'];
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export async function podman(args: string[]): Promise<string> {
  const { stdout } = await exec('podman', [...RUNTIME_FLAGS, ...args], { env: { ...process.env, ...PODMAN_ENV }, maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

/**
 * Builds the operator image as `image` from this checkout with tools/image/build.sh (`npm run image`;
 * global setup built the same layers, so this only tags them); returns the milliseconds it took. A
 * machine without podman or buildah fails here naming them; a failure carries the build's output.
 */
export async function buildOperatorImage(image: string): Promise<number> {
  requireFirstUse('operator image');
  const started = Date.now();
  try {
    await exec('bash', [join(root, 'tools', 'image', 'build.sh'), image], { cwd: root, maxBuffer: 64 * 1024 * 1024 });
  } catch (e) {
    const { stdout, stderr } = e as { stdout?: string; stderr?: string };
    throw new Error(`npm run image failed:\n${(stdout ?? '').slice(-4000)}\n${(stderr ?? '').slice(-4000)}`);
  }
  return Date.now() - started;
}

/** The files the kubelet projects into a pod for its ServiceAccount, in a folder the container user can read. */
export function serviceAccountFiles(token: string, caPem: string, namespace: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'appkind-sa-'));
  chmodSync(dir, 0o755);
  for (const [name, content] of [['token', token], ['ca.crt', caPem], ['namespace', namespace]] as const) {
    writeFileSync(join(dir, name), content, { mode: 0o644 });
  }
  return dir;
}

/** A configMap volume: the bundle's ConfigMap data as files (one a key) in a folder the container user can read. */
export function configMapFiles(pod: OperatorPod, name: string, parent = tmpdir()): string {
  const data = pod.configMaps[name];
  if (!data) throw new Error(`configMap volume ${name}: the bundle has no such ConfigMap`);
  const dir = mkdtempSync(join(parent, `appkind-cm-${name}-`));
  chmodSync(dir, 0o755);
  for (const [key, content] of Object.entries(data)) writeFileSync(join(dir, key), content, { mode: 0o644 });
  return dir;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Kubernetes binary quantities (Ki/Mi/Gi) in podman's units (k/m/g, also binary). */
function memoryFlag(quantity: string): string {
  const m = /^(\d+)(Ki|Mi|Gi)$/.exec(quantity);
  if (!m) throw new Error(`memory limit ${quantity}: only Ki/Mi/Gi quantities are translated`);
  return `${m[1]}${m[2]![0]!.toLowerCase()}`;
}

function cpuFlag(quantity: string): string {
  return quantity.endsWith('m') ? String(Number(quantity.slice(0, -1)) / 1000) : quantity;
}

/** Container-level security settings override the pod-level ones, field by field (as in the kubelet). */
function securityContext(spec: V1PodSpec, container: V1Container): V1SecurityContext {
  const pod = spec.securityContext ?? {};
  const own = container.securityContext ?? {};
  return {
    ...own,
    runAsUser: own.runAsUser ?? pod.runAsUser,
    runAsGroup: own.runAsGroup ?? pod.runAsGroup,
    runAsNonRoot: own.runAsNonRoot ?? pod.runAsNonRoot,
    seccompProfile: own.seccompProfile ?? pod.seccompProfile,
  };
}

/** The part of `podman inspect` the tests read. */
export interface ContainerInspect {
  State: { Pid: number };
}

export interface ContainerOptions {
  readonly image: string;
  readonly pod: OperatorPod;
  /** Pod (and container, and hostname) name. */
  readonly name: string;
  /** Folder with token, ca.crt and namespace (serviceAccountFiles). */
  readonly serviceAccountDir: string;
  /** The API server, as KUBERNETES_SERVICE_HOST/PORT. */
  readonly apiserver: URL;
  /** Env values set on top of the bundle's (test timings). */
  readonly env?: Record<string, string>;
}

/** An operator container started from the bundle's pod spec; logs and exit code through OperatorProcess. */
export class OperatorContainer {
  private constructor(
    readonly name: string,
    readonly process: OperatorProcess,
    /** Host port of each named container port. */
    readonly ports: Record<string, number>,
    readonly argv: string[],
    private readonly container: V1Container,
    readonly terminationGracePeriodSeconds: number,
  ) {}

  /** The `podman run` command line for the pod, and the host port of each named container port. */
  static async command(opts: ContainerOptions): Promise<{ argv: string[]; ports: Record<string, number> }> {
    const { spec, container } = opts.pod;
    const sc = securityContext(spec, container);
    const args = ['run', '--rm', '--pull=never', '--name', opts.name, '--hostname', opts.name, '--network=host'];

    if (sc.runAsUser !== undefined) args.push('--user', `${sc.runAsUser}:${sc.runAsGroup ?? sc.runAsUser}`);
    // The kubelet refuses to start a runAsNonRoot container whose user is root.
    if (sc.runAsNonRoot && !sc.runAsUser) throw new Error('runAsNonRoot without a non-zero runAsUser: the kubelet would refuse this pod');
    // No tmpfs on /tmp, /run, /var/tmp unless the pod spec mounts one: the kubelet adds none.
    if (sc.readOnlyRootFilesystem) args.push('--read-only', '--read-only-tmpfs=false');
    if (sc.privileged) args.push('--privileged');
    if (sc.allowPrivilegeEscalation === false) args.push('--security-opt', 'no-new-privileges');
    for (const cap of sc.capabilities?.drop ?? []) args.push('--cap-drop', cap);
    for (const cap of sc.capabilities?.add ?? []) args.push('--cap-add', cap);
    const seccomp = sc.seccompProfile?.type;
    // RuntimeDefault is podman's default profile; Unconfined turns it off.
    if (seccomp === 'Unconfined') args.push('--security-opt', 'seccomp=unconfined');
    else if (seccomp && seccomp !== 'RuntimeDefault') throw new Error(`seccompProfile ${seccomp} is not translated`);

    for (const mount of container.volumeMounts ?? []) {
      const volume = (spec.volumes ?? []).find((v) => v.name === mount.name);
      if (volume?.configMap) {
        args.push('--volume', `${configMapFiles(opts.pod, volume.configMap.name!)}:${mount.mountPath}:ro`);
        continue;
      }
      if (!volume?.emptyDir) throw new Error(`volume ${mount.name}: only emptyDir and configMap volumes are translated`);
      const size = volume.emptyDir.sizeLimit ? `,size=${memoryFlag(String(volume.emptyDir.sizeLimit))}` : '';
      args.push('--tmpfs', `${mount.mountPath}:rw,mode=1777${size}`);
    }
    if (spec.automountServiceAccountToken !== false) args.push('--volume', `${opts.serviceAccountDir}:${SERVICE_ACCOUNT_DIR}:ro`);

    const limits = container.resources?.limits ?? {};
    if (limits.memory) args.push('--memory', memoryFlag(String(limits.memory)));
    if (limits.cpu) args.push('--cpus', cpuFlag(String(limits.cpu)));
    if (spec.terminationGracePeriodSeconds !== undefined) args.push('--stop-timeout', String(spec.terminationGracePeriodSeconds));

    const env = podEnv(opts.pod, opts.name);
    // Host networking: each named port moves to a free port through the env variable that sets it.
    const ports: Record<string, number> = {};
    for (const p of container.ports ?? []) {
      const variable = Object.keys(env).find((k) => env[k] === String(p.containerPort));
      if (!p.name || !variable) throw new Error(`container port ${p.containerPort}: no name or no env variable sets it`);
      ports[p.name] = await freePort();
      env[variable] = String(ports[p.name]);
    }
    // What the kubelet adds for every container: the API server's address and the hostname.
    Object.assign(env, { KUBERNETES_SERVICE_HOST: opts.apiserver.hostname, KUBERNETES_SERVICE_PORT: opts.apiserver.port, HOSTNAME: opts.name }, opts.env);
    for (const [k, v] of Object.entries(env)) args.push('--env', `${k}=${v}`);

    if (container.workingDir) args.push('--workdir', container.workingDir);
    if (container.command) args.push('--entrypoint', JSON.stringify(container.command));
    args.push(opts.image, ...(container.args ?? []));
    return { argv: ['podman', ...RUNTIME_FLAGS, ...args], ports };
  }

  /** Starts the container attached (its JSON logs are read) and resolves once a log line matches `until`. */
  static async start(opts: ContainerOptions & { until?: (l: LogLine) => boolean; timeoutMs?: number }): Promise<OperatorContainer> {
    const { argv, ports } = await OperatorContainer.command(opts);
    const op = await OperatorProcess.spawn({ command: argv, env: PODMAN_ENV, until: opts.until ?? ((l) => l.msg === 'caches synced'), timeoutMs: opts.timeoutMs ?? 90_000 });
    return new OperatorContainer(opts.name, op, ports, argv, opts.pod.container, opts.pod.spec.terminationGracePeriodSeconds ?? 30);
  }

  get logs(): LogLine[] {
    return this.process.logs;
  }

  /** GET on a named container port. */
  async get(port: string, path: string): Promise<{ status: number; body: string }> {
    const hostPort = this.ports[port];
    if (!hostPort) throw new Error(`container port ${port} is not in the pod spec`);
    const res = await fetch(`http://127.0.0.1:${hostPort}${path}`);
    return { status: res.status, body: await res.text() };
  }

  /** The kubelet's view of a probe from the pod spec: its HTTP status (0 when nothing answers). */
  async probe(kind: 'livenessProbe' | 'readinessProbe'): Promise<number> {
    const probe: V1Probe | undefined = this.container[kind];
    const http = probe?.httpGet;
    if (!http) throw new Error(`${kind}: no httpGet in the pod spec`);
    const port = typeof http.port === 'number' ? Object.entries(this.ports).find(([name]) => this.container.ports?.find((p) => p.name === name)?.containerPort === http.port)?.[0] : String(http.port);
    try {
      return (await this.get(port ?? String(http.port), http.path ?? '/')).status;
    } catch {
      return 0;
    }
  }

  /** `podman inspect` of the running container. */
  async inspect(): Promise<ContainerInspect> {
    return (JSON.parse(await podman(['inspect', this.name])) as ContainerInspect[])[0]!;
  }

  /** `podman stop` (SIGTERM, then SIGKILL after the container's stop timeout): the container's exit code and how long it took. */
  async stop(): Promise<{ code: number | null; ms: number }> {
    const started = Date.now();
    await podman(['stop', this.name]);
    const code = await this.process.exitCode();
    return { code, ms: Date.now() - started };
  }

  /** Removes the container whatever its state (cleanup after a failed test). */
  async remove(): Promise<void> {
    await podman(['rm', '--force', '--ignore', this.name]).catch(() => undefined);
    await this.process.stop('SIGKILL');
  }
}
