import { describe, expect, it } from '@jest/globals';
import { OperatorMetrics, queueHooks } from '../../operator/runtime/metrics.js';
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
  });
});
