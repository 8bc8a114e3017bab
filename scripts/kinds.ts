// `npm run kinds`: after an edit of the installed operator's kinds ConfigMap, installs what its kinds
// need in one command (their CRDs, the operator's RBAC for them, their -view/-edit roles) on the
// cluster of the current kubeconfig; `--print` writes that YAML to stdout instead
// (`npm run -s kinds -- --print | kubectl apply -f -`). See tools/release/kinds.ts.
// `--helm-values` needs no cluster: it writes the Helm chart's values `kinds`, `kindGroups` and `kindObjects`
// for the configured kinds (APPKIND_CONFIG, the six variables, else the sample kind) and APPKIND_KIND_GROUPS to stdout
// (`helm install|upgrade ... -f` that file; tools/release/chart.ts).
// Usage: npm run kinds -- [--namespace appkind-system] [--name appkind-operator] [--print | --helm-values]
import { KubeConfig } from '@kubernetes/client-node';
import { parseArgs } from 'node:util';
import { Yaml } from 'cdk8s';
import { ConfigError, kindGroups, loadAppKinds } from 'appkind-operator/kinds';
import { withPrefixedSettings } from 'appkind-operator/settings';
import { stringify } from 'yaml';
import { kindValues } from '../tools/release/chart.js';
import { RestClient } from 'appkind-operator/runtime';
import { installedKinds, installKinds } from '../tools/release/kinds.js';
import { kindsObjects } from '../tools/release/manifests.js';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { namespace: { type: 'string', default: 'appkind-system' }, name: { type: 'string', default: 'appkind-operator' }, print: { type: 'boolean' }, 'helm-values': { type: 'boolean' } },
    strict: true,
  });
  if (values['helm-values']) {
    const { env } = withPrefixedSettings(process.env);
    process.stdout.write(`# The appkind-operator chart's kinds and kindGroups and what serving them installs (npm run kinds -- --helm-values)\n`);
    process.stdout.write(stringify(kindValues(loadAppKinds(env), values.name, kindGroups(env)), { lineWidth: 0 }));
    return;
  }
  const kc = new KubeConfig();
  kc.loadFromDefault();
  if (values.print) {
    const rest = new RestClient(kc);
    try {
      const { kinds, watchNamespaces, kindGroups } = await installedKinds(rest, values.namespace, values.name);
      process.stdout.write(Yaml.stringify(...kindsObjects({ kinds, namespace: values.namespace, name: values.name, watchNamespaces, kindGroups })));
    } finally {
      rest.close();
    }
    return;
  }
  const objects = await installKinds(kc, values.namespace, values.name);
  for (const o of objects) process.stderr.write(`kinds: applied ${o.kind} ${o.metadata!.name}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`kinds: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(e instanceof ConfigError ? 2 : 1);
});
