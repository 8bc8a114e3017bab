// A shallow PromQL reader for the tests of the alert rules and dashboard: balanced brackets, known
// functions and operators, and the metric names an expression reads. Not a parser: no promtool here.

/** PromQL functions and aggregations the rules and panels may call. */
const FUNCTIONS = new Set([
  'abs', 'absent', 'avg', 'ceil', 'changes', 'clamp_max', 'clamp_min', 'count', 'delta', 'deriv', 'floor', 'group', 'histogram_quantile',
  'increase', 'irate', 'max', 'max_over_time', 'min', 'min_over_time', 'quantile', 'rate', 'resets', 'round', 'sum', 'topk', 'bottomk',
  'avg_over_time', 'count_over_time', 'label_replace', 'time', 'timestamp', 'vector', 'scalar', 'sort', 'sort_desc',
]);
const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset']);
/** Clauses whose parentheses hold label names, not expressions. */
const LABEL_LISTS = /\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)/g;

/** Why `expr` does not read as PromQL, or undefined. */
export function promqlProblem(expr: string): string | undefined {
  const stack: string[] = [];
  const pairs: Record<string, string> = { ')': '(', ']': '[', '}': '{' };
  let quoted = false;
  for (const ch of expr) {
    if (ch === '"') quoted = !quoted;
    if (quoted) continue;
    if ('([{'.includes(ch)) stack.push(ch);
    else if (ch in pairs && stack.pop() !== pairs[ch]) return `unbalanced "${ch}" in ${expr}`;
  }
  if (quoted) return `unterminated string in ${expr}`;
  if (stack.length) return `unclosed "${stack.join('')}" in ${expr}`;
  for (const m of bare(expr).matchAll(/([A-Za-z_:][A-Za-z0-9_:]*)\s*\(/g)) {
    if (!FUNCTIONS.has(m[1]!)) return `unknown function ${m[1]}() in ${expr}`;
  }
  for (const m of expr.matchAll(/\{([^}]*)\}/g)) {
    for (const matcher of m[1]!.split(',')) {
      if (!/^\s*[A-Za-z_][A-Za-z0-9_]*\s*(=|!=|=~|!~)\s*"[^"]*"\s*$/.test(matcher)) return `bad label matcher "${matcher}" in ${expr}`;
    }
  }
  for (const m of expr.matchAll(/\[([^\]]*)\]/g)) {
    if (!/^\d+[smhdw]$/.test(m[1]!)) return `bad range "[${m[1]}]" in ${expr}`;
  }
  return undefined;
}

/** The metric names `expr` reads: identifiers that are no function, keyword or label. */
export function metricNames(expr: string): string[] {
  const names = [...bare(expr).matchAll(/([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?/g)]
    .filter((m) => !m[2] && !KEYWORDS.has(m[1]!) && !FUNCTIONS.has(m[1]!))
    .map((m) => m[1]!);
  return [...new Set(names)];
}

/** `expr` without strings, label matchers, ranges, label lists and numbers. */
function bare(expr: string): string {
  return expr
    .replace(/"[^"]*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(LABEL_LISTS, ' ')
    .replace(/\b\d+(\.\d+)?\b/g, ' ');
}

/**
 * Names a Prometheus text exposition serves: each declared metric (`# TYPE`, with a histogram's
 * _bucket, _sum and _count), whether or not it has a series yet (a counter by label, such as the
 * throttled requests, has none until it first counts), and every sample's name.
 */
export function exposedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const declared = /^# TYPE ([A-Za-z_:][A-Za-z0-9_:]*) (\w+)/.exec(line);
    if (declared) {
      const [, name, type] = declared;
      names.add(name!);
      if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`);
      if (type === 'summary') for (const suffix of ['_sum', '_count']) names.add(`${name}${suffix}`);
    }
    const sample = /^[A-Za-z_:][A-Za-z0-9_:]*/.exec(line);
    if (sample) names.add(sample[0]);
  }
  return names;
}

/** A rendered object, as far as expressions() reads it. */
interface Rendered {
  kind?: string;
  metadata?: { name?: string };
  data?: Record<string, string>;
  spec?: unknown;
}

/** Every PromQL expression of the PrometheusRules' alerts and the dashboard ConfigMaps' panels, by where it is. */
export function expressions(objs: Rendered[]): { where: string; expr: string }[] {
  const rules = objs
    .filter((o) => o.kind === 'PrometheusRule')
    .flatMap((r) => (r.spec as { groups: { rules: { alert: string; expr: string }[] }[] }).groups.flatMap((g) => g.rules))
    .map((x) => ({ where: `alert ${x.alert}`, expr: x.expr }));
  const panels = objs
    .filter((o) => o.kind === 'ConfigMap' && o.metadata?.name?.endsWith('-dashboard'))
    .flatMap((c) => Object.values(c.data ?? {}).flatMap((json) => (JSON.parse(json) as { panels: { title: string; targets: { expr: string }[] }[] }).panels))
    .flatMap((p) => p.targets.map((t) => ({ where: `panel "${p.title}"`, expr: t.expr })));
  return [...rules, ...panels];
}
