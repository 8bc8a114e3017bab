// The operator process (main.ts is its entry): settings, kube access, probe servers, caches, leader
// election, workers, and a graceful shutdown on SIGTERM.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { ConfigError } from './kinds/validate.js';
import { applyFlags, USAGE } from './flags.js';
import { SecureMetrics, startProbeServers } from './runtime/health.js';
import { MetricsAuthorizer } from './runtime/metrics-auth.js';
import { RestClient } from './runtime/rest.js';
import { readCertificate, selfSignedCertificate, ServingCertificate, watchCertificate } from './runtime/serving-cert.js';
import { loadKubeAccess } from './runtime/kubeconfig.js';
import { createLogger, Logger } from './runtime/log.js';
import { OperatorMetrics } from './runtime/metrics.js';
import { KindsFile } from './controller/kinds-file.js';
import { KindSources } from './controller/kind-sources.js';
import { Manager } from './controller/manager.js';
import { AppKindSource } from './appkinds/source.js';
import { EventRecorder } from './runtime/events.js';
import type { AppKind } from 'cdk8s-appkind';
import { loadSettings, OperatorSettings } from './settings.js';

const IN_CLUSTER_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

function leaseNamespace(settings: OperatorSettings): string {
  if (settings.leaseNamespace) return settings.leaseNamespace;
  try {
    return readFileSync(IN_CLUSTER_NAMESPACE, 'utf8').trim();
  } catch {
    return 'default';
  }
}

/**
 * Serves the kinds file's valid edits; a refused edit is logged, counted (appkind_config_last_reload_successful 0)
 * and, when the file is a ConfigMap's, a Warning Event on it (`kubectl describe configmap`).
 */
function watchKindsFile(
  settings: OperatorSettings,
  manager: Manager,
  sources: KindSources,
  appKinds: AppKindSource,
  metrics: OperatorMetrics,
  log: Logger,
): KindsFile {
  const file = settings.configFile!;
  const events = new EventRecorder(manager.rest, settings.fieldManager, log);
  const configMap = settings.configMap && {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { namespace: settings.configMap.namespace, name: settings.configMap.name },
  };
  const names = (kinds: Iterable<AppKind>) => [...kinds].map((k) => `${k.kind}.${k.group}/${k.version}`);
  let served = settings.kinds;
  const kindsFile = new KindsFile(file, {
    valid: (kinds) => {
      metrics.configReloaded(true);
      const changes = sources.setFileKinds(kinds);
      // An AppKind refused for a kind the file served, or now taking one, is judged again.
      appKinds.resync();
      served = kinds;
      log.info('kinds configuration changed', { file, ...changes, kinds: names(kinds) });
      const what = Object.entries(changes)
        .filter(([, v]) => v.length > 0)
        .map(([k, v]) => `${k} ${v.join(', ')}`);
      if (configMap)
        void events.record(
          configMap,
          'Normal',
          'KindsChanged',
          `serving ${names(kinds).join(', ')}${what.length ? ` (${what.join('; ')})` : ''}`,
        );
    },
    invalid: (error) => {
      metrics.configReloaded(false);
      log.error('kinds configuration refused; still serving the kinds before it', { file, reason: error.message, kinds: names(served) });
      if (configMap)
        void events.record(configMap, 'Warning', 'InvalidKinds', `${error.message} (still serving ${names(served).join(', ')})`);
    },
  });
  // A kind's rollout that stopped at a failing wave is the kinds' news too: `kubectl describe configmap`.
  if (configMap)
    manager.onRolloutStopped(
      (kind, reason) => void events.record(configMap, 'Warning', 'KindRolloutStopped', `the ${kind} rollout stopped: ${reason}`),
    );
  kindsFile.start();
  return kindsFile;
}

/**
 * HTTPS for /metrics with every scrape reviewed by the API server (TokenReview, SubjectAccessReview), as
 * kubebuilder v4 scaffolds it. The reviews go through a client of their own: they are not the
 * controller's requests, so rest_client_requests_total keeps counting those alone.
 */
async function secureMetrics(settings: OperatorSettings, reviews: RestClient, log: Logger): Promise<SecureMetrics> {
  let certificate: ServingCertificate;
  try {
    certificate = settings.metricsCertDir ? readCertificate(settings.metricsCertDir) : await selfSignedCertificate();
  } catch (e) {
    throw new ConfigError((e as Error).message);
  }
  return {
    certificate,
    authorizer: new MetricsAuthorizer(reviews),
    refused: (d, req) =>
      log.debug('metrics request refused', { status: d.status, reason: d.reason, path: req.url, from: req.socket.remoteAddress }),
  };
}

