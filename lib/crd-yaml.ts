import { App, Chart, Yaml } from 'cdk8s';
import { AppKind } from './appkind.js';
import { AppKindCrd, crdName } from './crd.js';

/** File name of a kind's checked-in CRD under crd/: `<group>_<plural>.yaml`, as operator-sdk named them. */
export function crdFileName(appKind: AppKind): string {
  return `${appKind.group}_${appKind.plural}.yaml`;
}

/** The CRD of a kind as one YAML document, exactly as written to crd/. */
export function crdYaml(appKind: AppKind): string {
  const chart = new Chart(new App(), crdName(appKind), { disableResourceNameHashes: true });
  new AppKindCrd(chart, 'crd', { appKind });
  return Yaml.stringify(...chart.toJson());
}
