// Public API of the package: constructs, render() and configuration of app kinds.
export * from './appkind.js';
export * from './app.js';
export * from './crd.js';
export * from './crd-yaml.js';
export * from './render.js';
export * from './sample.js';
export * from './config.js';
export * from './bundle.js';
export { EchoFlask, type EchoFlaskProps, type EchoFlaskSpec } from './imports/swallowlab.com.js';
export { Takara, type TakaraProps, type TakaraSpec } from './imports/maho.takara.org.js';
export * from './imagepolicy.js';
