// The kinds file's JSON Schema lives in the library, beside the AppKind API's CRD built from it.
export {
  CONFIG_SCHEMA,
  configSchemaJson,
  DEFINITIONS,
  KIND_PROPERTIES,
  structuredSettingsSchema,
} from 'cdk8s-appkind/build/kind-schema.js';
