// The SQL editor: CodeMirror 6 with PostgreSQL highlighting, completion of the session
// database's tables and columns, functions and Tempora's clauses, and the server's error
// marked where it points (errors name "line L column C").

import { EditorView, basicSetup } from 'codemirror';
import { keymap } from '@codemirror/view';
import { Compartment, EditorSelection, Prec } from '@codemirror/state';
import { sql, PostgreSQL } from '@codemirror/lang-sql';
import { linter, setDiagnostics } from '@codemirror/lint';

/** Functions offered besides the schema (DataFusion's common ones and Tempora's). */
export const FUNCTIONS = [
  'avg', 'count', 'sum', 'min', 'max', 'first_value', 'last_value', 'stddev', 'variance',
  'median', 'approx_percentile_cont', 'approx_distinct', 'date_bin', 'date_trunc', 'now',
  'to_timestamp', 'extract', 'abs', 'round', 'floor', 'ceil', 'coalesce', 'lag', 'lead',
  'row_number', 'rank', 'first', 'last', 'forecast', 'anomaly', 'tempora_tables',
  'tempora_columns', 'tempora_rollup', 'generate_series', 'current_setting', 'version',
];

/** Tempora's own clauses and statements, completed as keywords. */
export const EXTENSIONS = [
  'SAMPLE BY', 'FILL(PREV)', 'FILL(LINEAR)', 'FILL(NULL)', 'ALIGN TO CALENDAR', 'LATEST ON',
  'PARTITION BY', 'SHOW DATABASES', 'SHOW TAG VALUES FROM', 'WITH KEY =', 'DESCRIBE',
  'CREATE MODEL', 'SHOW MODELS', 'DESCRIBE MODEL', 'CREATE TOKEN', 'SHOW TOKENS',
];

/** The position a server error names, as {line, column}, or null. */
export function errorPosition(message) {
  const m = /line (\d+),? column (\d+)/i.exec(message) || /Line: (\d+), Column:? (\d+)/.exec(message);
  return m ? { line: Number(m[1]), column: Number(m[2]) } : null;
}

export class Editor {
  constructor(parent, { run, runSelection }) {
    this.language = new Compartment();
    this.view = new EditorView({
      parent,
      doc: localStorage.getItem('tempora.sql') || 'SELECT * FROM tempora_tables()',
      extensions: [
        basicSetup,
        this.language.of(sql({ dialect: PostgreSQL, upperCaseKeywords: true })),
        linter(() => [], { delay: 1e9 }),
        Prec.highest(
          keymap.of([
            { key: 'Mod-Enter', run: () => (run(), true) },
            { key: 'Mod-Shift-Enter', run: () => (runSelection(), true) },
          ]),
        ),
        EditorView.updateListener.of((u) => {
          if (u.docChanged) localStorage.setItem('tempora.sql', u.state.doc.toString());
        }),
        EditorView.theme({ '&': { height: '100%' }, '.cm-scroller': { fontFamily: 'ui-monospace, monospace' } }),
      ],
    });
  }

  text() {
    return this.view.state.doc.toString();
  }

  /** The selected text, or the whole text when nothing is selected. */
  selection() {
    const r = this.view.state.selection.main;
    return r.empty ? this.text() : this.view.state.sliceDoc(r.from, r.to);
  }

  /** Where the selection starts (line, column), so an error in it maps back to the text. */
  selectionStart() {
    const r = this.view.state.selection.main;
    if (r.empty) return { line: 1, column: 1 };
    const l = this.view.state.doc.lineAt(r.from);
    return { line: l.number, column: r.from - l.from + 1 };
  }

  setText(t) {
    this.view.dispatch({ changes: { from: 0, to: this.view.state.doc.length, insert: t } });
  }

  /** Tables and their columns for completion: {table: [column, ...]}. */
  setSchema(schema) {
    const options = [
      ...FUNCTIONS.map((f) => ({ label: f, type: 'function', apply: f + '(' })),
      ...EXTENSIONS.map((k) => ({ label: k, type: 'keyword' })),
    ];
    this.view.dispatch({
      effects: this.language.reconfigure([
        sql({ dialect: PostgreSQL, upperCaseKeywords: true, schema }),
        PostgreSQL.language.data.of({ autocomplete: completeFrom(options) }),
      ]),
    });
  }

  /** Marks `message` at the position it names (offset by where the run text started). */
  markError(message, start = { line: 1, column: 1 }) {
    const pos = errorPosition(message);
    const doc = this.view.state.doc;
    let from = 0;
    let to = doc.length;
    if (pos) {
      const lineNo = Math.min(doc.lines, pos.line + start.line - 1);
      const line = doc.line(lineNo);
      const col = pos.line === 1 ? pos.column + start.column - 1 : pos.column;
      from = Math.min(line.to, line.from + col - 1);
      const word = /^[\w."$]+/.exec(doc.sliceString(from, line.to));
      to = Math.max(from + 1, from + (word ? word[0].length : 1));
      to = Math.min(to, doc.length);
      this.view.dispatch({ selection: EditorSelection.cursor(from), scrollIntoView: true });
    }
    this.view.dispatch(setDiagnostics(this.view.state, [{ from, to, severity: 'error', message }]));
    return pos;
  }

  clearError() {
    this.view.dispatch(setDiagnostics(this.view.state, []));
  }
}

function completeFrom(options) {
  return (ctx) => {
    const w = ctx.matchBefore(/[\w ]*\w/);
    if (!w) return null;
    const word = ctx.matchBefore(/\w+/);
    if (!word || (word.from === word.to && !ctx.explicit)) return null;
    return { from: word.from, options, validFor: /^\w*$/ };
  };
}
