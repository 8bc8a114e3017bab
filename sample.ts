import { ApiObject, Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { AppKind, AppKindCrd } from 'cdk8s-appkind';
import { EchoFlask } from './imports/swallowlab.com.js';
import { AppResource, render } from 'appkind-operator/kinds';

/** The sample CR of a kind, as in the walkthrough: `example-<appName>` with `spec.size: 3`. */
export function sampleResource(appKind: AppKind, size = 3): AppResource {
  return {
    apiVersion: AppKindCrd.apiVersionOf(appKind),
    kind: appKind.kind,
    metadata: { name: `example-${appKind.appName}` },
    spec: { size },
  };
}

/** Adds the objects `render()` returns for a CR to a chart, unchanged. */
export function addRendered(chart: Chart, appKind: AppKind, cr: AppResource): void {
  for (const obj of render(appKind, cr)) new ApiObject(chart, `${obj.kind}-${obj.metadata.name}`, obj);
}

/** Adds a CR to a chart; the typed class for the walkthrough's EchoFlask, a plain ApiObject otherwise. */
export function addResource(scope: Construct, cr: AppResource): ApiObject {
  const isEchoFlask = cr.apiVersion === EchoFlask.GVK.apiVersion && cr.kind === EchoFlask.GVK.kind;
  if (isEchoFlask) return new EchoFlask(scope, cr.metadata.name, { metadata: cr.metadata, spec: cr.spec });
  return new ApiObject(scope, cr.metadata.name, { apiVersion: cr.apiVersion, kind: cr.kind, metadata: cr.metadata, spec: cr.spec });
}

/**
 * The static manifests of one kind: `<appName>-crd` (the CRD), `<appName>-sample` (a sample CR) and
 * `<appName>-sample-app` (what that CR stands for: Deployment and NodePort Service).
 */
export function addKindCharts(scope: Construct, appKind: AppKind): void {
  const cr = sampleResource(appKind);
  new AppKindCrd(new Chart(scope, `${appKind.appName}-crd`, { disableResourceNameHashes: true }), 'crd', { appKind });
  addResource(new Chart(scope, `${appKind.appName}-sample`, { disableResourceNameHashes: true }), cr);
  addRendered(new Chart(scope, `${appKind.appName}-sample-app`, { disableResourceNameHashes: true }), appKind, cr);
}
