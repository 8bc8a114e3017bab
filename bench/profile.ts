// `npm run bench -- --profile <dir>`: what a run costs, recorded for a look afterwards. The operator
// runs under `node --cpu-prof`; kube-apiserver serves /debug/pprof and this takes back-to-back CPU
// profiles of it (merge them with `go tool pprof -top <dir>/floor-300-*.pprof`) and snapshots its
// /metrics at each phase (request counts and durations by verb and resource, watch events and sizes).
import type { KubeConfig } from '@kubernetes/client-node';
import { mkdirSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';

/** GET of a kube-apiserver path as the kubeconfig's user (admin), the body as bytes. */
function get(kc: KubeConfig, path: string, timeoutMs: number): Promise<Buffer> {
  const cluster = kc.getCurrentCluster()!;
  const user = kc.getCurrentUser();
  const ca = cluster.caData ? Buffer.from(cluster.caData, 'base64') : undefined;
  return new Promise((resolve, reject) => {
    const req = request(`${cluster.server}${path}`, { ca, headers: user?.token ? { Authorization: `Bearer ${user.token}` } : {}, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks)) : reject(new Error(`GET ${path}: HTTP ${res.statusCode}`))));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: timeout`)));
    req.on('error', reject);
    req.end();
  });
}

/** Records one control plane's kube-apiserver: CPU profiles back to back, /metrics at each mark. */
export class ApiserverRecorder {
  private phase = 'create';
  private stopped = false;
  private loop?: Promise<void>;
  private seq = 0;

  constructor(private readonly kc: KubeConfig, private readonly dir: string, private readonly prefix: string) {
    mkdirSync(dir, { recursive: true });
  }

  /** Starts profiling (20 s profiles, one after the other, named by the phase they began in). */
  start(): void {
    this.loop = (async () => {
      while (!this.stopped) {
        const name = `${this.prefix}-${this.phase}-${String(++this.seq).padStart(3, '0')}.pprof`;
        try {
          writeFileSync(join(this.dir, name), await get(this.kc, '/debug/pprof/profile?seconds=20', 40_000));
        } catch (e) {
          process.stderr.write(`bench: apiserver profile ${name}: ${(e as Error).message}\n`);
          await new Promise((r) => setTimeout(r, 1000));
        }
      }
    })();
  }

  /** Snapshots /metrics as `<prefix>-<phase>.metrics` and names the profiles from now on `phase`. */
  async mark(phase: string): Promise<void> {
    this.phase = phase;
    writeFileSync(join(this.dir, `${this.prefix}-${phase}.metrics`), await get(this.kc, '/metrics', 30_000));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }
}
