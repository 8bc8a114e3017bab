// `npm run chart`: writes charts/appkind-operator/files/kinds.yaml, what serving the chart's kinds
// (its values.yaml) installs, rendered by the constructs (tools/release/chart.ts). A unit test fails
// when it is stale.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CHART_DIR, KIND_OBJECTS_FILE, chartKinds, kindObjectsFile } from '../tools/release/chart.js';

writeFileSync(join(CHART_DIR, KIND_OBJECTS_FILE), kindObjectsFile(chartKinds()));
process.stderr.write(`chart: wrote ${join('charts', 'appkind-operator', KIND_OBJECTS_FILE)}\n`);
