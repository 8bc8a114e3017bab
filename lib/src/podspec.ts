// The pod and container fields of a ContainerApp beyond image and port, as the Kubernetes JSON the
// construct patches into its Deployment, and the checks that refuse a mistake before it reaches a cluster.
// Internal to the library (not exported from index.ts).
import { k8s } from 'cdk8s-plus-27';
import { NetworkPolicyOptions, PodDisruptionBudgetOptions, WhenUnsatisfiable } from './exposure';
import { Probe } from './probe';
import { AppSettings } from './settings';
import { Volume } from './volume';

/** The props this module renders (a subset of ContainerAppProps). */
export type PodSpecProps = Pick<AppSettings, 'command' | 'args' | 'env' | 'envFrom' | 'readinessProbe' | 'livenessProbe' | 'startupProbe' | 'volumes' | 'volumeMounts'>;

type Json = { [key: string]: unknown };

// The JSON patches run before the Deployment's typed serialization, which drops an int-or-string or a
// quantity that is not its own class: ports and sizes go in as those.
const port = (n: number) => k8s.IntOrString.fromNumber(n);

/** Name of the emptyDir mounted at /tmp when the root filesystem is read-only. */
export const TMP_VOLUME = 'tmp';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const INT_OR_PERCENT = /^[0-9]+%?$/;

/** Drops undefined members so the rendered JSON holds only what was given. */
function defined(obj: Json): Json {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined));
}

function probeJson(p: Probe, appPort: number): Json {
  return defined({
    httpGet: p.httpGet && { path: p.httpGet.path ?? '/', port: port(p.httpGet.port ?? appPort) },
    tcpSocket: p.tcpSocket && { port: port(p.tcpSocket.port ?? appPort) },
    exec: p.exec && { command: [...p.exec.command] },
    initialDelaySeconds: p.initialDelaySeconds,
    periodSeconds: p.periodSeconds,
    timeoutSeconds: p.timeoutSeconds,
    failureThreshold: p.failureThreshold,
    successThreshold: p.successThreshold,
  });
}

function volumeJson(v: Volume): Json {
  return defined({
    name: v.name,
    emptyDir: v.emptyDir && defined({ medium: v.emptyDir.medium, sizeLimit: v.emptyDir.sizeLimit && k8s.Quantity.fromString(v.emptyDir.sizeLimit) }),
    configMap: v.configMap && defined({ ...v.configMap }),
    secret: v.secret && defined({ ...v.secret }),
    persistentVolumeClaim: v.persistentVolumeClaim && defined({ ...v.persistentVolumeClaim }),
  });
}

/** True when the writable /tmp emptyDir is added: read-only root, not turned off, nothing else at /tmp. */
export function addsTmpVolume(props: PodSpecProps, readOnlyRoot: boolean, tmpVolume: boolean): boolean {
  return readOnlyRoot && tmpVolume && !(props.volumeMounts ?? []).some((m) => m.mountPath.replace(/\/+$/, '') === '/tmp');
}

/** Container fields (Kubernetes JSON) to set, only those given. */
export function containerFields(props: PodSpecProps, port: number, tmp: boolean): Json {
  const mounts: Json[] = (props.volumeMounts ?? []).map((m) => defined({ ...m }));
  if (tmp) mounts.push({ name: TMP_VOLUME, mountPath: '/tmp' });
  return defined({
    command: props.command && [...props.command],
    args: props.args && [...props.args],
    env: props.env && props.env.length > 0 ? props.env.map((e) => defined({ name: e.name, value: e.value, valueFrom: e.valueFrom && defined({ ...e.valueFrom }) })) : undefined,
    envFrom: props.envFrom && props.envFrom.length > 0 ? props.envFrom.map((e) => defined({ ...e })) : undefined,
    readinessProbe: props.readinessProbe && probeJson(props.readinessProbe, port),
    livenessProbe: props.livenessProbe && probeJson(props.livenessProbe, port),
    startupProbe: props.startupProbe && probeJson(props.startupProbe, port),
    volumeMounts: mounts.length > 0 ? mounts : undefined,
  });
}

/** The pod's volumes (Kubernetes JSON), or undefined when there are none. */
export function volumesOf(props: PodSpecProps, tmp: boolean): Json[] | undefined {
  const volumes = (props.volumes ?? []).map(volumeJson);
  if (tmp) volumes.push({ name: TMP_VOLUME, emptyDir: {} });
  return volumes.length > 0 ? volumes : undefined;
}

