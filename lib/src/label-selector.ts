// The operator's AppKind selector (APPKIND_APPKIND_SELECTOR, OperatorBundle appKindSelector): a Kubernetes
// label selector checked here, so a typo is refused at synth and at start rather than by the first list.
// Internal: index.ts does not export it, so it is no part of the jsii API.

/** The selector value that turns the AppKind source off: the operator serves the kinds file alone. */
export const NO_APPKINDS = 'none';

/** Whether an appKindSelector as written (spaces around it allowed, as the operator trims it) serves no AppKind. */
export function servesNoAppKinds(selector: string | undefined): boolean {
  return selector?.trim() === NO_APPKINDS;
}

const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function keyProblem(key: string): string | undefined {
  const slash = key.lastIndexOf('/');
  const [prefix, name] = slash < 0 ? [undefined, key] : [key.slice(0, slash), key.slice(slash + 1)];
  if (prefix !== undefined && (prefix.length > 253 || !SUBDOMAIN.test(prefix))) return `the key prefix "${prefix}" is not a DNS subdomain`;
  if (name.length > 63 || !NAME.test(name)) return `the key "${key}" is not a label key (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)`;
  return undefined;
}

function valueProblem(value: string): string | undefined {
  if (value === '' || (value.length <= 63 && NAME.test(value))) return undefined;
  return `the value "${value}" is not a label value (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)`;
}

/** The requirements of a selector: split at commas outside parentheses. */
function requirements(selector: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      out.push(selector.slice(start, i));
      start = i + 1;
    }
  }
  out.push(selector.slice(start));
  return out.map((r) => r.trim());
}

/**
 * Why `selector` is not a Kubernetes label selector the operator can list AppKinds with (equality:
 * `k=v`, `k==v`, `k!=v`; set: `k in (a,b)`, `k notin (a,b)`, `k`, `!k`; comma-separated, all must
 * hold), or undefined when it is one. Empty selects everything.
 */
export function labelSelectorProblem(selector: string): string | undefined {
  if (selector.trim() === '') return undefined;
  for (const req of requirements(selector)) {
    if (req === '') return 'it has an empty requirement (a stray comma)';
    const set = /^(\S+)\s+(in|notin)\s*\(([^()]*)\)$/.exec(req);
    const equality = /^([^=!\s()]+)\s*(==|=|!=)\s*([^=!\s(),]*)$/.exec(req);
    const exists = /^(!?)\s*([^=!\s(),]+)$/.exec(req);
    const problem = set
      ? (keyProblem(set[1]!) ??
        (set[3]!.trim() === '' ? `"${req}" lists no value` : set[3]!.split(',').map((v) => valueProblem(v.trim())).find(Boolean)))
      : equality
        ? (keyProblem(equality[1]!) ?? valueProblem(equality[3]!))
        : exists
          ? keyProblem(exists[2]!)
          : `"${req}" is none of key=value, key!=value, key in (a,b), key notin (a,b), key, !key`;
    if (problem) return problem;
  }
  return undefined;
}
