"""The permission matrix of issue 26, end to end: every principal against every statement
class, over every client (HTTP with urllib, the InfluxDB 2 Python client, psql, psycopg and
pgJDBC on the PostgreSQL port), each cell's answer compared with the one the permission rules
give, and afterwards what each request did (or did not do) to the data.

Usage: auth_matrix.py HTTP_HOST:PORT PG_PORT PGJDBC_JAR TOKENS_JSON

TOKENS_JSON holds {"admin", "read", "write", "other", "revoked"}: the tokens of an admin, of
read on db1, of write on db1, of read and write on db2, and of a token already revoked. The
databases db1 and db2 must exist, each with a table `cpu` (tag `host`, float field `v`). This
program makes its own victims (tables, databases, buckets, tokens, marker rows) as admin, so
each principal drops, deletes or updates only its own and the effects can be told apart.

Principals: none (no credentials), wrong (a well-formed random token), revoked, read, write,
admin, other. On the PostgreSQL port, wrong logs in as the existing user `read` with the
random token as password, revoked as `revoked` with its token, none as `read` without a
password.

The PostgreSQL clients cover the three ways a statement arrives: psql the simple protocol,
psycopg (each statement prepared) a named extended-protocol statement, pgJDBC the unnamed one.
Two statements in one request (`SELECT 1; DROP TABLE ...`) must not smuggle the second.

A cell's answer: on HTTP the status code (a 401 must carry an "authentication failed" error
and a 403 a "permission denied" one, else the answer is reported as `401-badbody`); with the
InfluxDB client `OK` or ApiException.status; on the PostgreSQL clients `OK` or the SQLSTATE.
libpq does not expose the SQLSTATE of a failed connection, so psql and psycopg read it from
the message: "authentication failed" is 28P01 (the raw protocol cells check the code on the
wire). Without a password a client does not even try: the server asked for SCRAM, which is
the refusal, reported as PWREQ.

Effects: a request answered with success must have done its work, any other must have
changed nothing: rows written, deleted and updated (and `count(*)` of db1.cpu and db2.cpu
equal to the initial count plus exactly the accepted writes, minus the accepted deletes),
tables, databases, buckets and tokens created or dropped.

Also: INSERT ... SELECT needs read on its source (a token writing db1 and db2 but reading
only db2 must not copy db1 into db2); each HTTP credential spelling (Token, Bearer, Basic,
u/p) works for a valid token and gets 401 for a wrong one; the 401 bodies of no, wrong, revoked and `u=nobody&p=wrong`
credentials are identical; a revocation stops an open psycopg session at its next statement
(28P01); on the wire (SCRAM by hand) a wrong password, a revoked token and an unknown user
all fail with 28P01, an unknown user gets what an existing one gets (a stable salt of its
own: a salt shared by unknown names tells which names exist), and a query sent instead of
a password is not answered with rows; and a wrong token and an unknown user take the same time to be refused (medians within
[0.67, 1.5] of each other) on both ports.

Prints one line per cell, `cells N expected M`, and the timing medians; exits 1 listing the
cells that differ."""

import base64
import hashlib
import hmac
import json
import os
import secrets
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import psycopg
from influxdb_client import InfluxDBClient
from influxdb_client.client.write_api import SYNCHRONOUS
from influxdb_client.rest import ApiException

HTTP, PG_PORT, JAR, TOKENS = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
# libpq must see only the passwords given here (none means none).
os.environ.pop("PGPASSWORD", None)
os.environ["PGPASSFILE"] = "/nonexistent/tempora-pgpass"
TOK = json.load(open(TOKENS))
WRONG = "tmp_" + secrets.token_hex(32)
SECRET = {"wrong": WRONG, "revoked": TOK["revoked"], "read": TOK["read"],
          "write": TOK["write"], "admin": TOK["admin"], "other": TOK["other"]}
# The PostgreSQL user each principal logs in as.
PG_USER = {"none": "read", "wrong": "read", "revoked": "revoked", "read": "read",
           "write": "write", "admin": "admin", "other": "other"}

PRINCIPALS = ["none", "wrong", "revoked", "read", "write", "admin", "other"]
UNAUTHENTICATED = {"none", "wrong", "revoked"}
# (read databases, write databases, admin)
GRANTS = {"read": ({"db1"}, set(), False), "write": (set(), {"db1"}, False),
          "admin": (set(), set(), True), "other": ({"db2"}, {"db2"}, False)}
PG_CLIENTS = ["psql", "psycopg", "jdbc"]
TS = "2023-11-14T22:13:20Z"
NS = 1700000000000000000

cells = []       # (client, principal, class, expected, got)
effects = []     # (client, principal, class, succeeded, effect)


