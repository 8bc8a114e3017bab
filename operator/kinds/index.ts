// What the cdk8s app, scripts, tools and the bench share with the operator: app kinds from their
// configuration, render() (the construct for one CR), the kinds' CRD YAML and the rules for changing a
// kind's CRD in a cluster. Imported by package name, `appkind-operator/kinds`.
export { ConfigError, kindsFromDocument, validateAppKind } from './validate.js';
export { KIND_VARIABLES, SAMPLE_KIND, kindFromEnv, kindsFromFile, kindGroups, loadAppKinds, watchNamespaces } from './sources.js';
export { CONFIG_SCHEMA, configSchemaJson } from './schema.js';
export { crdFileName, crdObjects, crdYaml } from './crd-yaml.js';
export { needsStorageMigration, refusedCrdChange, schemaRemovals, storageOf, storedVersionProblems } from './crd-change.js';
export { appPropsFor, overrideProblems, quantityValue, render, type AppResource, type AppSpec, type KubeObject } from './render.js';
