// The CRDs of app kinds, as objects to apply and as the YAML checked in under crd/.
import { App, Chart, Yaml } from 'cdk8s';
import { AppKind, AppKindCrd } from 'cdk8s-appkind';
import { KubeObject } from './render.js';

/** File name of a kind's checked-in CRD under crd/: `<group>_<plural>.yaml`, as operator-sdk named them. */
export function crdFileName(appKind: AppKind): string {
  return `${appKind.group}_${appKind.plural}.yaml`;
}

/** The CRD objects of the kinds, as plain objects to apply (`npm start`, tests). */
export function crdObjects(kinds: AppKind[]): KubeObject[] {
  const chart = new Chart(new App(), 'crds', { disableResourceNameHashes: true });
  for (const appKind of kinds) new AppKindCrd(chart, AppKindCrd.nameOf(appKind), { appKind });
  return chart.toJson() as KubeObject[];
}

/** The CRD of a kind as one YAML document, exactly as written to crd/. */
export function crdYaml(appKind: AppKind): string {
  return Yaml.stringify(...crdObjects([appKind]));
}
