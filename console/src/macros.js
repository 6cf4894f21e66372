// Time-range macros, spelled as Grafana spells them, so a query can follow the chart's zoom:
// $__timeFilter(col) → col >= 'from' AND col < 'to'; $__from, $__to → timestamp literals;
// $__interval → a bucket width (about 1,000 buckets over the range) such as 30s.

export const RANGES = [
  ['last 5m', 300],
  ['last 1h', 3600],
  ['last 6h', 6 * 3600],
  ['last 24h', 86400],
  ['last 7d', 7 * 86400],
  ['last 30d', 30 * 86400],
];

const STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400];

/** A bucket width in seconds giving about `points` buckets over `seconds`. */
export function intervalSeconds(seconds, points = 1000) {
  const want = seconds / points;
  return STEPS.find((s) => s >= want) ?? 86400 * Math.ceil(want / 86400);
}

/** The text with each macro replaced for the range {from, to} (epoch seconds). */
export function expandMacros(text, { from, to }) {
  const lit = (s) => `'${new Date(s * 1000).toISOString()}'`;
  return text
    .replace(/\$__timeFilter\(\s*("[^"]+"|[\w.]+)\s*\)/g, (_, c) => `${c} >= ${lit(from)} AND ${c} < ${lit(to)}`)
    .replace(/\$__from\b/g, lit(from))
    .replace(/\$__to\b/g, lit(to))
    .replace(/\$__interval\b/g, `${intervalSeconds(to - from)}s`);
}
