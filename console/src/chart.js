// The chart: drawn when a result has a time column, one line per series (rows grouped by
// their text columns) and numeric column. Dragging across it zooms; the page can then run
// the query again over the zoomed range.

import uPlot from 'uplot';

const MAX_SERIES = 40;
const COLORS = ['#2f6fdf', '#d9480f', '#2b8a3e', '#9c36b5', '#e67700', '#0b7285', '#c2255c', '#5c940d'];

/** Seconds since the epoch of a JSON-encoded timestamp, or null. */
export function epochSeconds(v) {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') return v / 1e9;
  let s = String(v);
  if (!/[zZ]|[+-]\d\d:?\d\d$/.test(s)) s += 'Z';
  const t = Date.parse(s);
  return Number.isNaN(t) ? null : t / 1000;
}

const isTime = (c) => /^Timestamp/.test(c.type);
const isNumber = (c) => /^(Float|Int|UInt|Decimal)/.test(c.type);
const isText = (c) => /Utf8|Dictionary/.test(c.type);

/** The plot's data for a result: {x: [...], series: [{label, values}]}, or null. */
export function seriesOf(columns, rows) {
  const t = columns.findIndex(isTime);
  if (t < 0) return null;
  const nums = columns.map((c, i) => (isNumber(c) ? i : -1)).filter((i) => i >= 0);
  if (!nums.length) return null;
  const tags = columns.map((c, i) => (isText(c) ? i : -1)).filter((i) => i >= 0);
  const xs = new Map();
  const groups = new Map();
  for (const r of rows) {
    const x = epochSeconds(r[t]);
    if (x === null) continue;
    xs.set(x, true);
    const key = tags.map((i) => `${columns[i].name}=${r[i]}`).join(',');
    for (const n of nums) {
      const label = (key ? key + ' ' : '') + columns[n].name;
      if (!groups.has(label)) {
        if (groups.size >= MAX_SERIES) continue;
        groups.set(label, new Map());
      }
      groups.get(label).set(x, r[n] === null ? null : Number(r[n]));
    }
  }
  const x = [...xs.keys()].sort((a, b) => a - b);
  const series = [...groups].map(([label, m]) => ({ label, values: x.map((v) => (m.has(v) ? m.get(v) : null)) }));
  return { x, series };
}

export class Chart {
  constructor(el, onZoom) {
    this.el = el;
    this.onZoom = onZoom;
    this.plot = null;
  }

  /** Draws the result; returns false when it has nothing to chart. */
  show(columns, rows) {
    const d = seriesOf(columns, rows);
    if (this.plot) this.plot.destroy();
    this.plot = null;
    if (!d || !d.x.length) return false;
    const opts = {
      width: Math.max(300, this.el.clientWidth || 800),
      height: 280,
      series: [{}, ...d.series.map((s, i) => ({ label: s.label, stroke: COLORS[i % COLORS.length], spanGaps: false }))],
      axes: [{}, {}],
      cursor: { drag: { x: true, y: false } },
      hooks: {
        setSelect: [
          (u) => {
            if (u.select.width < 2) return;
            const from = u.posToVal(u.select.left, 'x');
            const to = u.posToVal(u.select.left + u.select.width, 'x');
            this.onZoom(from, to);
          },
        ],
      },
    };
    this.plot = new uPlot(opts, [d.x, ...d.series.map((s) => s.values)], this.el);
    this.el.dataset.series = d.series.length;
    this.el.dataset.points = d.x.length;
    return true;
  }

  resetZoom() {
    if (!this.plot) return;
    const xs = this.plot.data[0];
    this.plot.setScale('x', { min: xs[0], max: xs[xs.length - 1] });
  }
}
