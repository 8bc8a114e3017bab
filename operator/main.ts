#!/usr/bin/env node
// The operator process: `npm run operator` against the current kubeconfig, or in a cluster with the
// pod's ServiceAccount (KUBECONFIG, ~/.kube/config or in-cluster, as client-node's loadFromDefault
// finds them; runtime/kubeconfig.ts reads the usual ones without importing client-node).
// The image runs this file bundled with its dependencies into one (build/operator/main.js,
// scripts/build-operator.ts); run from the sources (`npm run operator`), or when the bundle loads
// client-node from node_modules, the dependencies' inline source maps are dropped as they load
// (runtime/source-maps.ts), so the program itself (run.ts) is imported only once the hook is in place.
import { limitHeapGrowth } from './runtime/heap.js';
import { dropInlineSourceMaps } from './runtime/source-maps.js';

limitHeapGrowth();
dropInlineSourceMaps();
await import('./run.js');
