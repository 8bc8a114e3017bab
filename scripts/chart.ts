// `npm run chart`: writes charts/appkind-operator/files/kinds.yaml, what serving the chart's kinds
// and kindGroups (its values.yaml) installs, and files/monitoring.yaml, OperatorMonitoring's objects, both rendered
// by the constructs (tools/release/chart.ts). A unit test fails when either is stale.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CHART_DIR, KIND_OBJECTS_FILE, MONITORING_FILE, chartKindGroups, chartKinds, kindObjectsFile, monitoringFile } from '../tools/release/chart.js';

for (const [file, text] of [[KIND_OBJECTS_FILE, kindObjectsFile(chartKinds(), chartKindGroups())], [MONITORING_FILE, monitoringFile(chartKinds())]] as const) {
  writeFileSync(join(CHART_DIR, file), text);
  process.stderr.write(`chart: wrote ${join('charts', 'appkind-operator', file)}\n`);
}
