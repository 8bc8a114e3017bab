// node:http, loaded with require() rather than an ES module import. Importing a built-in as an ES
// module builds its namespace by reading every export, and node:http's lazy `WebSocket`,
// `CloseEvent` and `MessageEvent` getters then load Node's bundled undici (0.7 MiB of source and
// its compiled code): 18 MiB of RSS for a bare Node 24 process, ~7 MiB of the idle operator's
// (docs/benchmark.md). require() returns the module object and leaves the getters alone.
// Types come from `import type` (erased); everything the operator calls on node:http comes from here.
import { createRequire } from 'node:module';
import type * as NodeHttp from 'node:http';

const http = createRequire(import.meta.url)('node:http') as typeof NodeHttp;

export const { Agent: HttpAgent, createServer, request: httpRequest } = http;
export type HttpAgent = NodeHttp.Agent;