def allowed(p, perm, db):
    """The permission rules: admin implies all, write does not imply read, a statement of
    no database needs the permission on some database. DELETE and UPDATE read the rows they
    match, so they need read and write ("readwrite")."""
    if perm is None:
        return True
    if perm == "readwrite":
        return allowed(p, "read", db) and allowed(p, "write", db)
    if p in UNAUTHENTICATED:
        return False
    read, write, admin = GRANTS[p]
    if admin:
        return True
    if perm == "admin":
        return False
    dbs = read if perm == "read" else write
    return bool(dbs) if db is None else (db in dbs or "*" in dbs)


def record(client, p, cls, expected, got):
    cells.append((client, p, cls, expected, got))
    print(f"{'ok ' if expected == got else 'BAD'} {client:8} {p:8} {cls:22} "
          f"expected {expected:6} got {got}", flush=True)


# ---------------------------------------------------------------------------------------
# HTTP


def http(method, path, body=None, headers=None, timeout=30):
    """(status, body bytes, headers) of one request; never raises for a status."""
    if isinstance(body, str):
        body = body.encode()
    req = urllib.request.Request(f"http://{HTTP}{path}", data=body, method=method,
                                 headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read(), r.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers


def auth_header(p):
    return {} if p == "none" else {"Authorization": f"Token {SECRET[p]}"}


def admin(method, path, body=None, ctype=None, want=(200, 201, 204)):
    h = {"Authorization": f"Token {TOK['admin']}"}
    if ctype:
        h["Content-Type"] = ctype
    code, out, _ = http(method, path, body, h)
    if code not in want:
        sys.exit(f"setup: {method} {path} {body!r}: {code} {out!r}")
    return out


def admin_sql(sql, db="db1"):
    return json.loads(admin("POST", f"/api/v1/sql?db={db}", sql))


def q(s):
    return urllib.parse.quote(s, safe="")


def http_answer(code, body):
    """The status, marked when a refusal's body is not the refusal the rules describe."""
    try:
        err = json.loads(body).get("error", "")
    except (ValueError, AttributeError):
        err = ""
    if code == 401 and not err.startswith("authentication failed"):
        return "401-badbody"
    if code == 403 and not err.startswith("permission denied: this needs the"):
        return "403-badbody"
    return str(code)


def bucket_id(name):
    out = json.loads(admin("GET", f"/api/v2/buckets?name={q(name)}"))
    return out["buckets"][0]["id"] if out["buckets"] else "0000000000000000"


def http_classes(p):
    """(class, permission, database, success code, method, path, body, content type,
    effect) of every HTTP cell of principal `p`."""
    row = lambda c: f"http_{p}_{c}"
    lp = lambda c: f"cpu,host={row(c)} v=1 {NS}"
    json_t = "application/json"
    return [
        ("health", None, None, 200, "GET", "/health", None, None, None),
        ("ping", None, None, 204, "GET", "/ping", None, None, None),
        ("write_v1", "write", "db1", 204, "POST", "/write?db=db1", lp("write_v1"), None,
         ("row", "db1", row("write_v1"))),
        ("write_v1_db2", "write", "db2", 204, "POST", "/write?db=db2", lp("write_v1_db2"), None,
         ("row", "db2", row("write_v1_db2"))),
        ("write_v2", "write", "db1", 204, "POST", "/api/v2/write?bucket=db1&precision=ns",
         lp("write_v2"), None, ("row", "db1", row("write_v2"))),
        ("import_csv", "write", "db1", 204, "POST", "/api/v1/import?db=db1&table=cpu&tags=host",
         f"time,host,v\n{TS},{row('import_csv')},1.5\n", "text/csv",
         ("row", "db1", row("import_csv"))),
        ("sql_select_get", "read", "db1", 200, "GET",
         "/api/v1/sql?db=db1&q=" + q("SELECT count(*) FROM cpu"), None, None, None),
        ("sql_select", "read", "db1", 200, "POST", "/api/v1/sql?db=db1",
         "SELECT count(*) FROM cpu", None, None),
        ("sql_select_db2", "read", "db2", 200, "POST", "/api/v1/sql?db=db1",
         "SELECT count(*) FROM db2.public.cpu", None, None),
        ("sql_select_nodb", "read", None, 200, "POST", "/api/v1/sql?db=db1", "SELECT 1",
         None, None),
        ("sql_show_tables", "read", "db1", 200, "POST", "/api/v1/sql?db=db1", "SHOW TABLES",
         None, None),
        ("sql_insert", "write", "db1", 200, "POST", "/api/v1/sql?db=db1",
         f"INSERT INTO cpu (time, host, v) VALUES ('{TS}', '{row('sql_insert')}', 1)", None,
         ("row", "db1", row("sql_insert"))),
        ("sql_update", "readwrite", "db1", 200, "POST", "/api/v1/sql?db=db1",
         f"UPDATE cpu SET v = 99 WHERE host = 'upd_http_{p}'", None,
         ("updated", "db1", f"upd_http_{p}")),
        ("sql_delete", "readwrite", "db1", 200, "POST", "/api/v1/sql?db=db1",
         f"DELETE FROM cpu WHERE host = 'del_http_{p}'", None, ("deleted", "db1", f"del_http_{p}")),
        ("sql_create_table", "admin", "db1", 200, "POST", "/api/v1/sql?db=db1",
         f"CREATE TABLE nt_http_{p} (time TIMESTAMP, host TAG, v DOUBLE)", None,
         ("table_created", "db1", f"nt_http_{p}")),
        ("sql_drop_table", "admin", "db1", 200, "POST", "/api/v1/sql?db=db1",
         f"DROP TABLE vt_http_{p}", None, ("table_dropped", "db1", f"vt_http_{p}")),
        ("sql_drop_database", "admin", f"vdb_http_{p}", 200, "POST", "/api/v1/sql?db=db1",
         f"DROP DATABASE vdb_http_{p}", None, ("db_dropped", f"vdb_http_{p}")),
        ("sql_show_tokens", "admin", None, 200, "POST", "/api/v1/sql?db=db1", "SHOW TOKENS",
         None, None),
        # A refused statement after an allowed one in the same request: nothing of it runs.
        ("sql_smuggle", "admin", "db1", 200, "POST", "/api/v1/sql?db=db1",
         f"SELECT 1; DROP TABLE st_http_{p}", None, ("table_dropped", "db1", f"st_http_{p}")),
        ("influxql_show_dbs", "read", None, 200, "GET", "/query?q=" + q("SHOW DATABASES"),
         None, None, None),
        ("influxql_create_db", "admin", f"idb_{p}", 200, "POST",
         "/query?q=" + q(f"CREATE DATABASE idb_{p}"), None, None, ("db_created", f"idb_{p}")),
        ("influxql_drop_db", "admin", f"ivdb_{p}", 200, "POST",
         "/query?q=" + q(f"DROP DATABASE ivdb_{p}"), None, None, ("db_dropped", f"ivdb_{p}")),
        ("buckets_list", "read", None, 200, "GET", "/api/v2/buckets", None, None, None),
        ("bucket_create", "admin", None, 201, "POST", "/api/v2/buckets",
         json.dumps({"name": f"bkt_{p}", "orgID": "0000000000000001"}), json_t,
         ("db_created", f"bkt_{p}")),
        ("bucket_patch", "admin", None, 200, "PATCH", f"/api/v2/buckets/{bucket_id(f'bpatch_{p}')}",
         json.dumps({"retentionRules": [{"type": "expire", "everySeconds": 86400}]}), json_t,
         ("bucket_patched", f"bpatch_{p}")),
        ("bucket_delete", "admin", None, 204, "DELETE", f"/api/v2/buckets/{bucket_id(f'bdel_{p}')}",
         None, None, ("db_dropped", f"bdel_{p}")),
        ("metrics", "admin", None, 200, "GET", "/metrics", None, None, None),
        ("tokens_list", "admin", None, 200, "GET", "/api/v1/tokens", None, None, None),
        ("token_create", "admin", None, 201, "POST", "/api/v1/tokens",
         json.dumps({"name": f"tk_{p}", "read": ["db1"], "write": [], "admin": False}), json_t,
         ("token_created", f"tk_{p}")),
        ("token_delete", "admin", None, 204, "DELETE", f"/api/v1/tokens/vtok_{p}", None, None,
         ("token_dropped", f"vtok_{p}")),
        # An unknown path answers 404 to an admin only: probing tells nothing.
        ("unknown_path", "admin", None, 404, "GET", "/no/such/path", None, None, None),
    ]


def run_http():
    for p in PRINCIPALS:
        for cls, perm, db, ok, method, path, body, ctype, effect in http_classes(p):
            if perm is None:
                want = str(ok)
            elif p in UNAUTHENTICATED:
                want = "401"
            else:
                want = str(ok) if allowed(p, perm, db) else "403"
            h = auth_header(p)
            if ctype:
                h["Content-Type"] = ctype
            code, out, _ = http(method, path, body, h)
            got = http_answer(code, out)
            record("http", p, cls, want, got)
            if effect:
                effects.append(("http", p, cls, code == ok, effect))


# ---------------------------------------------------------------------------------------
# The InfluxDB 2 Python client


def run_influx_client():
    url = f"http://{HTTP}"
    for p in PRINCIPALS:
        client = InfluxDBClient(url=url, token=SECRET.get(p), org="tempora", timeout=30_000)
        host = f"influxc_{p}_write"
        ops = [
            ("write", "write", "db1", lambda: client.write_api(write_options=SYNCHRONOUS).write(
                bucket="db1", record=f"cpu,host={host} v=1 {NS}"), ("row", "db1", host)),
            ("find_buckets", "read", None, lambda: client.buckets_api().find_buckets(), None),
            ("create_bucket", "admin", None, lambda: client.buckets_api().create_bucket(
                bucket_name=f"icb_{p}", org_id="0000000000000001"), ("db_created", f"icb_{p}")),
        ]
        for cls, perm, db, f, effect in ops:
            if p in UNAUTHENTICATED:
                want = "401"
            else:
                want = "OK" if allowed(p, perm, db) else "403"
            try:
                f()
                got = "OK"
            except ApiException as e:
                got = str(e.status)
            record("influxc", p, cls, want, got)
            if effect:
                effects.append(("influxc", p, cls, got == "OK", effect))
        client.close()


# ---------------------------------------------------------------------------------------
# The PostgreSQL port: psql, psycopg, pgJDBC


def pg_classes(client, p):
    """(class, permission, database, SQL, effect) of every PostgreSQL cell."""
    row = lambda c: f"{client}_{p}_{c}"
    return [
        ("select", "read", "db1", "SELECT count(*) FROM cpu", None),
        ("select_db2", "read", "db2", "SELECT count(*) FROM db2.public.cpu", None),
        ("select_nodb", "read", None, "SELECT 1", None),
        ("insert", "write", "db1",
         f"INSERT INTO cpu (time, host, v) VALUES ('{TS}', '{row('insert')}', 1)",
         ("row", "db1", row("insert"))),
        ("insert_db2", "write", "db2",
         f"INSERT INTO db2.public.cpu (time, host, v) VALUES ('{TS}', '{row('insert_db2')}', 1)",
         ("row", "db2", row("insert_db2"))),
        ("update", "readwrite", "db1", f"UPDATE cpu SET v = 99 WHERE host = 'upd_{client}_{p}'",
         ("updated", "db1", f"upd_{client}_{p}")),
        ("delete", "readwrite", "db1", f"DELETE FROM cpu WHERE host = 'del_{client}_{p}'",
         ("deleted", "db1", f"del_{client}_{p}")),
        ("create_table", "admin", "db1",
         f"CREATE TABLE nt_{client}_{p} (time TIMESTAMP, host TAG, v DOUBLE)",
         ("table_created", "db1", f"nt_{client}_{p}")),
        ("drop_table", "admin", "db1", f"DROP TABLE vt_{client}_{p}",
         ("table_dropped", "db1", f"vt_{client}_{p}")),
        ("drop_database", "admin", f"vdb_{client}_{p}", f"DROP DATABASE vdb_{client}_{p}",
         ("db_dropped", f"vdb_{client}_{p}")),
        ("show_tokens", "admin", None, "SHOW TOKENS", None),
    ] + ([] if client == "psycopg" else [
        # Two statements in one query (simple protocol for psql, one batch for pgJDBC): the
        # refused second one must not run. psycopg prepares, which takes one statement.
        ("smuggle", "admin", "db1", f"SELECT 1; DROP TABLE st_{client}_{p}",
         ("table_dropped", "db1", f"st_{client}_{p}")),
    ])


def pg_want(p, perm, db):
    if p == "none":
        return "PWREQ"
    if p in UNAUTHENTICATED:
        return "28P01"
    return "OK" if allowed(p, perm, db) else "42501"


def libpq_connect_error(message):
    if "authentication failed" in message:
        return "28P01"
    if "no password supplied" in message:
        return "PWREQ"
    return "CONNECT:" + message.strip().splitlines()[-1][:80]


def pg_env(p):
    env = dict(os.environ, PGCONNECT_TIMEOUT="10")
    if p != "none":
        env["PGPASSWORD"] = SECRET[p]
    return env


def run_psql():
    for p in PRINCIPALS:
        for cls, perm, db, sql, effect in pg_classes("psql", p):
            out = subprocess.run(
                ["psql", "-X", "-w", "-q", "-h", "127.0.0.1", "-p", str(PG_PORT), "-U",
                 PG_USER[p], "-d", "db1", "-v", "ON_ERROR_STOP=1",
                 "-c", r"\set VERBOSITY verbose", "-c", sql],
                env=pg_env(p), capture_output=True, text=True, timeout=60)
            if out.returncode == 0:
                got = "OK"
            elif out.returncode == 2:
                got = libpq_connect_error(out.stderr)
            else:
                # ERROR:  42501: permission denied: ...
                line = next((l for l in out.stderr.splitlines() if l.startswith("ERROR:")), "")
                got = line.split()[1].rstrip(":") if line else "?" + out.stderr[:80]
            record("psql", p, cls, pg_want(p, perm, db), got)
            if effect:
                effects.append(("psql", p, cls, got == "OK", effect))


def run_psycopg():
    """Each statement prepared (the extended protocol with a named statement: psql covers
    the simple protocol, pgJDBC the unnamed one)."""
    for p in PRINCIPALS:
        kw = dict(host="127.0.0.1", port=PG_PORT, user=PG_USER[p], dbname="db1",
                  connect_timeout=10, autocommit=True)
        if p != "none":
            kw["password"] = SECRET[p]

        def connect():
            try:
                return psycopg.connect(**kw), None
            except psycopg.OperationalError as e:
                return None, libpq_connect_error(str(e))

        conn, refused = connect()
        for cls, perm, db, sql, effect in pg_classes("psycopg", p):
            if conn is None:
                got = refused
            else:
                try:
                    cur = conn.execute(sql, prepare=True)
                    if cur.description is not None:
                        cur.fetchall()
                    got = "OK"
                except psycopg.Error as e:
                    got = e.sqlstate or f"EXC:{type(e).__name__}"
                    if not e.sqlstate:  # a protocol failure: start a new session
                        conn.close()
                        conn, refused = connect()
            record("psycopg", p, cls, pg_want(p, perm, db), got)
            if effect:
                effects.append(("psycopg", p, cls, got == "OK", effect))
        if conn is not None:
            conn.close()


JAVA = r"""
import java.nio.file.*;
import java.sql.*;
import java.util.*;

/** Reads `CONNECT principal user password` (password `-`: none) and `STMT class sql` lines;
 *  prints `principal class OK|SQLSTATE|EXC:exception`, or `principal CONNECT SQLSTATE
 *  message`. A failure that is not an SQLException (a protocol violation) starts a new
 *  session for the next statement. */
public class AuthMatrix {
    static String url;
    static Connection connect(String principal, Properties props) {
        try {
            Connection c = DriverManager.getConnection(url, props);
            c.setAutoCommit(true);
            return c;
        } catch (SQLException e) {
            System.out.println(principal + " CONNECT " + e.getSQLState() + " "
                + String.valueOf(e.getMessage()).replace('\n', ' '));
            return null;
        }
    }

    public static void main(String[] a) throws Exception {
        url = "jdbc:postgresql://127.0.0.1:" + a[0] + "/db1?connectTimeout=10";
        Connection c = null;
        String principal = null;
        Properties props = null;
        for (String line : Files.readAllLines(Paths.get(a[1]))) {
            String[] f = line.split("\t", 4);
            if (f[0].equals("CONNECT")) {
                if (c != null) c.close();
                principal = f[1];
                props = new Properties();
                props.setProperty("user", f[2]);
                if (!f[3].equals("-")) props.setProperty("password", f[3]);
                c = connect(principal, props);
            } else if (c != null) {
                String[] s = line.split("\t", 3);
                try (Statement st = c.createStatement()) {
                    st.execute(s[2]);
                    System.out.println(principal + " " + s[1] + " OK");
                } catch (SQLException e) {
                    System.out.println(principal + " " + s[1] + " " + e.getSQLState());
                } catch (RuntimeException e) {
                    System.out.println(principal + " " + s[1] + " EXC:" + e.getClass().getSimpleName());
                    try { c.close(); } catch (Exception ignored) {}
                    c = connect(principal, props);
                }
            }
        }
        if (c != null) c.close();
    }
}
"""


def run_jdbc(work):
    src = os.path.join(work, "AuthMatrix.java")
    with open(src, "w") as f:
        f.write(JAVA)
    script = os.path.join(work, "jdbc.tsv")
    with open(script, "w") as f:
        for p in PRINCIPALS:
            password = "-" if p == "none" else SECRET[p]
            f.write(f"CONNECT\t{p}\t{PG_USER[p]}\t{password}\n")
            for cls, _, _, sql, _ in pg_classes("jdbc", p):
                f.write(f"STMT\t{cls}\t{sql}\n")
    out = subprocess.run(["java", "-cp", JAR, src, str(PG_PORT), script],
                         capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        sys.exit(f"java failed:\n{out.stdout}\n{out.stderr}")
    answers, refused = {}, {}
    for line in out.stdout.splitlines():
        p, cls, rest = line.split(" ", 2)
        if cls == "CONNECT":
            state, message = rest.split(" ", 1)
            if "no password was provided" in message:
                refused[p] = "PWREQ"
            else:
                refused[p] = state
        else:
            answers[(p, cls)] = rest
    for p in PRINCIPALS:
        for cls, perm, db, sql, effect in pg_classes("jdbc", p):
            got = refused.get(p) or answers.get((p, cls), "missing")
            record("jdbc", p, cls, pg_want(p, perm, db), got)
            if effect:
                effects.append(("jdbc", p, cls, got == "OK", effect))


# ---------------------------------------------------------------------------------------
# The PostgreSQL wire, by hand: what libpq hides


def pg_message(sock):
    head = b""
    while len(head) < 5:
        chunk = sock.recv(5 - len(head))
        if not chunk:
            return None, None
        head += chunk
    kind, n = head[:1], struct.unpack("!I", head[1:])[0]
    body = b""
    while len(body) < n - 4:
        chunk = sock.recv(n - 4 - len(body))
        if not chunk:
            return None, None
        body += chunk
    return kind, body


def pg_send(sock, kind, body):
    sock.sendall(kind + struct.pack("!I", len(body) + 4) + body)


def pg_startup(user, timeout=10):
    sock = socket.create_connection(("127.0.0.1", PG_PORT), timeout=timeout)
    body = struct.pack("!I", 196608) + b"user\0" + user.encode() + b"\0database\0db1\0\0"
    sock.sendall(struct.pack("!I", len(body) + 4) + body)
    return sock


def error_code(body):
    fields = {chr(f[0]): f[1:].decode() for f in body.split(b"\0") if f}
    return fields.get("C", "?")


def scram_attempt(user, password):
    """One SCRAM-SHA-256 login: (salt, answer) where answer is `OK` or the SQLSTATE the
    server sent."""
    sock = pg_startup(user)
    try:
        kind, body = pg_message(sock)
        if kind != b"R" or struct.unpack("!I", body[:4])[0] != 10:
            return None, f"no SASL request: {kind} {body[:40]!r}"
        nonce = base64.b64encode(os.urandom(18)).decode()
        first_bare = "n=,r=" + nonce
        first = ("n,," + first_bare).encode()
        pg_send(sock, b"p", b"SCRAM-SHA-256\0" + struct.pack("!i", len(first)) + first)
        kind, body = pg_message(sock)
        if kind != b"R":
            return None, error_code(body) if kind == b"E" else f"unexpected {kind}"
        server_first = body[4:].decode()
        attrs = dict(x.split("=", 1) for x in server_first.split(","))
        salted = hashlib.pbkdf2_hmac("sha256", password.encode(),
                                     base64.b64decode(attrs["s"]), int(attrs["i"]))
        client_key = hmac.new(salted, b"Client Key", "sha256").digest()
        final_bare = "c=biws,r=" + attrs["r"]
        message = f"{first_bare},{server_first},{final_bare}".encode()
        signature = hmac.new(hashlib.sha256(client_key).digest(), message, "sha256").digest()
        proof = base64.b64encode(bytes(x ^ y for x, y in zip(client_key, signature))).decode()
        pg_send(sock, b"p", f"{final_bare},p={proof}".encode())
        while True:
            kind, body = pg_message(sock)
            if kind == b"E":
                return attrs["s"], error_code(body)
            if kind is None:
                return attrs["s"], "closed"
            if kind == b"Z":
                return attrs["s"], "OK"
    finally:
        sock.close()


def run_wire():
    _, got = scram_attempt("read", TOK["read"])
    record("wire", "read", "scram_login", "OK", got)
    _, got = scram_attempt("read", WRONG)
    record("wire", "wrong", "scram_login", "28P01", got)
    _, got = scram_attempt("revoked", TOK["revoked"])
    record("wire", "revoked", "scram_login", "28P01", got)
    _, got = scram_attempt("nobody_" + secrets.token_hex(4), WRONG)
    record("wire", "unknown", "scram_login", "28P01", got)
    # An existing user's salt is its own and stable; an unknown user's must look the same,
    # or comparing salts tells which names exist.
    salts = {u: [scram_attempt(u, WRONG)[0] for _ in range(2)]
             for u in ["read", "write", "nobody_a", "nobody_b"]}
    for u, (s1, s2) in salts.items():
        record("wire", u, "salt_stable", "same", "same" if s1 == s2 else "differs")
    distinct = len({s[0] for s in salts.values()})
    record("wire", "all", "salts_distinct", "4", str(distinct))
    # No credentials, a query instead: it must not run (an error, a close, or silence).
    sock = pg_startup("read", timeout=3)
    try:
        kind, body = pg_message(sock)
        pg_send(sock, b"Q", b"SELECT count(*) FROM cpu\0")
        try:
            kind, body = pg_message(sock)
            got = ("refused" if kind in (b"E", None) else f"answered {kind}")
        except socket.timeout:
            got = "refused"  # no answer (the server waits for the SCRAM response)
    finally:
        sock.close()
    record("wire", "none", "query_unauthenticated", "refused", got)


# ---------------------------------------------------------------------------------------
# Credential spellings, identical refusals, revocation of an open session, timing


def run_spellings():
    path = "/api/v1/sql?db=db1&q=" + q("SELECT 1")
    basic = lambda t: "Basic " + base64.b64encode(f"anyone:{t}".encode()).decode()
    for name, good, bad in [
        ("Token", {"Authorization": f"Token {TOK['read']}"}, {"Authorization": f"Token {WRONG}"}),
        ("Bearer", {"Authorization": f"Bearer {TOK['read']}"},
         {"Authorization": f"Bearer {WRONG}"}),
        ("Basic", {"Authorization": basic(TOK["read"])}, {"Authorization": basic(WRONG)}),
    ]:
        record("spelling", "read", name, "200", str(http("GET", path, None, good)[0]))
        record("spelling", "wrong", name, "401", str(http("GET", path, None, bad)[0]))
    record("spelling", "read", "u/p", "200",
           str(http("GET", f"{path}&u=anyone&p={q(TOK['read'])}")[0]))
    record("spelling", "wrong", "u/p", "401", str(http("GET", f"{path}&u=anyone&p={WRONG}")[0]))
    record("spelling", "wrong", "Digest", "401",
           str(http("GET", path, None, {"Authorization": "Digest username=read"})[0]))

    # Every authentication failure reads the same, whatever was wrong.
    answers = {
        "wrong": http("GET", path, None, {"Authorization": f"Token {WRONG}"}),
        "nobody": http("GET", f"{path}&u=nobody&p=wrong"),
        "none": http("GET", path),
        "revoked": http("GET", path, None, {"Authorization": f"Token {TOK['revoked']}"}),
    }
    reference = answers["wrong"]
    for name, (code, body, headers) in answers.items():
        record("refusal", name, "401_same_as_wrong", "same",
               "same" if (code, body) == reference[:2] else f"{code} {body[:60]!r}")
        record("refusal", name, "www_authenticate", "present",
               "present" if headers.get("WWW-Authenticate") else "absent")


def run_insert_select():
    """INSERT ... SELECT reads its source: a token that may write both databases but read
    only db2 must not copy db1 into db2 (and then read it there). The same statement from
    db2 to db2 is the control: it is allowed."""
    mix = json.loads(admin("POST", "/api/v1/tokens", json.dumps(
        {"name": "mix", "read": ["db2"], "write": ["db1", "db2"]}), "application/json"))["token"]
    copy = lambda tag, source: (f"INSERT INTO cpu (time, host, v) SELECT time, "
                                f"concat('{tag}_', host), v FROM {source}")
    done = {}
    for cls, source, perm_ok in [("from_unreadable", "db1.public.cpu", False),
                                 ("from_readable", "db2.public.cpu", True)]:
        tag = f"copy_http_{cls}"
        code, out, _ = http("POST", "/api/v1/sql?db=db2", copy(tag, source),
                            {"Authorization": f"Token {mix}"})
        record("http", "mix", f"insert_select_{cls}", "200" if perm_ok else "403",
               http_answer(code, out))
        done[tag] = code == 200
        tag = f"copy_psql_{cls}"
        out = subprocess.run(
            ["psql", "-X", "-w", "-q", "-h", "127.0.0.1", "-p", str(PG_PORT), "-U", "mix",
             "-d", "db2", "-v", "ON_ERROR_STOP=1", "-c", r"\set VERBOSITY verbose",
             "-c", copy(tag, source)],
            env=dict(os.environ, PGPASSWORD=mix), capture_output=True, text=True, timeout=60)
        line = next((l for l in out.stderr.splitlines() if l.startswith("ERROR:")), "")
        got = "OK" if out.returncode == 0 else (line.split()[1].rstrip(":") if line else "?")
        record("psql", "mix", f"insert_select_{cls}", "OK" if perm_ok else "42501", got)
        done[tag] = got == "OK"
    copied = hosts("db2")
    for tag, ok in done.items():
        n = sum(1 for h in copied if h.startswith(tag + "_"))
        record("effect", "mix", tag, "copied" if ok else "unchanged",
               "copied" if n else "unchanged")


def run_session_revocation():
    name = "session_" + secrets.token_hex(4)
    token = json.loads(admin("POST", "/api/v1/tokens",
                             json.dumps({"name": name, "read": ["db1"]}), "application/json"))
    conn = psycopg.connect(host="127.0.0.1", port=PG_PORT, user=name, password=token["token"],
                           dbname="db1", autocommit=True, connect_timeout=10)
    try:
        conn.execute("SELECT count(*) FROM cpu").fetchone()
        record("session", name[:8], "before_revoke", "OK", "OK")
        admin("DELETE", f"/api/v1/tokens/{name}", want=(204,))
        try:
            conn.execute("SELECT count(*) FROM cpu").fetchone()
            got = "OK"
        except psycopg.Error as e:
            got = e.sqlstate or "?" + str(e)[:80]
        record("session", name[:8], "after_revoke", "28P01", got)
    finally:
        conn.close()


def interleaved_medians(a, b, n):
    """Medians of `n` timings each of `a` and `b`, taken alternately; and whether every
    attempt was refused."""
    ta, tb, refused = [], [], True
    for _ in range(n):
        for f, out in ((a, ta), (b, tb)):
            t0 = time.perf_counter()
            refused &= f()
            out.append(time.perf_counter() - t0)
    return statistics.median(ta), statistics.median(tb), refused


def run_timing():
    def pg(user):
        def attempt():
            try:
                psycopg.connect(host="127.0.0.1", port=PG_PORT, user=user, password=WRONG,
                                dbname="db1", connect_timeout=10).close()
                return False
            except psycopg.OperationalError:
                return True
        return attempt

    def web(path, headers):
        return lambda: http("GET", path, None, headers)[0] == 401

    path = "/api/v1/sql?db=db1&q=" + q("SELECT 1")
    for port, (known, unknown), n in [
        ("pg", (pg("read"), pg("nobody_timing")), 40),
        ("http", (web(path, {"Authorization": f"Token {WRONG}"}),
                  web(path + "&u=nobody&p=wrong", {})), 100),
    ]:
        known(), unknown()  # warm up
        m_known, m_unknown, refused = interleaved_medians(known, unknown, n)
        ratio = m_known / m_unknown
        print(f"timing {port}: wrong secret median {m_known * 1e3:.3f} ms, "
              f"unknown user median {m_unknown * 1e3:.3f} ms, ratio {ratio:.2f}", flush=True)
        record("timing", "wrong", f"{port}_all_refused", "refused",
               "refused" if refused else "accepted")
        record("timing", "wrong", f"{port}_ratio", "within", "within"
               if 0.67 <= ratio <= 1.5 else f"ratio {ratio:.2f}")


# ---------------------------------------------------------------------------------------
# Set-up and effects


def hosts(db):
    rows = admin_sql("SELECT host, v FROM cpu", db)["rows"]
    return {h: v for h, v in rows}


def count(db):
    return admin_sql("SELECT count(*) FROM cpu", db)["rows"][0][0]


def tables(db):
    rows = admin_sql("SELECT table_name FROM information_schema.tables "
                     "WHERE table_schema = 'public'", db)["rows"]
    return {r[0] for r in rows}


def databases():
    out = json.loads(admin("GET", "/query?q=" + q("SHOW DATABASES")))
    return {v[0] for v in out["results"][0]["series"][0]["values"]}


def buckets():
    return {b["name"]: b for b in json.loads(admin("GET", "/api/v2/buckets"))["buckets"]}


def token_names():
    return {t["name"] for t in json.loads(admin("GET", "/api/v1/tokens"))["tokens"]}


def setup():
    have = databases()
    for db in ("db1", "db2"):
        if db not in have:
            sys.exit(f"setup: database {db} is missing (the caller makes db1 and db2)")
    markers = [f"cpu,host={kind}_{client}_{p} v=1 {NS}"
               for kind in ("del", "upd") for client in ["http"] + PG_CLIENTS
               for p in PRINCIPALS]
    admin("POST", "/write?db=db1", "\n".join(markers))
    for client in ["http"] + PG_CLIENTS:
        for p in PRINCIPALS:
            victims = [f"vt_{client}_{p}"] + ([f"st_{client}_{p}"] if client != "psycopg" else [])
            for t in victims:
                admin_sql(f"CREATE TABLE {t} (time TIMESTAMP, host TAG, v DOUBLE)")
            admin_sql(f"CREATE DATABASE vdb_{client}_{p}")
    for p in PRINCIPALS:
        for db in (f"ivdb_{p}", f"bdel_{p}", f"bpatch_{p}"):
            admin_sql(f"CREATE DATABASE {db}")
        admin("POST", "/api/v1/tokens", json.dumps({"name": f"vtok_{p}", "read": ["db1"]}),
              "application/json", want=(201,))


def check_effects(before):
    after_hosts = {db: hosts(db) for db in ("db1", "db2")}
    after_tables = tables("db1")
    after_dbs, after_buckets, after_tokens = databases(), buckets(), token_names()
    delta = {"db1": 0, "db2": 0}
    for client, p, cls, ok, effect in effects:
        kind = effect[0]
        if kind == "row":
            _, db, host = effect
            delta[db] += ok
            want, got = ok, host in after_hosts[db]
        elif kind == "deleted":
            _, db, host = effect
            delta[db] -= ok
            want, got = ok, host not in after_hosts[db]
        elif kind == "updated":
            _, db, host = effect
            want, got = ok, after_hosts[db].get(host) == 99
        elif kind == "table_created":
            want, got = ok, effect[2] in after_tables
        elif kind == "table_dropped":
            want, got = ok, effect[2] not in after_tables
        elif kind == "db_created":
            want, got = ok, effect[1] in after_dbs
        elif kind == "db_dropped":
            want, got = ok, effect[1] not in after_dbs
        elif kind == "bucket_patched":
            rules = after_buckets.get(effect[1], {}).get("retentionRules", [{}])
            want, got = ok, rules[0].get("everySeconds") == 86400
        elif kind == "token_created":
            want, got = ok, effect[1] in after_tokens
        elif kind == "token_dropped":
            want, got = ok, effect[1] not in after_tokens
        else:
            raise AssertionError(kind)
        label = lambda done: f"{kind}" if done else "unchanged"
        record("effect", p, f"{client}:{cls}", label(want), label(got))
    for db in ("db1", "db2"):
        record("effect", "all", f"count_{db}", str(before[db] + delta[db]), str(count(db)))


def main():
    setup()
    before = {db: count(db) for db in ("db1", "db2")}
    with tempfile.TemporaryDirectory() as work:
        run_http()
        run_influx_client()
        run_psql()
        run_psycopg()
        run_jdbc(work)
    check_effects(before)
    run_wire()
    run_insert_select()
    run_spellings()
    run_session_revocation()
    run_timing()
    bad = [c for c in cells if c[3] != c[4]]
    print(f"cells {len(cells)} expected {len(cells) - len(bad)}")
    if bad:
        print(f"{len(bad)} cells differ:")
        for client, p, cls, want, got in bad:
            print(f"  {client} {p} {cls}: expected {want}, got {got}")
        sys.exit(1)


main()