/** A PodDisruptionBudget's `minAvailable`/`maxUnavailable`: "1" is the number 1, "50%" stays a string. */
export function intOrPercent(v: string): k8s.IntOrString {
  return v.endsWith('%') ? k8s.IntOrString.fromString(v) : k8s.IntOrString.fromNumber(Number(v));
}

/** A port as the typed int-or-string. */
export function intPort(n: number): k8s.IntOrString {
  return port(n);
}

const count = (...xs: unknown[]) => xs.filter((x) => x !== undefined && x !== null).length;

function probeProblems(what: string, p: Probe | undefined): string[] {
  if (!p) return [];
  const out: string[] = [];
  if (count(p.httpGet, p.tcpSocket, p.exec) !== 1) out.push(`${what} needs exactly one of httpGet, tcpSocket or exec`);
  if (p.exec && p.exec.command.length === 0) out.push(`${what}.exec.command is empty; give the command to run`);
  for (const port of [p.httpGet?.port, p.tcpSocket?.port]) {
    if (port !== undefined && (!Number.isInteger(port) || port < 1 || port > 65535)) out.push(`${what} port ${port} is not an integer from 1 to 65535`);
  }
  if (p.httpGet?.path !== undefined && !p.httpGet.path.startsWith('/')) out.push(`${what}.httpGet.path "${p.httpGet.path}" must start with "/"`);
  const timings: [string, number | undefined, number][] = [
    ['initialDelaySeconds', p.initialDelaySeconds, 0], ['periodSeconds', p.periodSeconds, 1], ['timeoutSeconds', p.timeoutSeconds, 1],
    ['failureThreshold', p.failureThreshold, 1], ['successThreshold', p.successThreshold, 1],
  ];
  for (const [name, v, min] of timings) {
    if (v !== undefined && (!Number.isInteger(v) || v < min)) out.push(`${what}.${name} ${v} is not an integer of at least ${min}`);
  }
  if (what !== 'readinessProbe' && p.successThreshold !== undefined && p.successThreshold !== 1) {
    out.push(`${what}.successThreshold must be 1 (Kubernetes allows other values only for readiness probes)`);
  }
  return out;
}

/** What is wrong with the pod and container fields, each with the fix; empty when nothing is. */
export function podSpecProblems(props: PodSpecProps, tmp: boolean): string[] {
  const out: string[] = [];
  const names = new Set<string>();
  for (const e of props.env ?? []) {
    if (!e.name || e.name.includes('=')) out.push(`env name "${e.name}" is empty or contains "="`);
    if (names.has(e.name)) out.push(`env lists ${e.name} twice; keep one`);
    names.add(e.name);
    if (e.value !== undefined && e.valueFrom) out.push(`env ${e.name} has both value and valueFrom; give one`);
    if (e.valueFrom && count(e.valueFrom.configMapKeyRef, e.valueFrom.secretKeyRef, e.valueFrom.fieldRef) !== 1) {
      out.push(`env ${e.name}.valueFrom needs exactly one of configMapKeyRef, secretKeyRef or fieldRef`);
    }
  }
  for (const [i, e] of (props.envFrom ?? []).entries()) {
    if (count(e.configMapRef, e.secretRef) !== 1) out.push(`envFrom[${i}] needs exactly one of configMapRef or secretRef`);
  }
  out.push(...probeProblems('readinessProbe', props.readinessProbe), ...probeProblems('livenessProbe', props.livenessProbe), ...probeProblems('startupProbe', props.startupProbe));
  const volumes = new Set<string>();
  for (const v of props.volumes ?? []) {
    if (!DNS_LABEL.test(v.name)) out.push(`volume name "${v.name}" is not a lower-case DNS label`);
    if (volumes.has(v.name)) out.push(`volumes lists ${v.name} twice; keep one`);
    if (tmp && v.name === TMP_VOLUME) out.push(`volume name "${TMP_VOLUME}" is taken by the writable /tmp of the read-only root filesystem; rename the volume, mount it at /tmp, or set tmpVolume to false`);
    volumes.add(v.name);
    if (count(v.emptyDir, v.configMap, v.secret, v.persistentVolumeClaim) !== 1) {
      out.push(`volume ${v.name} needs exactly one of emptyDir, configMap, secret or persistentVolumeClaim (hostPath is not offered)`);
    }
  }
  const paths = new Set<string>();
  for (const m of props.volumeMounts ?? []) {
    if (!volumes.has(m.name)) out.push(`volumeMount ${m.mountPath} names the volume "${m.name}", which volumes does not list; add it to volumes`);
    if (!m.mountPath.startsWith('/')) out.push(`volumeMount mountPath "${m.mountPath}" is not an absolute path`);
    if (paths.has(m.mountPath)) out.push(`volumeMounts mount two volumes at ${m.mountPath}; keep one`);
    paths.add(m.mountPath);
  }
  return out;
}

