import { describe, expect, it } from '@jest/globals';
import { conditionCounts, KindResources, OperatorMetrics, queueHooks } from '../../operator/runtime/metrics.js';
import { WorkQueue } from '../../operator/runtime/queue.js';

describe('OperatorMetrics', () => {
  it('exposes controller-runtime style names with their labels', async () => {
    const m = new OperatorMetrics({ defaultMetrics: false });
    m.reconcile('EchoFlask', 'success', 0.02);
    m.reconcile('EchoFlask', 'error', 0.5);
    m.queueDepth('EchoFlask', 3);
    m.retry('EchoFlask');
    m.apiRequest('patch', 200);
    m.apiRequest('GET', 404);
    m.leader('appkind-operator', true);
    m.throttled('patch', 429);
    m.throttled('WATCH', 429);
    m.throttled('PATCH', 429);
    const { body, contentType } = await m.expose();
    expect(contentType).toMatch(/^text\/plain/);
    expect(body).toContain('controller_runtime_reconcile_total{controller="EchoFlask",result="success"} 1');
    expect(body).toContain('controller_runtime_reconcile_total{controller="EchoFlask",result="error"} 1');
    expect(body).toContain('controller_runtime_reconcile_errors_total{controller="EchoFlask"} 1');
    expect(body).toContain('controller_runtime_reconcile_time_seconds_count{controller="EchoFlask"} 2');
    expect(body).toContain('controller_runtime_reconcile_time_seconds_bucket{le="0.025",controller="EchoFlask"} 1');
    expect(body).toContain('workqueue_depth{name="EchoFlask"} 3');
    expect(body).toContain('workqueue_retries_total{name="EchoFlask"} 1');
    expect(body).toContain('rest_client_requests_total{code="200",method="PATCH"} 1');
    expect(body).toContain('rest_client_requests_total{code="404",method="GET"} 1');
    expect(body).toContain('leader_election_master_status{name="appkind-operator"} 1');
    expect(body).toContain('appkind_rest_client_throttled_total{code="429",method="PATCH"} 2');
    expect(body).toContain('appkind_rest_client_throttled_total{code="429",method="WATCH"} 1');
    expect(body).not.toContain('process_cpu'); // default metrics were turned off
  });

  it('collects the default process metrics on its own registry', async () => {
    const m = new OperatorMetrics();
    const { body } = await m.expose();
    expect(body).toContain('process_cpu_user_seconds_total');
    expect(body).toContain('nodejs_eventloop_lag_seconds');
  });

  it('feeds reconcile, depth and retry metrics from queue hooks, zero before the first reconcile', async () => {
    const m = new OperatorMetrics({ defaultMetrics: false });
    const hooks = queueHooks(m, 'appkind', (key) => key.split('/')[0]!);
    expect((await m.expose()).body).toContain('controller_runtime_reconcile_total{controller="appkind",result="requeue"} 0');
    let failed = false;
    const q = new WorkQueue(
      async (key) => {
        if (key.startsWith('Takara/') && !failed) {
          failed = true;
          throw new Error('once');
        }
      },
      { workers: 1, baseDelayMs: 1 },
      hooks,
    );
    q.add('EchoFlask/default/a');
    q.add('Takara/default/b');
    q.start();
    await q.whenIdle();
    const { body } = await m.expose();
    expect(body).toContain('controller_runtime_reconcile_total{controller="EchoFlask",result="success"} 1');
    expect(body).toContain('controller_runtime_reconcile_total{controller="Takara",result="error"} 1');
    expect(body).toContain('controller_runtime_reconcile_total{controller="Takara",result="success"} 1');
    expect(body).toContain('workqueue_retries_total{name="appkind"} 1');
    expect(body).toContain('workqueue_depth{name="appkind"} 0');
    // Three runs taken from the queue: EchoFlask, Takara's failure and its retry.
    expect(body).toContain('workqueue_queue_duration_seconds_count{name="appkind"} 3');
  });

  it('counts CRs by kind and by condition at each scrape: one series per kind, type and status, never one per CR', async () => {
    const m = new OperatorMetrics({ defaultMetrics: false });
    const cond = (type: string, status: string) => ({ type, status });
    let kinds: KindResources[] = [
      {
        kind: 'EchoFlask',
        resources: [
          { status: { conditions: [cond('Ready', 'True'), cond('Degraded', 'False')] } },
          { status: { conditions: [cond('Ready', 'False'), cond('Degraded', 'True')] } },
          { status: { conditions: [cond('Ready', 'False'), cond('Degraded', 'True')] } },
          {}, // no status yet: counted, under no condition
        ],
      },
      { kind: 'Takara', resources: [] },
    ];
    m.countResources(() => kinds);
    let { body } = await m.expose();
    expect(body).toContain('appkind_resources{kind="EchoFlask"} 4');
    expect(body).toContain('appkind_resources{kind="Takara"} 0');
    expect(body).toContain('appkind_resource_conditions{kind="EchoFlask",type="Ready",status="True"} 1');
    expect(body).toContain('appkind_resource_conditions{kind="EchoFlask",type="Ready",status="False"} 2');
    expect(body).toContain('appkind_resource_conditions{kind="EchoFlask",type="Degraded",status="True"} 2');
    // Ready's series exist at zero for a kind without CRs, so "CRs - Ready True" always matches.
    expect(body).toContain('appkind_resource_conditions{kind="Takara",type="Ready",status="True"} 0');
    expect(body).not.toContain('appkind_resource_conditions{kind="Takara",type="Degraded"');
    expect(body.split('\n').filter((l) => l.startsWith('appkind_resource_conditions{'))).toHaveLength(3 + 3 + 3);

    // A kind no longer served leaves no series behind.
    kinds = kinds.slice(0, 1);
    ({ body } = await m.expose());
    expect(body).not.toContain('kind="Takara"');
  });

  it('conditionCounts keeps a status other than True, False and Unknown as it is', () => {
    const { totals, conditions } = conditionCounts([{ kind: 'K', resources: [{ status: { conditions: [{ type: 'Stalled', status: 'Odd' }] } }] }]);
    expect(totals).toEqual(new Map([['K', 1]]));
    expect(conditions).toContainEqual({ kind: 'K', type: 'Stalled', status: 'Odd', count: 1 });
    expect(conditions).toContainEqual({ kind: 'K', type: 'Stalled', status: 'True', count: 0 });
  });
});
