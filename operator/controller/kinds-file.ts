// The kinds file (APPKIND_CONFIG) read again whenever it changes: in a cluster it is the operator's
// ConfigMap mounted as a volume, which the kubelet swaps in place after `kubectl edit`/`apply`. A valid
// edit is served without a restart; a bad one is refused with its reason, and the kinds served so far stay.
import { AppKind } from 'cdk8s-appkind';
import { FSWatcher, readFileSync, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import { kindsFromFile } from '../kinds/sources.js';
import { ConfigError } from '../kinds/validate.js';

export interface KindsFileHandlers {
  /** The file changed and is valid: these are the kinds to serve. */
  readonly valid: (kinds: AppKind[]) => void;
  /** The file changed and is not valid (or cannot be read): nothing changes but the report. */
  readonly invalid: (error: ConfigError) => void;
}

/**
 * Watches one kinds file. The kubelet replaces a mounted ConfigMap by renaming a symlink (`..data`)
 * in the file's folder, so the folder is watched, not the file; a poll backs the watch up (fs.watch
 * misses events on some file systems). Only a change of the file's text is handled.
 */
export class KindsFile {
  private text: string | undefined;
  private watcher?: FSWatcher;
  private timer?: NodeJS.Timeout;

  constructor(
    readonly path: string,
    private readonly handlers: KindsFileHandlers,
    private readonly pollMs = 5000,
  ) {
    this.text = readText(path);
  }

  start(): void {
    try {
      this.watcher = watch(dirname(this.path), (_event, file) => {
        if (!file || file === basename(this.path) || file.startsWith('..')) this.check();
      });
      this.watcher.on('error', () => this.watcher?.close());
    } catch {
      // No watch on this file system: the poll alone notices changes.
    }
    this.timer = setInterval(() => this.check(), this.pollMs);
    this.timer.unref();
  }

  stop(): void {
    this.watcher?.close();
    clearInterval(this.timer);
  }

  /** Reads the file; handles it when its text changed since the last read. */
  check(): void {
    const text = readText(this.path);
    if (text === this.text) return;
    this.text = text;
    try {
      this.handlers.valid(kindsFromFile(this.path));
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      this.handlers.invalid(e);
    }
  }
}

/** The file's text, or undefined when it cannot be read (kindsFromFile then says why). */
function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}
