//! What each text reads as: a table of named cases over [`super::parse`].

use super::*;

/// A short description of what a statement read as.
fn kind(s: &Statement) -> String {
    match s {
        Statement::Query(q) => format!(
            "query{}{}",
            q.sample_by.as_ref().map_or("", |_| "+sample_by"),
            q.latest_on.as_ref().map_or("", |_| "+latest_on")
        ),
        Statement::Explain(e) => format!(
            "explain{}{}({})",
            if e.analyze { " analyze" } else { "" },
            if e.verbose { " verbose" } else { "" },
            kind(&e.statement)
        ),
        Statement::Insert(_) => "insert".into(),
        Statement::Delete(_) => "delete".into(),
        Statement::Update(_) => "update".into(),
        Statement::Show(Show::Databases) => "show databases".into(),
        Statement::Show(Show::TagValues { .. }) => "show tag values".into(),
        Statement::Show(Show::Describe(_)) => "describe".into(),
        Statement::CreateDatabase(_) => "create database".into(),
        Statement::DropDatabase(_) => "drop database".into(),
        Statement::CreateTable(_) => "create table".into(),
        Statement::DropTable(_) => "drop table".into(),
        Statement::Alter(a) => format!("alter {:?}", a.options),
        Statement::Set(s) => format!("set {}", s.setting.name()),
        Statement::Session(_) => "session".into(),
        Statement::Model(m) => format!("model {}", Statement::Model(m.clone()).tag()),
        Statement::Plan(_) => "plan".into(),
        Statement::Token(t) => format!("token {}", Statement::Token(t.clone()).tag()),
        Statement::PromQl(q) => format!("promql {}", q.text),
    }
}

#[test]
fn texts_read_as_typed_statements() {
    let cases: &[(&str, &str, &[&str])] = &[
        ("a query", "SELECT 1", &["query"]),
        (
            "a word with a multi-byte letter at its third byte (found by the fuzzer)",
            "SELECT * FROM FRӻ",
            &["query"],
        ),
        (
            "a setting's name with a multi-byte letter at its ninth byte (found by the fuzzer)",
            "SET K.E11S1϶=L",
            &["session"],
        ),
        ("two statements", "SELECT 1; SELECT 2", &["query", "query"]),
        (
            "sample by with order and limit after it",
            "SELECT time, max(v) FROM t WHERE v > 0 SAMPLE BY 1m FILL(PREV) ORDER BY time DESC LIMIT 5",
            &["query+sample_by"],
        ),
        (
            "latest on",
            "SELECT * FROM t LATEST ON time PARTITION BY host ORDER BY v LIMIT 2",
            &["query+latest_on"],
        ),
        (
            "a table aliased latest is a join, not the clause",
            "SELECT * FROM cpu JOIN hosts AS latest ON cpu.host = latest.host",
            &["query"],
        ),
        (
            "keywords in strings are not clauses",
            "SELECT 'SAMPLE BY 1m', 'LATEST ON time PARTITION BY h' FROM t",
            &["query"],
        ),
        (
            "explain of sample by",
            "EXPLAIN ANALYZE SELECT time, max(v) FROM t SAMPLE BY 1h",
            &["explain analyze(query+sample_by)"],
        ),
        (
            "explain verbose",
            "explain verbose select 1",
            &["explain verbose(query)"],
        ),
        (
            "insert",
            "INSERT INTO t (time, v) VALUES (1, 2)",
            &["insert"],
        ),
        ("delete", "DELETE FROM t WHERE host = 'a'", &["delete"]),
        ("show databases", "SHOW DATABASES", &["show databases"]),
        (
            "show tag values",
            "SHOW TAG VALUES FROM t WITH KEY = h",
            &["show tag values"],
        ),
        ("describe", "DESCRIBE t", &["describe"]),
        ("create database", "CREATE DATABASE d", &["create database"]),
        (
            "drop database",
            "DROP DATABASE IF EXISTS d",
            &["drop database"],
        ),
        (
            "create table",
            "CREATE TABLE t (host TAG, v DOUBLE)",
            &["create table"],
        ),
        ("drop table", "DROP TABLE t", &["drop table"]),
        (
            "alter a table's settings",
            "ALTER TABLE t SET (ttl = '7d', partition = '1d')",
            &["alter [(\"ttl\", \"7d\"), (\"partition\", \"1d\")]"],
        ),
        (
            "alter a database's settings",
            "alter database d set (TTL = forever)",
            &["alter [(\"ttl\", \"forever\")]"],
        ),
        (
            "statement timeout",
            "SET statement_timeout = '5s'",
            &["set statement_timeout"],
        ),
        (
            "tempora setting with TO",
            "SET tempora.operators TO off",
            &["set tempora.operators"],
        ),
        (
            "reset",
            "RESET tempora.query_memory_limit",
            &["set tempora.query_memory_limit"],
        ),
        (
            "a PostgreSQL setting",
            "SET DateStyle = 'ISO'",
            &["session"],
        ),
        ("a transaction", "BEGIN; COMMIT", &["session", "session"]),
        ("show a variable", "SHOW search_path", &["session"]),
        ("show tables", "SHOW TABLES", &["plan"]),
        (
            "a catalog query",
            "SELECT c.relname FROM pg_catalog.pg_class c",
            &["query"],
        ),
        (
            "a bound parameter in a sampled query",
            "SELECT time, avg(v) FROM t WHERE host = $1 SAMPLE BY 1m",
            &["query+sample_by"],
        ),
    ];
    for (name, sql, want) in cases {
        let got: Vec<String> = parse(sql)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .iter()
            .map(kind)
            .collect();
        assert_eq!(got, *want, "{name}");
    }
}

#[test]
fn update_is_a_statement_of_its_own() {
    let s = parse("UPDATE t SET v = 1 WHERE host = 'a'").unwrap();
    assert!(matches!(s.as_slice(), [Statement::Update(_)]), "{s:?}");
    assert_eq!(s[0].tag(), "UPDATE");
}

#[test]
fn refusals_name_the_statement_or_the_problem() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "a view",
            "CREATE VIEW v AS SELECT 1",
            "CREATE VIEW is not supported",
        ),
        ("alter", "ALTER TABLE t ADD COLUMN x INT", "ALTER takes SET"),
        ("copy", "COPY t TO 'x.csv'", "COPY is not supported"),
        (
            "sample by in a subquery",
            "SELECT * FROM (SELECT time, max(v) FROM t SAMPLE BY 1m)",
            "outermost SELECT",
        ),
        (
            "latest on after order by",
            "SELECT * FROM t ORDER BY v LATEST ON time PARTITION BY h",
            "before ORDER BY",
        ),
        (
            "both clauses",
            "SELECT * FROM t SAMPLE BY 1m LATEST ON time PARTITION BY h",
            "cannot be combined",
        ),
        (
            "an unknown Tempora setting",
            "SET tempora.speed = 11",
            "unknown setting",
        ),
        ("a syntax error", "SELEC 1", "SQL"),
        ("explain nothing", "EXPLAIN", "which statement"),
        (
            "trailing words",
            "SELECT 1 FROM t banana split",
            "unexpected",
        ),
    ];
    for (name, sql, want) in cases {
        let e = parse(sql).unwrap_err().to_string();
        assert!(e.contains(want), "{name}: {e}");
    }
}
