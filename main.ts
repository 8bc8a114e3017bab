// The cdk8s app: `npx cdk8s synth` writes the static manifests of every configured kind to dist/.
import { App } from 'cdk8s';
import { ConfigError, loadAppKinds } from './lib/config.js';
import { addKindCharts } from './lib/sample.js';

try {
  const app = new App();
  for (const kind of loadAppKinds(process.env)) addKindCharts(app, kind);
  app.synth();
} catch (e) {
  if (!(e instanceof ConfigError)) throw e;
  console.error(`cdk8s synth: ${e.message}`);
  process.exit(1);
}
