/**
 * Which container images the CRs of one app kind may run.
 *
 * Pattern syntax (small on purpose, so the API server can check it with CEL and a reader can check it
 * by eye):
 * - an exact image reference, e.g. `takeyan/flask:0.0.3`: that image only;
 * - a prefix ending in one `*`, e.g. `registry.example.com/*` (anything under that registry) or
 *   `takeyan/flask:*` (that repository, any tag): every image that starts with the text before `*`;
 * - `*` alone: any image (the behaviour before image policies; the kind then hands its CR authors
 *   every image the cluster can pull).
 *
 * `*` may appear only at the end; characters are those of image references (letters, digits and
 * `._-/:@`). The kind's own image is always allowed, so a kind that lists nothing runs its image only.
 *
 * @example
 * import { ImagePolicy } from 'cdk8s-appkind';
 *
 * const policy = new ImagePolicy('takeyan/flask:0.0.3', ['registry.example.com/*']);
 * policy.allows('registry.example.com/team/app:1.2'); // true
 * policy.allows('nginx:1.27'); // false: neither the kind's image nor under the registry
 */
export class ImagePolicy {
  /** Characters of an image reference, optionally followed by one trailing `*`; or `*` alone. */
  private static readonly PATTERN = /^(\*|[A-Za-z0-9][A-Za-z0-9._\-/:@]*\*?)$/;

  /**
   * Why `pattern` is not a valid image pattern, or undefined when it is.
   */
  public static problemOf(pattern: string): string | undefined {
    if (ImagePolicy.PATTERN.test(pattern)) return undefined;
    if (/\s/.test(pattern) || pattern === '') return `"${pattern}" is empty or contains white space`;
    if (pattern.slice(0, -1).includes('*')) return `"${pattern}" has a "*" before its end; "*" may only end a pattern`;
    return `"${pattern}" has characters an image reference cannot have; use letters, digits and ._-/:@ with an optional trailing "*"`;
  }

  /** The kind's image first, then the extra patterns, without duplicates. */
  public readonly patterns: string[];

  /**
   * @param image the kind's image, always allowed
   * @param allowedImages extra image patterns; see the class documentation for the syntax
   */
  constructor(image: string, allowedImages?: string[]) {
    for (const p of allowedImages ?? []) {
      const problem = ImagePolicy.problemOf(p);
      if (problem) throw new Error(`ImagePolicy: allowed image pattern ${problem}`);
    }
    this.patterns = [...new Set([image, ...(allowedImages ?? [])])];
  }

  /** Whether every image is allowed (a `*` pattern). */
  public get allowsAny(): boolean {
    return this.patterns.includes('*');
  }

  /** Whether a CR may run `image`. */
  public allows(image: string): boolean {
    return this.patterns.some((p) => (p.endsWith('*') ? image.startsWith(p.slice(0, -1)) : image === p));
  }

  /**
   * The CEL expression over the image string (`self`) that is true exactly when `allows` is, for an
   * `x-kubernetes-validations` rule on `spec.image`.
   */
  public celRule(): string {
    if (this.allowsAny) return 'true';
    return this.patterns
      .map((p) => (p.endsWith('*') ? `self.startsWith(${celString(p.slice(0, -1))})` : `self == ${celString(p)}`))
      .join(' || ');
  }

  /** The message a refused image gets, naming the allowed patterns. */
  public message(): string {
    return `spec.image is not allowed for this kind; allowed images: ${this.patterns.join(', ')}`;
  }
}

/** A CEL string literal. The pattern check admits neither quotes nor backslashes; escape them anyway. */
function celString(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}
