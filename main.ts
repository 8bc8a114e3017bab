// The cdk8s app: `npx cdk8s synth` writes the static manifests of every configured kind to dist/,
// and the operator's install bundle (dist/appkind-operator.k8s.yaml).
import { App, Chart } from 'cdk8s';
import { OperatorBundle } from 'cdk8s-appkind';
import { ConfigError, kindGroups, loadAppKinds, watchNamespaces } from 'appkind-operator/kinds';
import { appKindSelector, withPrefixedSettings } from 'appkind-operator/settings';
import { addKindCharts } from './sample.js';

try {
  const { env, deprecations } = withPrefixedSettings(process.env);
  for (const message of deprecations) console.error(`cdk8s synth: ${message}`);
  const app = new App();
  const kinds = loadAppKinds(env);
  for (const kind of kinds) addKindCharts(app, kind);
  new OperatorBundle(new Chart(app, 'appkind-operator', { disableResourceNameHashes: true }), 'bundle', {
    kinds,
    image: env.APPKIND_OPERATOR_IMAGE || undefined,
    namespace: env.APPKIND_OPERATOR_NAMESPACE || undefined,
    watchNamespaces: watchNamespaces(env),
    kindGroups: kindGroups(env),
    appKindSelector: appKindSelector(env),
  });
  app.synth();
} catch (e) {
  if (!(e instanceof ConfigError)) throw e;
  console.error(`cdk8s synth: ${e.message}`);
  process.exit(1);
}
