// The console's page: tabs, the database picker, sign-in, and the query tab's run cycle
// (editor → /api/v1/sql → grid and chart).

import * as api from './api.js';
import { Editor } from './editor.js';
import { Grid, toCsv } from './grid.js';
import { Chart } from './chart.js';
import { SchemaBrowser, completionSchema, databases } from './schema.js';
import { Importer } from './importer.js';
import { MetricsPage } from './metrics.js';
import { expandMacros, RANGES } from './macros.js';

const $ = (id) => document.getElementById(id);
const state = { columns: [], rows: [], lastRun: '', range: null };

// Sign-in: a 401 opens the dialog; the request is retried with the token given.
api.whenUnauthorized(
  () =>
    new Promise((resolve) => {
      const d = $('login');
      if (d.open) return d.addEventListener('close', resolve, { once: true });
      $('login-error').hidden = !api.token();
      $('login-error').textContent = api.token() ? 'That token was refused.' : '';
      d.showModal();
      d.addEventListener(
        'close',
        () => {
          api.setToken($('login-token').value.trim());
          resolve();
        },
        { once: true },
      );
    }),
);
$('signout').onclick = () => {
  api.setToken('');
  location.reload();
};

const db = () => $('db').value || 'public';

const editor = new Editor($('editor'), { run: () => run(editor.text()), runSelection: () => runSelection() });
const grid = new Grid($('grid'));
const chart = new Chart($('chart'), (from, to) => zoomed(from, to));
const schema = new SchemaBrowser($('schema-tree'), $('schema-detail'), $('schema-status'));
const metrics = new MetricsPage($('metrics'), $('metrics-status'));
new Importer({
  file: $('csv-file'),
  table: $('csv-table'),
  time: $('csv-time'),
  precision: $('csv-precision'),
  button: $('csv-import'),
  status: $('csv-status'),
  preview: $('csv-preview'),
  db,
});

// Tabs.
for (const b of document.querySelectorAll('nav button')) {
  b.onclick = () => {
    for (const o of document.querySelectorAll('nav button')) o.classList.toggle('on', o === b);
    for (const t of document.querySelectorAll('.tab')) t.classList.toggle('on', t.id === 'tab-' + b.dataset.tab);
    if (b.dataset.tab === 'metrics') metrics.start();
    else metrics.stop();
    if (b.dataset.tab === 'schema') schema.load(db()).catch((e) => schema.fail(e));
  };
}
$('schema-refresh').onclick = () => schema.load(db()).catch((e) => schema.fail(e));

// The time range the $__timeFilter, $__from, $__to and $__interval macros stand for.
const rangeSelect = $('range');
for (const [label] of RANGES) {
  const o = document.createElement('option');
  o.textContent = label;
  rangeSelect.appendChild(o);
}
rangeSelect.value = 'last 1h';
rangeSelect.onchange = () => {
  state.range = null;
  if (state.lastRun) run(state.lastRun);
};

function currentRange() {
  if (state.range) return state.range;
  const [, seconds] = RANGES.find(([l]) => l === rangeSelect.value);
  const to = Date.now() / 1000;
  return { from: to - seconds, to };
}

$('run').onclick = () => run(editor.text());
$('run-selection').onclick = () => runSelection();
$('explain').onclick = () => run('EXPLAIN ' + editor.selection());

function runSelection() {
  return run(editor.selection(), editor.selectionStart());
}

async function run(text, start = { line: 1, column: 1 }) {
  state.lastRun = text;
  editor.clearError();
  $('error').hidden = true;
  $('status').textContent = 'running…';
  const t0 = performance.now();
  try {
    const res = await api.sql(db(), expandMacros(text, currentRange()));
    const ms = performance.now() - t0;
    state.columns = res.columns;
    state.rows = res.rows;
    grid.show(res.columns, res.rows);
    $('chart-box').hidden = false;
    const drawn = chart.show(res.columns, res.rows);
    $('chart-box').hidden = !drawn;
    $('zoom-query').hidden = true;
    $('zoom-reset').hidden = true;
    $('status').textContent = `${res.rows.length.toLocaleString()} rows in ${ms.toFixed(0)} ms`;
    $('dl-csv').disabled = $('dl-parquet').disabled = false;
  } catch (e) {
    $('status').textContent = 'failed';
    $('error').hidden = false;
    $('error').textContent = e.message;
    if (e instanceof api.ApiError) editor.markError(e.message, start);
  }
}

// Zoom: with macros in the text the query runs again over the zoomed range (finer
// buckets); otherwise the chart zooms and the range can be queried by wrapping the text.
function zoomed(from, to) {
  $('zoom-reset').hidden = false;
  if (/\$__/.test(state.lastRun)) {
    state.range = { from, to };
    $('chart-note').textContent = `range ${iso(from)} – ${iso(to)}`;
    run(state.lastRun);
    return;
  }
  const time = state.columns.find((c) => /^Timestamp/.test(c.type));
  $('zoom-query').hidden = !time;
  $('zoom-query').onclick = () => {
    const inner = state.lastRun.trim().replace(/;\s*$/, '');
    const q = `SELECT * FROM (${inner}) AS zoomed\nWHERE ${api.quoteIdent(time.name)} >= '${iso(from)}' AND ${api.quoteIdent(time.name)} < '${iso(to)}'`;
    editor.setText(q);
    run(q);
  };
}
$('zoom-reset').onclick = () => {
  if (state.range) {
    state.range = null;
    run(state.lastRun);
  } else chart.resetZoom();
};

function iso(seconds) {
  return new Date(seconds * 1000).toISOString();
}

// Downloads: CSV from the rows at hand; Parquet from the server.
$('dl-csv').onclick = () => save(new Blob([toCsv(state.columns, state.rows)], { type: 'text/csv' }), 'result.csv');
$('dl-parquet').onclick = async () => {
  try {
    save(await api.sql(db(), expandMacros(state.lastRun, currentRange()), 'parquet'), 'result.parquet');
  } catch (e) {
    $('status').textContent = e.message;
  }
};

function save(blob, name) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

// Databases and completion.
async function loadDatabases() {
  const names = await databases();
  const keep = localStorage.getItem('tempora.db');
  $('db').replaceChildren(
    ...names.map((n) => {
      const o = document.createElement('option');
      o.textContent = n;
      o.selected = n === keep;
      return o;
    }),
  );
  await refreshCompletion();
}

async function refreshCompletion() {
  try {
    editor.setSchema(await completionSchema(db()));
  } catch (e) {
    $('status').textContent = e.message;
  }
}

$('db').onchange = () => {
  localStorage.setItem('tempora.db', db());
  refreshCompletion();
};

loadDatabases().catch((e) => ($('status').textContent = e.message));
document.body.dataset.ready = '1';
