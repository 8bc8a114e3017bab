// The jsii entry point: constructs, their props and the types a chart author needs to describe an app
// kind. Everything here must be expressible in every jsii language (no free functions or constants);
// render(), configuration loading and the control loop live in the operator package.
export * from './settings';
export * from './appkind';
export * from './resources';
export * from './app';
export * from './crd';
export * from './appkind-api';
export * from './imagepolicy';
export * from './bundle';
export * from './monitoring';
export * from './env';
export * from './probe';
export * from './volume';
export * from './exposure';
export * from './overrides';
export * from './rollout';
