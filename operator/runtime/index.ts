// The controller runtime: domain-free pieces any controller is built from (REST client, informer and
// cache, work queue, leader election, throttling, health, metrics, logs, Events). Nothing here knows
// app kinds. Imported by package name, `appkind-operator/runtime`, by the test harness and the bench.
export { APPLY_PATCH, ApiError, RestClient } from './rest.js';
export { Informer } from './informer.js';
export { createLogger, type Logger, type LogLevel } from './log.js';