async function run(settings: OperatorSettings, log: Logger): Promise<void> {
  const kc = await loadKubeAccess();
  const metrics = new OperatorMetrics();
  // The kinds read at start are valid (else the process exits); with no kinds file nothing else sets it.
  metrics.configReloaded(true);
  const identity = settings.identity ?? `${hostname()}_${process.pid}`;
  // The identity in every request's User-Agent: audit logs tell the replicas of one ServiceAccount apart.
  const manager = new Manager(kc, settings, log, metrics, {
    userAgent: `appkind-operator (${process.platform}/${process.arch}) ${identity}`,
  });
  const sources = new KindSources(manager, settings.kinds);
  const appKinds = new AppKindSource({
    rest: manager.rest,
    log: log.child({ controller: 'appkind-api' }),
    sources,
    resourceCount: (kind) => manager.resourceCount(kind),
    listFailure: (kind) => manager.listFailure(kind),
    rollout: (kind) => manager.rolloutSummary(kind),
    fieldManager: settings.fieldManager,
    managedBy: settings.leaseName,
    staleMs: settings.watchStaleSeconds * 1000,
    kindGroups: settings.kindGroups,
    labelSelector: settings.appKindSelector,
  });
  manager.whenWorkersStart(() => appKinds.startWorkers());
  manager.onRolloutStopped((kind, reason) => appKinds.rolloutStopped(kind, reason));
  const reviews = settings.metricsSecure && settings.metricsPort >= 0 ? new RestClient(kc) : undefined;
  const secure = reviews && (await secureMetrics(settings, reviews, log));
  const servers = await startProbeServers({
    metricsPort: settings.metricsPort,
    healthPort: settings.healthPort,
    ready: () => manager.ready(),
    metrics,
    secure,
  });
  const stopCertificateWatch =
    secure && settings.metricsCertDir
      ? watchCertificate(
          settings.metricsCertDir,
          secure.certificate,
          (c) => {
            servers.setMetricsCertificate(c);
            log.info('metrics certificate reloaded', { dir: c.source });
          },
          (e) => log.error('metrics certificate not reloaded; still serving the one before', { reason: e.message }),
        )
      : undefined;
  log.info('operator starting', {
    kinds: settings.kinds.map((k) => `${k.kind}.${k.group}/${k.version}`),
    server: kc.getCurrentCluster()?.server,
    metricsPort: servers.metricsPort,
    metricsScheme: servers.metricsScheme,
    metricsCertificate: secure?.certificate.source,
    healthPort: servers.healthPort,
    leaderElect: settings.leaderElect,
    appKinds: settings.serveAppKinds ? (settings.appKindSelector ?? 'all') : 'none',
  });

  // With leader election, only a leader within its renew deadline writes (checked at each write).
  // The metrics reviews (their own client) are not fenced: they are not writes, and a standby serves /metrics too.
  if (settings.leaderElect) {
    manager.electLeader({
      namespace: leaseNamespace(settings),
      name: settings.leaseName,
      identity,
      leaseDurationSeconds: settings.leaseDurationSeconds,
      renewDeadlineSeconds: settings.renewDeadlineSeconds,
      retryPeriodSeconds: settings.retryPeriodSeconds,
    });
  }

  let stopping = false;
  const shutdown = async (signal: string, code: number) => {
    if (stopping) return;
    stopping = true;
    log.info('shutting down', {
      signal,
      graceSeconds: settings.shutdownGraceSeconds,
      inFlight: manager.inFlight,
      queued: manager.queue.depth,
    });
    kindsFile?.stop();
    await appKinds.stop(settings.shutdownGraceSeconds * 1000);
    await manager.stop(settings.shutdownGraceSeconds * 1000);
    manager.rest.close();
    stopCertificateWatch?.();
    reviews?.close();
    await servers.close();
    log.info('stopped', { signal });
    process.exit(code);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM', 0));
  process.on('SIGINT', () => void shutdown('SIGINT', 0));

  const kindsFile = settings.configFile ? watchKindsFile(settings, manager, sources, appKinds, metrics, log) : undefined;
  // APPKIND_APPKIND_SELECTOR=none: AppKinds are never listed, so never written.
  if (settings.serveAppKinds) appKinds.start();
  // Like controller-runtime: a replica that lost the lease exits at once, without draining (its
  // writes are fenced already), and is restarted as a standby. Another replica may lead by now.
  await manager.start(() => {
    log.error('lost leadership; exiting');
    process.exit(1);
  });
}

let settings: OperatorSettings;
try {
  const { env, help } = applyFlags(process.argv.slice(2), process.env);
  if (help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  settings = loadSettings(env);
} catch (e) {
  if (!(e instanceof ConfigError)) throw e;
  process.stderr.write(`appkind-operator: ${e.message}\n`);
  process.exit(2);
}
const log = createLogger(settings.logLevel);
for (const message of settings.deprecations) log.warn(message);
process.on('unhandledRejection', (reason) => log.error('unhandled rejection', { error: reason }));
run(settings, log).catch((e: unknown) => {
  if (e instanceof ConfigError) {
    // A bad setting found at start (e.g. APPKIND_METRICS_CERT_DIR): the same exit as the other settings.
    log.error('operator failed to start', { reason: e.message });
    process.stderr.write(`appkind-operator: ${e.message}\n`);
    process.exit(2);
  }
  log.error('operator failed to start', { error: e });
  process.exit(1);
});
