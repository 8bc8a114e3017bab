// Writes docs/grafana-dashboard.json, OperatorMonitoring's Grafana dashboard for the default bundle
// (operator appkind-operator in appkind-system), for a Grafana without the dashboard sidecar. Run with
// `npm run dashboard` after changing lib/src/monitoring.ts; test/unit/monitoring.test.ts fails when
// the checked-in file is stale.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { App, Chart } from 'cdk8s';
import { OperatorBundle, OperatorMonitoring } from 'cdk8s-appkind';
import { SAMPLE_KIND } from 'appkind-operator/kinds';

const chart = new Chart(new App(), 'docs');
const monitoring = new OperatorMonitoring(chart, 'monitoring', { bundle: new OperatorBundle(chart, 'operator', { kinds: [SAMPLE_KIND] }) });
const file = join(import.meta.dirname, '..', 'docs', 'grafana-dashboard.json');
writeFileSync(file, `${monitoring.dashboardJson}\n`);
console.log(`wrote ${file}`);