/** What is wrong with the PodDisruptionBudget and NetworkPolicy options; empty when nothing is. */
export function exposureProblems(pdb: PodDisruptionBudgetOptions | undefined, netpol: NetworkPolicyOptions | undefined): string[] {
  const out: string[] = [];
  if (pdb) {
    if (pdb.minAvailable !== undefined && pdb.maxUnavailable !== undefined) out.push('podDisruptionBudget has both minAvailable and maxUnavailable; give one');
    for (const [name, v] of [['minAvailable', pdb.minAvailable], ['maxUnavailable', pdb.maxUnavailable]] as const) {
      if (v !== undefined && !INT_OR_PERCENT.test(v)) out.push(`podDisruptionBudget.${name} "${v}" is neither a number like "1" nor a percentage like "50%"`);
    }
  }
  for (const [i, peer] of (netpol?.from ?? []).entries()) {
    const selectors = count(peer.podSelector, peer.namespaceSelector);
    if (peer.ipBlock ? selectors > 0 : selectors === 0) out.push(`networkPolicy.from[${i}] needs podSelector and/or namespaceSelector, or ipBlock alone`);
  }
  return out;
}

// IANA_SVC_NAME, as Kubernetes validates a port name: at least one letter, no "--", no "-" at either end.
const PORT_NAME = /^(?=.{1,15}$)(?=.*[a-z])[a-z0-9]+(-[a-z0-9]+)*$/;
// A label key: an optional DNS-subdomain prefix and "/", then a name of at most 63 characters.
const LABEL_KEY = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** What is wrong with the Service port's name and protocol, the spread constraints and the anti-affinity; empty when nothing is. */
export function placementProblems(props: Pick<AppSettings, 'portName' | 'appProtocol' | 'topologySpreadConstraints' | 'podAntiAffinity'>): string[] {
  const out: string[] = [];
  if (props.portName !== undefined && !PORT_NAME.test(props.portName)) {
    out.push(`portName "${props.portName}" is not an IANA service name; give at most 15 lower-case letters, digits and "-" with at least one letter, such as "http" or "tcp-memcache"`);
  }
  if (props.appProtocol !== undefined && !LABEL_KEY.test(props.appProtocol)) {
    out.push(`appProtocol "${props.appProtocol}" is not a protocol name; give a name such as "http", "tcp" or "kubernetes.io/h2c"`);
  }
  const modes: string[] = Object.values(WhenUnsatisfiable);
  for (const [i, c] of (props.topologySpreadConstraints ?? []).entries()) {
    const at = `topologySpreadConstraints[${i}]`;
    if (!c.topologyKey || !LABEL_KEY.test(c.topologyKey)) out.push(`${at}.topologyKey "${c.topologyKey}" is not a node label key; give one such as "topology.kubernetes.io/zone"`);
    if (c.maxSkew !== undefined && (!Number.isInteger(c.maxSkew) || c.maxSkew < 1)) out.push(`${at}.maxSkew ${c.maxSkew} is not an integer of at least 1`);
    if (c.whenUnsatisfiable !== undefined && !modes.includes(c.whenUnsatisfiable)) out.push(`${at}.whenUnsatisfiable "${c.whenUnsatisfiable}" is not one of ${modes.join(', ')}`);
    if (c.minDomains !== undefined && (!Number.isInteger(c.minDomains) || c.minDomains < 1)) out.push(`${at}.minDomains ${c.minDomains} is not an integer of at least 1`);
    if (c.minDomains !== undefined && c.whenUnsatisfiable !== WhenUnsatisfiable.DO_NOT_SCHEDULE) out.push(`${at}.minDomains needs whenUnsatisfiable DoNotSchedule; set it or leave minDomains unset`);
  }
  const key = props.podAntiAffinity?.topologyKey;
  if (key !== undefined && !LABEL_KEY.test(key)) out.push(`podAntiAffinity.topologyKey "${key}" is not a node label key; give one such as "kubernetes.io/hostname"`);
  return out;
}
