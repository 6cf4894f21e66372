// The schema browser: databases, their tables, each table's columns (tags with value
// counts, fields with types, time), series count, partitions, TTL, rollups and models.

import { objects, quoteIdent, ApiError } from './api.js';

/** Tables and columns of `db` for the editor's completion: {table: [column, ...]}. */
export async function completionSchema(db) {
  const rows = await objects(
    db,
    `SELECT table_name, column_name FROM information_schema.columns
     WHERE table_schema = 'public' ORDER BY table_name, ordinal_position`,
  );
  const out = {};
  for (const r of rows) (out[r.table_name] ||= []).push(r.column_name);
  return out;
}

export async function databases() {
  return (await objects('public', 'SHOW DATABASES')).map((r) => r.name);
}

export class SchemaBrowser {
  constructor(tree, detail, status) {
    this.tree = tree;
    this.detail = detail;
    this.status = status;
  }

  async load(db) {
    this.db = db;
    this.status.textContent = 'loading…';
    this.tree.replaceChildren();
    const tables = await objects(db, 'SELECT * FROM tempora_tables() ORDER BY table_name');
    for (const t of tables) {
      const li = document.createElement('li');
      const b = document.createElement('button');
      b.className = 'table';
      b.textContent = t.table_name;
      b.onclick = () => this.show(t).catch((e) => this.fail(e));
      li.appendChild(b);
      this.tree.appendChild(li);
    }
    let models = [];
    try {
      models = await objects(db, 'SHOW MODELS');
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
    }
    if (models.length) {
      const li = document.createElement('li');
      li.className = 'models';
      li.textContent = `models: ${models.map((m) => m.name).join(', ')}`;
      this.tree.appendChild(li);
    }
    this.status.textContent = `${db}: ${tables.length} tables`;
    this.tree.dataset.tables = tables.length;
  }

  async show(t) {
    const name = t.table_name;
    const cols = await objects(this.db, `DESCRIBE ${quoteIdent(name)}`);
    const tags = cols.filter((c) => c.kind === 'tag');
    const counts = tags.length
      ? (
          await objects(
            this.db,
            `SELECT ${tags.map((c, i) => `count(DISTINCT ${quoteIdent(c.column_name)}) AS c${i}`).join(', ')}
             FROM ${quoteIdent(name)}`,
          )
        )[0]
      : {};
    const series = tags.length
      ? (
          await objects(
            this.db,
            `SELECT count(*) AS n FROM (SELECT DISTINCT ${tags.map((c) => quoteIdent(c.column_name)).join(', ')} FROM ${quoteIdent(name)}) s`,
          )
        )[0].n
      : 1;
    const d = this.detail;
    d.replaceChildren();
    const h = document.createElement('h2');
    h.textContent = name;
    const facts = document.createElement('dl');
    for (const [k, v] of [
      ['series', series],
      ['partitions', t.partitions],
      ['files', `${t.files} (${(t.bytes / 1048576).toFixed(1)} MiB)`],
      ['TTL', t.ttl + (t.own_ttl ? ' (its own)' : '')],
      ['partition width', t.partition],
      ['rollups', t.rollups],
    ]) {
      const dt = document.createElement('dt');
      dt.textContent = k;
      const dd = document.createElement('dd');
      dd.textContent = String(v);
      dd.dataset.fact = k;
      facts.append(dt, dd);
    }
    const table = document.createElement('table');
    table.innerHTML = '<thead><tr><th>column</th><th>kind</th><th>type</th><th>values</th></tr></thead>';
    const body = document.createElement('tbody');
    for (const c of cols) {
      const tr = document.createElement('tr');
      const i = tags.indexOf(c);
      for (const v of [c.column_name, c.kind, c.data_type, i >= 0 ? counts['c' + i] : '']) {
        const td = document.createElement('td');
        td.textContent = v === undefined || v === null ? '' : String(v);
        tr.appendChild(td);
      }
      body.appendChild(tr);
    }
    table.appendChild(body);
    d.append(h, facts, table);
    d.dataset.table = name;
  }

  fail(e) {
    this.status.textContent = e.message;
  }
}
