// What a V8 heap snapshot of the operator holds, by cache: retained sizes (the dominator tree, as
// Chrome DevTools' "Retained Size") of each informer's store and indexes and of the reconciler's
// tables, the JSON-like bytes reachable from each store (which also counts the strings it shares with
// other objects, which no single store retains), and how many of those string bytes repeat a value.

/** The parts of a `.heapsnapshot` file the analysis reads. */
export interface HeapSnapshotFile {
  snapshot: { meta: { node_fields: string[]; node_types: unknown[]; edge_fields: string[]; edge_types: unknown[] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** One row of the breakdown. */
export interface HeapShare {
  /** What holds the bytes: `Deployment store`, `RenderCache.entries`, ... */
  readonly what: string;
  /** Objects in the store (Map or Set entries). */
  readonly entries: number;
  /** Bytes only this holds (freed if it were dropped). */
  readonly retained: number;
  /** Bytes of the plain objects, arrays and strings reachable from it, shared ones included. */
  readonly reachable: number;
  /** Of `reachable`, bytes in strings. */
  readonly strings: number;
  /** Of `strings`, bytes in strings whose value another string node reachable from a store also holds (what interning would save). */
  readonly repeatedStrings: number;
}

export interface HeapBreakdown {
  /** Bytes of every node reachable from the root. */
  readonly total: number;
  readonly shares: HeapShare[];
  /** Bytes in strings anywhere in the heap, and in strings whose value another string node also holds. */
  readonly strings: { readonly total: number; readonly repeated: number };
}

/**
 * The owner classes whose Map and Set fields are reported, beside the informers (class names as the
 * bundle keeps them). None holds another's table (KindWaves.kinds holds its KindRollouts' apps), so
 * the rows add up.
 */
export const TABLE_OWNERS = [
  'RenderCache',
  'Expectations',
  'OwnStatusWrites',
  'AppKindStatusWriter',
  'RolloutReport',
  'StatusPacer',
  'DeletedChildren',
  'KindWaves',
  'ConflictWatches',
  'NodePortWaits',
  'WorkQueue',
  'EventRecorder',
  'Discovery',
  'ExpiringCache',
];

const STRING_TYPES = new Set(['string', 'concatenated string', 'sliced string']);
/** Node types of JSON-like data: objects, arrays, their backing stores, strings and numbers. */
const DATA_TYPES = new Set(['object', 'array', 'hidden', 'heap number', 'number', ...STRING_TYPES]);
/** Edges walked through JSON-like data: its properties and elements and their backing stores. */
const DATA_INTERNAL_EDGES = new Set(['properties', 'elements', 'table']);

/** The graph of a snapshot, in flat arrays. */
class Graph {
  readonly nodeCount: number;
  readonly type: Uint8Array;
  readonly name: Uint32Array;
  readonly selfSize: Float64Array;
  readonly firstEdge: Uint32Array;
  readonly edgeType: Uint8Array;
  /** Edge name: a string index, or an element index for element and hidden edges. */
  readonly edgeName: Uint32Array;
  readonly edgeTo: Uint32Array;
  readonly nodeTypes: string[];
  readonly edgeTypes: string[];

  constructor(readonly file: HeapSnapshotFile) {
    const meta = file.snapshot.meta;
    const nf = meta.node_fields.length;
    const ef = meta.edge_fields.length;
    this.nodeTypes = meta.node_types[0] as string[];
    this.edgeTypes = meta.edge_types[0] as string[];
    const [nType, nName, nSize, nEdges] = ['type', 'name', 'self_size', 'edge_count'].map((f) => meta.node_fields.indexOf(f));
    const [eType, eName, eTo] = ['type', 'name_or_index', 'to_node'].map((f) => meta.edge_fields.indexOf(f));
    const n = (this.nodeCount = file.nodes.length / nf);
    const m = file.edges.length / ef;
    this.type = new Uint8Array(n);
    this.name = new Uint32Array(n);
    this.selfSize = new Float64Array(n);
    this.firstEdge = new Uint32Array(n + 1);
    let edge = 0;
    for (let i = 0; i < n; i++) {
      const at = i * nf;
      this.type[i] = file.nodes[at + nType!]!;
      this.name[i] = file.nodes[at + nName!]!;
      this.selfSize[i] = file.nodes[at + nSize!]!;
      this.firstEdge[i] = edge;
      edge += file.nodes[at + nEdges!]!;
    }
    this.firstEdge[n] = edge;
    this.edgeType = new Uint8Array(m);
    this.edgeName = new Uint32Array(m);
    this.edgeTo = new Uint32Array(m);
    for (let e = 0; e < m; e++) {
      this.edgeType[e] = file.edges[e * ef + eType!]!;
      this.edgeName[e] = file.edges[e * ef + eName!]!;
      this.edgeTo[e] = file.edges[e * ef + eTo!]! / nf;
    }
  }

  typeOf(node: number): string {
    return this.nodeTypes[this.type[node]!]!;
  }

  nameOf(node: number): string {
    return this.file.strings[this.name[node]!]!;
  }

  edgeTypeOf(e: number): string {
    return this.edgeTypes[this.edgeType[e]!]!;
  }

  /** A property, context or internal edge's name ('' for element and hidden edges, which are numbered). */
  edgeNameOf(e: number): string {
    const t = this.edgeTypeOf(e);
    return t === 'element' || t === 'hidden' ? '' : this.file.strings[this.edgeName[e]!]!;
  }

  /** The node a named property edge of `node` leads to. */
  property(node: number, name: string): number | undefined {
    for (let e = this.firstEdge[node]!; e < this.firstEdge[node + 1]!; e++) {
      if (this.edgeTypeOf(e) === 'property' && this.edgeNameOf(e) === name) return this.edgeTo[e];
    }
    return undefined;
  }
}

/**
 * Retained size per node: the dominator tree over strong edges (weak ones do not keep anything alive),
 * by Cooper, Harvey and Kennedy's iterative algorithm over a depth-first postorder from the root.
 */
function retainedSizes(g: Graph): { retained: Float64Array; reachable: Uint8Array } {
  const n = g.nodeCount;
  const weak = g.edgeTypes.indexOf('weak');
  const post = new Int32Array(n).fill(-1);
  const order = new Uint32Array(n);
  const reachable = new Uint8Array(n);
  // Iterative DFS: a stack of nodes and the next edge of each.
  const stack = new Uint32Array(n);
  const next = new Uint32Array(n);
  let top = 0;
  let count = 0;
  stack[0] = 0;
  next[0] = g.firstEdge[0]!;
  reachable[0] = 1;
  while (top >= 0) {
    const v = stack[top]!;
    let e = next[top]!;
    const end = g.firstEdge[v + 1]!;
    while (e < end && (g.edgeType[e] === weak || reachable[g.edgeTo[e]!])) e++;
    if (e < end) {
      next[top] = e + 1;
      const w = g.edgeTo[e]!;
      reachable[w] = 1;
      top++;
      stack[top] = w;
      next[top] = g.firstEdge[w]!;
    } else {
      post[v] = count;
      order[count++] = v;
      top--;
    }
  }
  // Predecessors over strong edges between reachable nodes.
  const predCount = new Uint32Array(n + 1);
  for (let v = 0; v < n; v++) {
    if (!reachable[v]) continue;
    for (let e = g.firstEdge[v]!; e < g.firstEdge[v + 1]!; e++) if (g.edgeType[e] !== weak) predCount[g.edgeTo[e]! + 1]!++;
  }
  for (let v = 0; v < n; v++) predCount[v + 1]! += predCount[v]!;
  const preds = new Uint32Array(predCount[n]!);
  const fill = predCount.slice(0, n);
  for (let v = 0; v < n; v++) {
    if (!reachable[v]) continue;
    for (let e = g.firstEdge[v]!; e < g.firstEdge[v + 1]!; e++) if (g.edgeType[e] !== weak) preds[fill[g.edgeTo[e]!]!++] = v;
  }
  // idom by postorder number; -1 undefined.
  const idom = new Int32Array(count).fill(-1);
  const root = post[0]!;
  idom[root] = root;
  const intersect = (a: number, b: number) => {
    while (a !== b) {
      while (a < b) a = idom[a]!;
      while (b < a) b = idom[b]!;
    }
    return a;
  };
  for (let changed = true; changed; ) {
    changed = false;
    for (let p = count - 2; p >= 0; p--) {
      const v = order[p]!;
      let dom = -1;
      for (let i = predCount[v]!; i < predCount[v + 1]!; i++) {
        const q = post[preds[i]!]!;
        if (idom[q] === -1) continue;
        dom = dom === -1 ? q : intersect(q, dom);
      }
      if (dom !== -1 && idom[p] !== dom) {
        idom[p] = dom;
        changed = true;
      }
    }
  }
  const byPost = new Float64Array(count);
  for (let p = 0; p < count; p++) byPost[p] = g.selfSize[order[p]!]!;
  for (let p = 0; p < count - 1; p++) if (idom[p]! !== p && idom[p]! >= 0) byPost[idom[p]!]! += byPost[p]!;
  const retained = new Float64Array(n);
  for (let p = 0; p < count; p++) retained[order[p]!] = byPost[p]!;
  return { retained, reachable };
}

/** The entries of a Map or Set: the values (Map) or keys (Set) its hash table holds that are not strings, or all of them in a Set of strings. */
function tableEntries(g: Graph, collection: number): number[] {
  const table = [...edges(g, collection)].find((e) => g.edgeNameOf(e) === 'table');
  if (table === undefined) return [];
  const found: number[] = [];
  for (const e of edges(g, g.edgeTo[table]!)) {
    const t = g.edgeTypeOf(e);
    if (t === 'internal' && g.edgeNameOf(e) === 'map') continue;
    const to = g.edgeTo[e]!;
    const type = g.typeOf(to);
    if (type === 'number' || type === 'hidden' || g.nameOf(to) === 'system / Map') continue;
    found.push(to);
  }
  const objects = found.filter((v) => !STRING_TYPES.has(g.typeOf(v)));
  return g.nameOf(collection) === 'Set' && objects.length === 0 ? found : objects;
}

function* edges(g: Graph, node: number): Generator<number> {
  for (let e = g.firstEdge[node]!; e < g.firstEdge[node + 1]!; e++) yield e;
}

/** JSON-like nodes reachable from `starts`: plain objects, arrays, their backing stores, strings and numbers. */
function dataReachable(g: Graph, starts: number[], visited: Uint8Array): number[] {
  const found: number[] = [];
  const stack = [...starts];
  while (stack.length) {
    const v = stack.pop()!;
    if (visited[v]) continue;
    const type = g.typeOf(v);
    if (!DATA_TYPES.has(type)) continue;
    visited[v] = 1;
    found.push(v);
    if (type === 'object' && g.nameOf(v) !== 'Object' && g.nameOf(v) !== 'Array') continue;
    for (const e of edges(g, v)) {
      const t = g.edgeTypeOf(e);
      const name = g.edgeNameOf(e);
      if (t === 'element' || (t === 'property' && name !== '__proto__') || (t === 'internal' && DATA_INTERNAL_EDGES.has(name))) stack.push(g.edgeTo[e]!);
    }
  }
  return found;
}

/** The value of a string node (cons strings as V8 names them, which may be cut). */
const stringValue = (g: Graph, v: number) => g.nameOf(v);

/** A heap snapshot's bytes by cache, each of the informers and of the operator's tables (TABLE_OWNERS). */
export function analyzeHeapSnapshot(file: HeapSnapshotFile): HeapBreakdown {
  const g = new Graph(file);
  const { retained, reachable } = retainedSizes(g);
  let total = 0;
  let stringTotal = 0;
  const byValue = new Map<string, number>();
  for (let v = 0; v < g.nodeCount; v++) {
    if (!reachable[v]) continue;
    total += g.selfSize[v]!;
    if (STRING_TYPES.has(g.typeOf(v))) {
      stringTotal += g.selfSize[v]!;
      const s = stringValue(g, v);
      byValue.set(s, (byValue.get(s) ?? 0) + 1);
    }
  }
  let stringRepeated = 0;
  const seenValue = new Set<string>();
  for (let v = 0; v < g.nodeCount; v++) {
    if (!reachable[v] || !STRING_TYPES.has(g.typeOf(v))) continue;
    const s = stringValue(g, v);
    if (seenValue.has(s)) stringRepeated += g.selfSize[v]!;
    else seenValue.add(s);
  }

  // Each store's data, walked in turn; a node reached from an earlier store is counted there.
  const visited = new Uint8Array(g.nodeCount);
  const storeValues = new Set<string>();
  const shares: HeapShare[] = [];
  const share = (what: string, collection: number, walk: boolean) => {
    const entries = tableEntries(g, collection);
    let reach = 0;
    let strings = 0;
    let repeated = 0;
    if (walk) {
      for (const v of dataReachable(g, entries, visited)) {
        reach += g.selfSize[v]!;
        if (!STRING_TYPES.has(g.typeOf(v))) continue;
        strings += g.selfSize[v]!;
        const s = stringValue(g, v);
        if (storeValues.has(s)) repeated += g.selfSize[v]!;
        else storeValues.add(s);
      }
    }
    shares.push({ what, entries: entries.length, retained: retained[collection]!, reachable: reach, strings, repeatedStrings: repeated });
  };

  const ownerOf = (v: number) => g.nameOf(v);
  for (let v = 0; v < g.nodeCount; v++) {
    if (!reachable[v] || g.typeOf(v) !== 'object') continue;
    const cls = ownerOf(v);
    if (cls === 'Informer') {
      const source = g.property(v, 'source');
      const field = (f: string) => {
        const at = source === undefined ? undefined : g.property(source, f);
        return at === undefined ? undefined : g.nameOf(at);
      };
      const selector = field('fieldSelector') ?? field('labelSelector');
      const label = `${field('kind') ?? '?'}${selector ? ` (${selector})` : ''}`;
      const store = g.property(v, 'store');
      const indices = g.property(v, 'indices');
      if (store !== undefined) share(`${label} store`, store, true);
      if (indices !== undefined) shares.push({ what: `${label} indexes`, entries: 0, retained: retained[indices]!, reachable: 0, strings: 0, repeatedStrings: 0 });
    } else if (TABLE_OWNERS.includes(cls)) {
      for (const e of edges(g, v)) {
        if (g.edgeTypeOf(e) !== 'property') continue;
        const to = g.edgeTo[e]!;
        const kind = g.nameOf(to);
        if (g.typeOf(to) === 'object' && (kind === 'Map' || kind === 'Set')) share(`${cls}.${g.edgeNameOf(e)}`, to, false);
      }
    } else if (/Registry$/.test(cls) && g.property(v, '_metrics') !== undefined) {
      const metrics = g.property(v, '_metrics')!;
      shares.push({ what: 'metrics registry', entries: 0, retained: retained[metrics]!, reachable: 0, strings: 0, repeatedStrings: 0 });
    }
  }
  // Several instances of one class (a KindRollout per kind) add up in one row.
  const merged = new Map<string, HeapShare>();
  for (const s of shares) {
    const m = merged.get(s.what);
    merged.set(
      s.what,
      m
        ? {
            what: s.what,
            entries: m.entries + s.entries,
            retained: m.retained + s.retained,
            reachable: m.reachable + s.reachable,
            strings: m.strings + s.strings,
            repeatedStrings: m.repeatedStrings + s.repeatedStrings,
          }
        : s,
    );
  }
  return { total, shares: [...merged.values()].sort((a, b) => b.retained - a.retained), strings: { total: stringTotal, repeated: stringRepeated } };
}
