import { describe, expect, it } from '@jest/globals';
import {
  BYTES_PER_PACKAGE,
  BuildProgress,
  DownloadProgress,
  type PlannedPackage,
  LineThrottle,
  downloadStatus,
  downloadSummary,
  estimateRemainingMs,
  formatDuration,
  parsePlan,
  progressLine,
  weightOf,
  withSizes,
} from '../../tools/controlplane/build-progress.js';

// The shape `go list -deps -f '{{.ImportPath}} {{len .GoFiles}} {{.Stale}} {{.Name}}'` prints.
const planText = [
  'internal/goarch 3 false goarch',
  'runtime 120 true runtime',
  'k8s.io/api/core/v1 9 true v1',
  'k8s.io/kubernetes/pkg/controlplane 19 true controlplane',
  'k8s.io/kubernetes/cmd/kube-apiserver 1 true main',
  'go: downloading k8s.io/api v0.37.2',
  '',
].join('\n');

describe('parsePlan', () => {
  it('reads path, file count, staleness and main-ness, skipping other lines', () => {
    const plan = parsePlan(planText);
    expect(plan.map((p) => p.path)).toEqual([
      'internal/goarch',
      'runtime',
      'k8s.io/api/core/v1',
      'k8s.io/kubernetes/pkg/controlplane',
      'k8s.io/kubernetes/cmd/kube-apiserver',
    ]);
    expect(plan[0]).toEqual({ path: 'internal/goarch', files: 3, stale: false, main: false });
    expect(plan[4]).toEqual({ path: 'k8s.io/kubernetes/cmd/kube-apiserver', files: 1, stale: true, main: true });
  });
});

describe('parsePlan (tab-separated, with folders and files)', () => {
  it('reads the folder and Go file names, and withSizes sums the stale packages\' file sizes', () => {
    const text = [
      'internal/goarch\t2\tfalse\tgoarch\t/go/src/internal/goarch\tgoarch.go,zgoarch_amd64.go',
      'k8s.io/api/core/v1\t3\ttrue\tv1\t/mod/k8s.io/api@v0.37.2/core/v1\ttypes.go,generated.pb.go,register.go',
      'local.invalid/controlplane/k8s/cmd/etcd\t1\ttrue\tmain\t/repo/k8s/cmd/etcd\tmain.go',
      'empty/pkg\t0\ttrue\tpkg\t/mod/empty\t',
      'go: downloading k8s.io/api v0.37.2',
    ].join('\n');
    const plan = parsePlan(text);
    expect(plan).toHaveLength(4);
    expect(plan[1]).toEqual({
      path: 'k8s.io/api/core/v1',
      files: 3,
      stale: true,
      main: false,
      dir: '/mod/k8s.io/api@v0.37.2/core/v1',
      goFiles: ['types.go', 'generated.pb.go', 'register.go'],
    });
    expect(plan[3].goFiles).toEqual([]);
    const sizes: Record<string, number> = {
      '/mod/k8s.io/api@v0.37.2/core/v1/types.go': 1000,
      '/mod/k8s.io/api@v0.37.2/core/v1/generated.pb.go': 5000,
      '/repo/k8s/cmd/etcd/main.go': 70,
    };
    const sized = withSizes(plan, (f) => sizes[f] ?? 0);
    expect(sized.map((p) => p.bytes)).toEqual([undefined, 6000, 70, 0]);
  });
});

describe('weightOf', () => {
  const pkg = (path: string, bytes?: number): PlannedPackage => ({ path, files: 4, stale: true, main: false, bytes });
  it('is file count + 1 without sizes, 1 + size / BYTES_PER_PACKAGE with them, doubled for k8s.io', () => {
    expect(weightOf(pkg('github.com/x/y'))).toBe(5);
    expect(weightOf(pkg('github.com/x/y', 0))).toBe(1);
    expect(weightOf(pkg('github.com/x/y', BYTES_PER_PACKAGE * 3))).toBe(4);
    expect(weightOf(pkg('k8s.io/api/core/v1', BYTES_PER_PACKAGE * 3))).toBe(8);
  });

  it('makes a big generated package weigh more than many small ones in the estimate', () => {
    const plan = [pkg('k8s.io/kubernetes/pkg/generated/openapi', 4_000_000), ...[1, 2, 3, 4].map((i) => pkg(`std${i}`, 10_000))];
    const p = new BuildProgress(plan, 0);
    for (const i of [1, 2, 3, 4]) p.observe(`std${i}`);
    // 4 small packages (1.05 each) done in 60 s; the openapi package weighs 2 * 21 = 42
    const s = p.snapshot(60_000);
    expect(s).toMatchObject({ done: 4, total: 5 });
    expect(s.remainingMs).toBe(Math.round((60_000 * 42) / 4.2));
  });
});

