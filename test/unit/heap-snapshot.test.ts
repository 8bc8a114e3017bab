import { describe, expect, it } from '@jest/globals';
import { analyzeHeapSnapshot, type HeapSnapshotFile } from '../../bench/heap-snapshot.js';

const NODE_TYPES = ['hidden', 'array', 'string', 'object', 'code', 'closure', 'regexp', 'number', 'native', 'synthetic', 'concatenated string', 'sliced string', 'symbol', 'bigint', 'object shape'];
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
    snapshot: { meta: { node_fields: ['type', 'name', 'id', 'self_size', 'edge_count'], node_types: [NODE_TYPES], edge_fields: ['type', 'name_or_index', 'to_node'], edge_types: [EDGE_TYPES] } },
    nodes: flatNodes,
    edges: flatEdges,
    strings,
  };
}

describe('analyzeHeapSnapshot', () => {
  // An informer whose store holds one object; one string of it, its prototype and the Maps' hidden
  // class are also held from elsewhere, and a weak reference to the object keeps nothing alive.
  const obj = (name: string, size: number, ...edges: NonNullable<Node['edges']>): Node => ({ type: 'object', name, size, edges });
  const str = (name: string, size: number): Node => ({ type: 'string', name, size });
  const prop = (name: string, to: string): [string, string, string] => ['property', name, to];
  const file = snapshot({
    root: { type: 'synthetic', name: '', size: 0, edges: ['informer', 'other', 'queue', 'proto'].map((to, i) => ['element', i + 1, to]) },
    informer: obj('Informer', 40, prop('source', 'source'), prop('store', 'store'), prop('indices', 'indices')),
    source: obj('Object', 24, prop('kind', 'kindName'), prop('labelSelector', 'selector')),
    kindName: str('Deployment', 20),
    selector: str('a=b', 16),
    store: obj('Map', 32, ['internal', 'table', 'table'], ['internal', 'map', 'shape']),
    shape: { type: 'object shape', name: 'system / Map', size: 80 },
    table: { type: 'array', name: 'system / OrderedHashMap', size: 64, edges: [['internal', '1', 'key'], ['internal', '2', 'entry']] },
    key: str('ns/a', 24),
    entry: obj('Object', 100, prop('metadata', 'metadata'), prop('__proto__', 'proto')),
    proto: obj('Object', 500),
    metadata: obj('Object', 60, prop('name', 'name'), prop('image', 'image')),
    name: str('a', 200),
    image: str('flask', 300),
    indices: obj('Map', 32, ['internal', 'map', 'shape']),
    other: obj('Object', 10, prop('image', 'image'), prop('copy', 'copy'), ['weak', 'ref', 'entry']),
    copy: str('flask', 300),
    queue: obj('WorkQueue', 40, prop('events', 'events'), prop('baseDelayMs', 'delay')),
    events: obj('Map', 32),
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
