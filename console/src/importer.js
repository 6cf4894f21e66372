// CSV import: the server previews the file's first rows (its importer's own type inference),
// the user picks the table, time column and tags, and the whole file goes to /api/v1/import.

import { request } from './api.js';

const PREVIEW_BYTES = 64 << 10;

export class Importer {
  constructor(els) {
    this.els = els;
    this.file = null;
    this.preview = null;
    els.file.onchange = () => this.pick().catch((e) => this.say(e.message));
    els.button.onclick = () => this.send().catch((e) => this.say(e.message));
    els.time.onchange = () => this.refresh().catch((e) => this.say(e.message));
  }

  say(t) {
    this.els.status.textContent = t;
  }

  async pick() {
    this.file = this.els.file.files[0];
    if (!this.file) return;
    if (!this.els.table.value) this.els.table.value = this.file.name.replace(/\.[^.]*$/, '').replace(/\W+/g, '_');
    this.head = await headOf(this.file);
    const header = this.head.split(/\r?\n/)[0].split(',').map((s) => s.trim().replace(/^"|"$/g, ''));
    this.els.time.replaceChildren(
      ...header.map((h) => {
        const o = document.createElement('option');
        o.textContent = h;
        o.selected = /^(time|timestamp|ts|date)$/i.test(h);
        return o;
      }),
    );
    await this.refresh();
  }

  tags() {
    return [...this.els.preview.querySelectorAll('input[data-tag]:checked')].map((i) => i.dataset.tag);
  }

  params(extra = {}) {
    return new URLSearchParams({
      db: this.els.db(),
      table: this.els.table.value || 'import',
      time_column: this.els.time.value,
      tags: this.tags().join(','),
      precision: this.els.precision.value,
      ...extra,
    });
  }

  async refresh() {
    const r = await request('/api/v1/import?' + this.params({ preview: '20' }), {
      method: 'POST',
      body: this.head,
      headers: { 'Content-Type': 'text/csv' },
    });
    this.preview = await r.json();
    this.render();
    this.els.button.disabled = false;
    this.say(`${this.file.name}: ${this.file.size} bytes`);
  }

  render() {
    const p = this.preview;
    const checked = new Set(this.tags());
    const t = document.createElement('table');
    t.className = 'preview';
    const head = document.createElement('thead');
    const names = document.createElement('tr');
    const kinds = document.createElement('tr');
    for (const c of p.columns) {
      const th = document.createElement('th');
      th.textContent = c.name;
      names.appendChild(th);
      const td = document.createElement('td');
      if (c.role === 'time') td.textContent = 'time';
      else {
        const l = document.createElement('label');
        const box = document.createElement('input');
        box.type = 'checkbox';
        box.dataset.tag = c.name;
        box.checked = checked.has(c.name) || c.role === 'tag';
        box.onchange = () => this.refresh().catch((e) => this.say(e.message));
        l.append(box, ' tag');
        const ty = document.createElement('span');
        ty.className = 'type';
        ty.textContent = c.role === 'tag' ? 'string' : c.type;
        ty.dataset.column = c.name;
        td.append(l, ' ', ty);
      }
      kinds.appendChild(td);
    }
    head.append(names, kinds);
    const body = document.createElement('tbody');
    for (const row of p.rows) {
      const tr = document.createElement('tr');
      for (const v of row) {
        const td = document.createElement('td');
        td.textContent = v;
        tr.appendChild(td);
      }
      body.appendChild(tr);
    }
    t.append(head, body);
    this.els.preview.replaceChildren(t);
  }

  async send() {
    this.say('importing…');
    const r = await request('/api/v1/import?' + this.params(), {
      method: 'POST',
      body: this.file,
      headers: { 'Content-Type': 'text/csv' },
    });
    void r;
    this.say(`imported ${this.file.name} into ${this.els.table.value}`);
    this.els.status.dataset.done = '1';
  }
}

/** The file's first rows: up to PREVIEW_BYTES, cut at the last line end. */
async function headOf(file) {
  const text = await file.slice(0, PREVIEW_BYTES).text();
  if (file.size <= PREVIEW_BYTES) return text;
  const end = text.lastIndexOf('\n');
  return end > 0 ? text.slice(0, end + 1) : text;
}