describe('DownloadProgress', () => {
  it('counts go: downloading lines, keeps the latest, and lets other lines by', () => {
    const d = new DownloadProgress(0);
    expect(downloadStatus(d.snapshot(3_000))).toBe('planning the build (go list -deps), 3s elapsed');
    expect(downloadSummary(d.snapshot(3_000))).toBeUndefined();
    expect(d.observe('go: downloading k8s.io/api v0.37.2')).toBe(true);
    expect(d.observe('go: downloading github.com/spf13/cobra v1.10.2')).toBe(true);
    expect(d.observe('go: k8s.io/api@v0.37.2: verifying module: checksum mismatch')).toBe(false);
    expect(d.observe('k8s.io/api/core/v1')).toBe(false);
    const s = d.snapshot(75_000);
    expect(s).toEqual({ count: 2, latest: 'github.com/spf13/cobra v1.10.2', elapsedMs: 75_000 });
    expect(downloadStatus(s)).toBe(
      'downloading Go modules (first run): 2 so far, 1m15s elapsed, latest github.com/spf13/cobra v1.10.2',
    );
    expect(downloadSummary(s)).toBe('controlplane: downloaded 2 Go modules in 1m15s');
  });
});

describe('BuildProgress', () => {
  it('counts the stale library packages go build -v names, once each, and passes other lines by', () => {
    const p = new BuildProgress(parsePlan(planText), 0);
    expect(p.snapshot(0)).toMatchObject({ done: 0, total: 3, linking: [] });
    expect(p.observe('runtime')).toBe(true);
    expect(p.observe('runtime')).toBe(true);
    expect(p.observe('# k8s.io/api/core/v1')).toBe(false);
    expect(p.observe('go: downloading k8s.io/api v0.37.2')).toBe(false);
    expect(p.observe('  k8s.io/api/core/v1  ')).toBe(true);
    expect(p.snapshot(1000)).toMatchObject({ done: 2, total: 3, elapsedMs: 1000 });
  });

  it('grows the total when go compiles a package the plan thought cached', () => {
    const p = new BuildProgress(parsePlan(planText), 0);
    p.observe('internal/goarch');
    expect(p.snapshot(0)).toMatchObject({ done: 1, total: 4 });
  });

  it('reports main packages as linking, apart from the package count', () => {
    const p = new BuildProgress(parsePlan(planText), 0);
    for (const path of ['runtime', 'k8s.io/api/core/v1', 'k8s.io/kubernetes/pkg/controlplane']) p.observe(path);
    p.observe('k8s.io/kubernetes/cmd/kube-apiserver');
    const s = p.snapshot(60_000);
    expect(s).toMatchObject({ done: 3, total: 3, linking: ['kube-apiserver'], remainingMs: 0 });
    expect(progressLine('etcd kube-apiserver', s)).toBe(
      'controlplane: etcd kube-apiserver: 3/3 packages compiled (100%), 1m00s elapsed, linking kube-apiserver',
    );
  });

  it('estimates the time left from the file-weighted share done', () => {
    const p = new BuildProgress(parsePlan(planText), 0);
    p.observe('runtime'); // weight 121 of 121 + 10 + 20 = 151
    const s = p.snapshot(121_000);
    expect(s.remainingMs).toBe(30_000);
    expect(progressLine('k8s', s)).toBe('controlplane: k8s: 1/3 packages compiled (33%), 2m01s elapsed, about 30s left + linking');
  });
});

describe('estimateRemainingMs', () => {
  it('is undefined until 1% of the work or 10 s are behind it', () => {
    expect(estimateRemainingMs(60_000, 0, 1000)).toBeUndefined();
    expect(estimateRemainingMs(60_000, 5, 1000)).toBeUndefined();
    expect(estimateRemainingMs(5_000, 500, 1000)).toBeUndefined();
  });
  it('scales the elapsed time by the remaining share, and is 0 when all is done', () => {
    expect(estimateRemainingMs(60_000, 250, 1000)).toBe(180_000);
    expect(estimateRemainingMs(60_000, 1000, 1000)).toBe(0);
    expect(estimateRemainingMs(60_000, 0, 0)).toBe(0);
  });
});

describe('formatDuration', () => {
  it('prints seconds, minutes and hours compactly', () => {
    expect(formatDuration(4_000)).toBe('4s');
    expect(formatDuration(65_000)).toBe('1m05s');
    expect(formatDuration(3_700_000)).toBe('1h01m40s');
    expect(formatDuration(-5)).toBe('0s');
  });
});

describe('LineThrottle', () => {
  it('lets the first line through, then at most one per interval', () => {
    const t = new LineThrottle(15_000);
    expect([0, 1_000, 14_999, 15_000, 20_000, 30_000, 45_001].map((now) => t.due(now))).toEqual([
      true,
      false,
      false,
      true,
      false,
      true,
      true,
    ]);
  });
});
