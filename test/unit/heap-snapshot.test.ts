import { describe, expect, it } from '@jest/globals';
import { analyzeHeapSnapshot, type HeapSnapshotFile } from '../../bench/heap-snapshot.js';

const NODE_TYPES = [
  'hidden',
  'array',
  'string',
  'object',
  'code',
  'closure',
  'regexp',
  'number',
  'native',
  'synthetic',
  'concatenated string',
  'sliced string',
  'symbol',
  'bigint',
  'object shape',
];
const EDGE_TYPES = ['context', 'element', 'property', 'internal', 'hidden', 'shortcut', 'weak'];

interface Node {
  type: string;
  name: string;
  size: number;
  edges?: [type: string, name: string | number, to: string][];
}

/** A .heapsnapshot of `nodes` (the first is the root), in V8's flat layout. */
function snapshot(nodes: Record<string, Node>): HeapSnapshotFile {
  const ids = Object.keys(nodes);
  const strings: string[] = [];
  const str = (s: string) => (strings.includes(s) ? strings.indexOf(s) : strings.push(s) - 1);
  const flatNodes: number[] = [];
  const flatEdges: number[] = [];
  for (const [i, id] of ids.entries()) {
    const n = nodes[id]!;
    flatNodes.push(NODE_TYPES.indexOf(n.type), str(n.name), i + 1, n.size, n.edges?.length ?? 0);
    for (const [type, name, to] of n.edges ?? []) {
      flatEdges.push(EDGE_TYPES.indexOf(type), typeof name === 'number' ? name : str(name), ids.indexOf(to) * 5);
    }
  }
  return {
    snapshot: {
      meta: {
        node_fields: ['type', 'name', 'id', 'self_size', 'edge_count'],
        node_types: [NODE_TYPES],
        edge_fields: ['type', 'name_or_index', 'to_node'],
        edge_types: [EDGE_TYPES],
      },
    },
    nodes: flatNodes,
    edges: flatEdges,
    strings,
  };
}

describe('analyzeHeapSnapshot', () => {
  // An informer whose store holds one object; one string of it, its prototype and the Maps' hidden
  // class are also held from elsewhere, and a weak reference to the object keeps nothing alive.
  const file = snapshot({
    root: {
      type: 'synthetic',
      name: '',
      size: 0,
      edges: [
        ['element', 1, 'informer'],
        ['element', 2, 'other'],
        ['element', 3, 'queue'],
        ['element', 4, 'proto'],
      ],
    },
    informer: {
      type: 'object',
      name: 'Informer',
      size: 40,
      edges: [
        ['property', 'source', 'source'],
        ['property', 'store', 'store'],
        ['property', 'indices', 'indices'],
      ],
    },
    source: {
      type: 'object',
      name: 'Object',
      size: 24,
      edges: [
        ['property', 'kind', 'kindName'],
        ['property', 'labelSelector', 'selector'],
      ],
    },
    kindName: { type: 'string', name: 'Deployment', size: 20 },
    selector: { type: 'string', name: 'a=b', size: 16 },
    store: {
      type: 'object',
      name: 'Map',
      size: 32,
      edges: [
        ['internal', 'table', 'table'],
        ['internal', 'map', 'shape'],
      ],
    },
    shape: { type: 'object shape', name: 'system / Map', size: 80 },
    table: {
      type: 'array',
      name: 'system / OrderedHashMap',
      size: 64,
      edges: [
        ['internal', '1', 'key'],
        ['internal', '2', 'entry'],
      ],
    },
    key: { type: 'string', name: 'ns/a', size: 24 },
    entry: {
      type: 'object',
      name: 'Object',
      size: 100,
      edges: [
        ['property', 'metadata', 'metadata'],
        ['property', '__proto__', 'proto'],
      ],
    },
    proto: { type: 'object', name: 'Object', size: 500 },
    metadata: {
      type: 'object',
      name: 'Object',
      size: 60,
      edges: [
        ['property', 'name', 'name'],
        ['property', 'image', 'image'],
      ],
    },
    name: { type: 'string', name: 'a', size: 200 },
    image: { type: 'string', name: 'flask', size: 300 },
    indices: { type: 'object', name: 'Map', size: 32, edges: [['internal', 'map', 'shape']] },
    other: {
      type: 'object',
      name: 'Object',
      size: 10,
      edges: [
        ['property', 'image', 'image'],
        ['property', 'copy', 'copy'],
        ['weak', 'ref', 'entry'],
      ],
    },
    copy: { type: 'string', name: 'flask', size: 300 },
    queue: {
      type: 'object',
      name: 'WorkQueue',
      size: 40,
      edges: [
        ['property', 'events', 'events'],
        ['property', 'baseDelayMs', 'delay'],
      ],
    },
    events: { type: 'object', name: 'Map', size: 32 },
    delay: { type: 'number', name: 'smi number', size: 0 },
  });
  const breakdown = analyzeHeapSnapshot(file);
  const share = (what: string) => breakdown.shares.find((s) => s.what === what);

  it('retains for a store what only it holds: its table, keys and objects, not a string also held elsewhere nor a prototype', () => {
    expect(share('Deployment (a=b) store')).toEqual({
      what: 'Deployment (a=b) store',
      entries: 1,
      retained: 32 + 64 + 24 + 100 + 60 + 200,
      reachable: 100 + 60 + 200 + 300,
      strings: 200 + 300,
      repeatedStrings: 0,
    });
    expect(share('Deployment (a=b) indexes')?.retained).toBe(32);
  });

  it("reports the Map and Set fields of the operator's tables", () => {
    expect(share('WorkQueue.events')).toMatchObject({ entries: 0, retained: 32 });
    expect(breakdown.shares.map((s) => s.what).sort()).toEqual(['Deployment (a=b) indexes', 'Deployment (a=b) store', 'WorkQueue.events']);
  });

  it('counts every reachable byte once, and the string bytes whose value another string node holds', () => {
    expect(breakdown.total).toBe(40 + 24 + 20 + 16 + 32 + 80 + 64 + 24 + 100 + 500 + 60 + 200 + 300 + 32 + 10 + 300 + 40 + 32 + 0);
    expect(breakdown.strings).toEqual({ total: 20 + 16 + 24 + 200 + 300 + 300, repeated: 300 });
  });
});
