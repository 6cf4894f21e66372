// The HTTP API as the console uses it: every request carries the token (when one is set)
// and the header that asks the server not to answer 401 with a browser password prompt.

const KEY = 'tempora.token';
let onUnauthorized = null;

export function token() {
  return sessionStorage.getItem(KEY) || '';
}

export function setToken(t) {
  if (t) sessionStorage.setItem(KEY, t);
  else sessionStorage.removeItem(KEY);
}

/** Called with a retry function when a request is refused for lack of credentials. */
export function whenUnauthorized(f) {
  onUnauthorized = f;
}

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export async function request(path, init = {}) {
  const headers = new Headers(init.headers || {});
  headers.set('X-Tempora-Console', '1');
  if (token()) headers.set('Authorization', 'Bearer ' + token());
  const r = await fetch(path, { ...init, headers });
  if (r.status === 401 && onUnauthorized) {
    await onUnauthorized();
    return request(path, init);
  }
  if (!r.ok) {
    let msg = r.statusText;
    try {
      const body = await r.text();
      try {
        msg = JSON.parse(body).error || body;
      } catch {
        msg = body || msg;
      }
    } catch {}
    throw new ApiError(r.status, msg);
  }
  return r;
}

/** Runs SQL; returns {columns: [{name, type}], rows: [[...]]}. */
export async function sql(db, text, format = 'json') {
  const q = new URLSearchParams({ db, format });
  const r = await request('/api/v1/sql?' + q, {
    method: 'POST',
    body: text,
    headers: { 'Content-Type': 'text/plain' },
  });
  return format === 'json' ? r.json() : r.blob();
}

/** The rows of a query as objects keyed by column name. */
export async function objects(db, text) {
  const res = await sql(db, text);
  return res.rows.map((row) => Object.fromEntries(res.columns.map((c, i) => [c.name, row[i]])));
}

export function quoteIdent(name) {
  return '"' + String(name).replaceAll('"', '""') + '"';
}

export function quoteLiteral(s) {
  return "'" + String(s).replaceAll("'", "''") + "'";
}
