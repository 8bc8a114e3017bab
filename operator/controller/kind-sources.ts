// The kinds one operator serves come from two sources: the kinds file (or environment) and AppKind
// objects. The Manager serves their union; each source replaces only its own part.
import { AppKind, AppKindCrd } from 'cdk8s-appkind';
import type { KindChanges } from './manager.js';

/** Where served kinds are handed to: Manager.setKinds. */
export interface KindsSink {
  setKinds(kinds: AppKind[]): KindChanges;
}

/** The kinds of the kinds file and of AppKind objects (by AppKind name), merged for the Manager. */
export class KindSources {
  private fileKinds: AppKind[];
  private readonly appKinds = new Map<string, AppKind>();

  constructor(
    private readonly sink: KindsSink,
    fileKinds: AppKind[],
  ) {
    this.fileKinds = fileKinds;
  }

  /** The kinds file changed and is valid. */
  setFileKinds(kinds: AppKind[]): KindChanges {
    this.fileKinds = kinds;
    return this.apply();
  }

  /** Serves an AppKind's kind (or its new settings). */
  setAppKind(name: string, kind: AppKind): KindChanges {
    this.appKinds.set(name, kind);
    return this.apply();
  }

  /** Stops serving an AppKind's kind. */
  removeAppKind(name: string): KindChanges | undefined {
    if (!this.appKinds.delete(name)) return undefined;
    return this.apply();
  }

  /** The kind served for an AppKind, if any (not when the kinds file took its Kind or CRD since). */
  appKind(name: string): AppKind | undefined {
    const kind = this.appKinds.get(name);
    return kind && !this.inFile(kind) ? kind : undefined;
  }

  /** The kinds of the kinds file. */
  get file(): readonly AppKind[] {
    return this.fileKinds;
  }

  /** AppKind name and kind of every served AppKind. */
  get fromAppKinds(): ReadonlyMap<string, AppKind> {
    return this.appKinds;
  }

  /** Whether the kinds file serves this Kind or CRD: the file wins (its AppKind is then refused, KindConflict). */
  private inFile(kind: AppKind): boolean {
    return this.fileKinds.some((k) => k.kind === kind.kind || AppKindCrd.nameOf(k) === AppKindCrd.nameOf(kind));
  }

  private apply(): KindChanges {
    const fromAppKinds = [...this.appKinds.keys()].sort().map((n) => this.appKinds.get(n)!);
    return this.sink.setKinds([...this.fileKinds, ...fromAppKinds.filter((k) => !this.inFile(k))]);
  }
}
