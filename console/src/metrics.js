// The live page: /metrics (Prometheus text) read every two seconds; counters become rates,
// the query histogram a mean latency, and each figure a small chart of its last minutes.

import uPlot from 'uplot';
import { request } from './api.js';

const PERIOD_MS = 2000;
const KEEP = 150; // samples per chart (5 minutes)

/** The samples of a Prometheus text exposition: {name: value}, labels summed away. */
export function parseMetrics(text) {
  const out = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const v = Number(m[3]);
    if (Number.isNaN(v)) continue;
    if (m[1].endsWith('_bucket')) continue;
    out[m[1]] = (out[m[1]] || 0) + v;
  }
  return out;
}

/** The figures shown: each a function of the previous and current samples over dt seconds. */
export const FIGURES = [
  ['rows written /s', (a, b, dt) => rate(a, b, dt, 'tempora_rows_written_total')],
  ['ingest rows /s', (a, b, dt) => rate(a, b, dt, 'tempora_ingest_rows_total')],
  ['ingest queue depth', (a, b) => b.tempora_ingest_queue_depth ?? null],
  ['memtable MiB', (a, b) => (b.tempora_memtable_bytes ?? 0) / 1048576],
  ['queries /s', (a, b, dt) => rate(a, b, dt, 'tempora_queries_total')],
  ['mean query latency ms', (a, b) => {
    const n = b.tempora_query_duration_seconds_count - a.tempora_query_duration_seconds_count;
    const s = b.tempora_query_duration_seconds_sum - a.tempora_query_duration_seconds_sum;
    return n > 0 ? (1000 * s) / n : 0;
  }],
  ['queries running', (a, b) => b.tempora_queries_running ?? null],
  ['write stalls /s', (a, b, dt) => rate(a, b, dt, 'tempora_write_stalls_total')],
];

function rate(a, b, dt, name) {
  if (!(name in a) || !(name in b) || dt <= 0) return null;
  return Math.max(0, (b[name] - a[name]) / dt);
}

export class MetricsPage {
  constructor(el, status) {
    this.el = el;
    this.status = status;
    this.timer = null;
    this.prev = null;
    this.data = [[], ...FIGURES.map(() => [])];
    this.plots = [];
  }

  start() {
    if (this.timer) return;
    if (!this.plots.length) this.build();
    this.tick();
    this.timer = setInterval(() => this.tick(), PERIOD_MS);
  }

  stop() {
    clearInterval(this.timer);
    this.timer = null;
  }

  build() {
    this.el.replaceChildren();
    FIGURES.forEach(([label], i) => {
      const card = document.createElement('div');
      card.className = 'card';
      const h = document.createElement('h3');
      h.textContent = label;
      const v = document.createElement('div');
      v.className = 'value';
      v.dataset.figure = label;
      const box = document.createElement('div');
      card.append(h, v, box);
      this.el.appendChild(card);
      const plot = new uPlot(
        { width: 280, height: 90, legend: { show: false }, axes: [{ show: false }, { size: 40 }], series: [{}, { stroke: '#2f6fdf' }] },
        [[], []],
        box,
      );
      this.plots.push({ plot, value: v, index: i });
    });
  }

  async tick() {
    try {
      const r = await request('/metrics');
      const now = Date.now() / 1000;
      const cur = parseMetrics(await r.text());
      if (this.prev) {
        const dt = now - this.prev.t;
        this.data[0].push(now);
        FIGURES.forEach(([, f], i) => this.data[i + 1].push(f(this.prev.m, cur, dt)));
        if (this.data[0].length > KEEP) this.data.forEach((s) => s.shift());
        for (const p of this.plots) {
          const s = this.data[p.index + 1];
          const last = s[s.length - 1];
          p.value.textContent = last === null ? '–' : formatNumber(last);
          p.plot.setData([this.data[0], s]);
        }
      }
      this.prev = { t: now, m: cur };
      this.status.textContent = `updated ${new Date().toLocaleTimeString()}`;
    } catch (e) {
      this.status.textContent = e.message;
    }
  }
}

function formatNumber(v) {
  if (Math.abs(v) >= 100) return Math.round(v).toLocaleString();
  return v.toFixed(2);
}
