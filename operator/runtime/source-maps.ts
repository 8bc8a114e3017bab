// Inline source maps are not loaded into the operator's heap.
//
// Some dependencies ship each compiled file with its source map appended as a base64 data URL
// (cdk8s-plus-27's imports/k8s.js: 1.9 MB of its 2.5 MB). V8 keeps every module's source text, map
// included, for lazy compilation, and copies the map's URL out of it once more (the script's
// sourceMappingURL): ~5.8 MiB of the idle operator's 21 MiB of JavaScript heap (a heap
// snapshot). The operator never reads them: Node applies source maps only with
// --enable-source-maps, and stack traces name the compiled files either way.
import { registerHooks } from 'node:module';

const MARKER = '//# sourceMappingURL=data:';

/**
 * `source` without its inline source map (a data URL on the last line); unchanged when it has none.
 * A string comes back as bytes: a slice of it would be a V8 sliced string that keeps the whole text.
 */
export function withoutInlineSourceMap(source: string | Uint8Array): string | Uint8Array {
  if (typeof source === 'string' && !source.includes(MARKER)) return source;
  const bytes = typeof source === 'string' ? Buffer.from(source, 'utf8') : Buffer.from(source.buffer, source.byteOffset, source.byteLength);
  const at = bytes.lastIndexOf(MARKER);
  if (at < 0) return source;
  // Only a map that ends the file: whitespace at most after its line.
  const lineEnd = bytes.indexOf(0x0a, at);
  if (lineEnd >= 0 && bytes.subarray(lineEnd).toString('latin1').trim() !== '') return source;
  return bytes.subarray(0, at);
}

/**
 * From now on, JavaScript files loaded from node_modules (by import or require) are compiled without
 * their inline source map. Call before importing the modules it should apply to.
 */
export function dropInlineSourceMaps(): void {
  registerHooks({
    load(url, context, nextLoad) {
      const result = nextLoad(url, context);
      if (!url.includes('/node_modules/') || !/\.[cm]?js$/.test(url) || result.source === undefined || result.source === null)
        return result;
      if (typeof result.source !== 'string' && !(result.source instanceof Uint8Array)) return result;
      const source = withoutInlineSourceMap(result.source);
      return source === result.source ? result : { ...result, source };
    },
  });
}
