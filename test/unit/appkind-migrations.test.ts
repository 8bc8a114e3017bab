// The storage migrations of AppKinds' CRDs: one run per CRD, its AppKind told of progress at the start,
// at most every few seconds and at the end (so status is not written per CR), a failure retried after
// a growing wait, and a stop that aborts the run.
import { describe, expect, test } from '@jest/globals';
import type { MigrationProgress, MigrationResult, StorageMigrationOptions } from '../../operator/controller/storage-migration.js';
import { StorageMigrations } from '../../operator/appkinds/migrations.js';
import { silentLogger } from '../../operator/runtime/log.js';

/** A migration the test drives by hand: reports progress, then finishes or fails when told. */
function driven() {
  const runs: { crd: string; opts: StorageMigrationOptions; finish: (r: MigrationResult) => void; fail: (e: Error) => void }[] = [];
  const migrate = (crd: string, opts: StorageMigrationOptions) =>
    new Promise<MigrationResult>((finish, fail) => {
      runs.push({ crd, opts, finish, fail });
      opts.signal?.addEventListener('abort', () => fail(opts.signal!.reason as Error));
    });
  return { runs, migrate };
}

const tick = () => new Promise<void>((r) => setImmediate(r));

function setUp() {
  let clock = 0;
  const changed: string[] = [];
  const { runs, migrate } = driven();
  const migrations = new StorageMigrations({ migrate, changed: (ak) => changed.push(ak), now: () => clock, reportEveryMs: 2000, retryMs: 5000 });
  return { migrations, runs, changed, advance: (ms: number) => (clock += ms) };
}

const progress = (migrated: number, total = 100): MigrationProgress => ({ version: 'v1', migrated, total });

describe('StorageMigrations', () => {
  test('one run per CRD: ensure() while it runs starts no other', () => {
    const { migrations, runs } = setUp();
    expect(migrations.ensure('movers.example.com', 'movers.example.com', silentLogger)).toEqual({ running: true });
    migrations.ensure('movers.example.com', 'movers.example.com', silentLogger);
    migrations.ensure('others.example.com', 'others.example.com', silentLogger);
    expect(runs.map((r) => r.crd)).toEqual(['movers.example.com', 'others.example.com']);
  });

  test('progress is told at the start, then at most every 2 s, and at the end; the state keeps the last', async () => {
    const { migrations, runs, changed, advance } = setUp();
    migrations.ensure('ak', 'movers.example.com', silentLogger);
    const report = runs[0]!.opts.onProgress!;
    report(progress(0));
    expect(changed).toEqual(['ak']);
    for (let i = 1; i < 10; i++) report(progress(i * 5));
    expect(changed).toEqual(['ak']);
    advance(2000);
    report(progress(50));
    expect(changed).toEqual(['ak', 'ak']);
    report(progress(100));
    runs[0]!.finish({ state: 'Done', progress: progress(100) });
    await tick();
    expect(changed).toEqual(['ak', 'ak', 'ak', 'ak']);
    expect(migrations.state('movers.example.com')).toEqual({ running: false, progress: progress(100) });
  });

  test('a failure is kept in the state, told, and tried again only after its wait, which doubles', async () => {
    const { migrations, runs, changed, advance } = setUp();
    migrations.ensure('ak', 'movers.example.com', silentLogger);
    runs[0]!.fail(new Error('Mover ns/m-1 not written back at example.com/v1: denied'));
    await tick();
    expect(changed).toEqual(['ak']);
    expect(migrations.ensure('ak', 'movers.example.com', silentLogger)).toEqual({
      running: false,
      failure: 'Mover ns/m-1 not written back at example.com/v1: denied',
      retryInMs: 5000,
    });
    expect(runs.length).toBe(1);
    advance(5000);
    migrations.ensure('ak', 'movers.example.com', silentLogger);
    expect(runs.length).toBe(2);
    runs[1]!.fail(new Error('again'));
    await tick();
    expect(migrations.state('movers.example.com')?.retryInMs).toBe(10_000);
    advance(10_000);
    migrations.ensure('ak', 'movers.example.com', silentLogger);
    runs[2]!.finish({ state: 'Done', progress: progress(100) });
    await tick();
    expect(migrations.state('movers.example.com')).toEqual({ running: false, progress: progress(100) });
  });

  test('stop() aborts the run and forgets it; after stopAll() nothing starts', async () => {
    const { migrations, runs } = setUp();
    migrations.ensure('ak', 'movers.example.com', silentLogger);
    await migrations.stop('movers.example.com');
    expect(runs[0]!.opts.signal?.aborted).toBe(true);
    expect(migrations.state('movers.example.com')).toBeUndefined();
    await migrations.stopAll();
    migrations.ensure('ak', 'movers.example.com', silentLogger);
    expect(runs.length).toBe(1);
  });
});
