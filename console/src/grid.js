// A virtualised result grid: only the rows in view (plus a margin) are in the DOM, so a
// 100,000-row result scrolls as smoothly as a 10-row one.

const ROW = 24; // px, fixed row height
const MARGIN = 20; // rows rendered above and below the view

export class Grid {
  constructor(el) {
    this.el = el;
    this.columns = [];
    this.rows = [];
    el.innerHTML = '';
    this.head = div('grid-head');
    this.scroller = div('grid-scroll');
    this.spacer = div('grid-spacer');
    this.body = div('grid-body');
    this.spacer.appendChild(this.body);
    this.scroller.appendChild(this.spacer);
    el.append(this.head, this.scroller);
    this.scroller.addEventListener('scroll', () => {
      this.head.scrollLeft = this.scroller.scrollLeft;
      this.paint();
    });
    new ResizeObserver(() => this.paint()).observe(this.scroller);
  }

  show(columns, rows) {
    this.columns = columns;
    this.rows = rows;
    this.widths = columns.map((c, i) => width(c, rows, i));
    const total = this.widths.reduce((a, b) => a + b, 48);
    this.head.innerHTML = '';
    const hr = div('grid-row');
    hr.style.width = total + 'px';
    hr.appendChild(cell('#', 48, 'grid-n'));
    columns.forEach((c, i) => {
      const h = cell(c.name, this.widths[i]);
      h.title = `${c.name}: ${c.type}`;
      hr.appendChild(h);
    });
    this.head.appendChild(hr);
    this.spacer.style.height = rows.length * ROW + 'px';
    this.spacer.style.width = total + 'px';
    this.el.dataset.rows = rows.length;
    this.scroller.scrollTop = 0;
    this.painted = null;
    this.paint();
  }

  paint() {
    const first = Math.max(0, Math.floor(this.scroller.scrollTop / ROW) - MARGIN);
    const count = Math.ceil(this.scroller.clientHeight / ROW) + 2 * MARGIN;
    const last = Math.min(this.rows.length, first + count);
    if (this.painted && this.painted[0] === first && this.painted[1] === last) return;
    this.painted = [first, last];
    const frag = document.createDocumentFragment();
    for (let r = first; r < last; r++) {
      const tr = div('grid-row');
      tr.style.top = r * ROW + 'px';
      tr.appendChild(cell(String(r + 1), 48, 'grid-n'));
      this.rows[r].forEach((v, i) => tr.appendChild(cell(show(v), this.widths[i], v === null ? 'null' : '')));
      frag.appendChild(tr);
    }
    this.body.replaceChildren(frag);
  }
}

function div(cls) {
  const d = document.createElement('div');
  d.className = cls;
  return d;
}

function cell(text, w, cls = '') {
  const d = div('grid-cell ' + cls);
  d.style.width = w + 'px';
  d.textContent = text;
  return d;
}

function show(v) {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

function width(col, rows, i) {
  let n = col.name.length;
  for (let r = 0; r < Math.min(rows.length, 200); r++) n = Math.max(n, show(rows[r][i]).length);
  return Math.min(360, Math.max(60, n * 8 + 16));
}

/** The result as CSV text (RFC 4180 quoting). */
export function toCsv(columns, rows) {
  const q = (v) => {
    const s = v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
    return /[",\n\r]/.test(s) ? '"' + s.replaceAll('"', '""') + '"' : s;
  };
  return [columns.map((c) => q(c.name)).join(','), ...rows.map((r) => r.map(q).join(','))].join('\n') + '\n';
}
