//! Databases and declared tables: created, dropped, refused, and kept across restarts.

mod common;

use common::*;
use tempora_model::{ColumnKind, FieldType, FieldValue, RowBatchBuilder, TableSchema, Timestamp};
use tempora_storage::files::{FileStore, Manifest};
use tempora_storage::{Engine, EngineIo, EngineOptions, StorageError};

/// A schema of tag `host` and float field `v`.
fn host_v(name: &str) -> TableSchema {
    TableSchema::with_columns(
        name,
        vec![
            ("host".into(), ColumnKind::Tag),
            ("v".into(), ColumnKind::Field(FieldType::F64)),
        ],
    )
}

/// Writes one row to `table` with tag host=h1 and the given fields; returns the rejections.
fn write_row(e: &Engine, table: &str, t: i64, fields: &[(&str, FieldValue)]) -> Vec<String> {
    let mut b = RowBatchBuilder::new(table).unwrap();
    b.push(&[("host", "h1")], fields, Timestamp(t)).unwrap();
    let out = e.write(b.finish()).unwrap();
    out.rejected.into_iter().map(|r| r.reason).collect()
}

fn memory_engine(opts: EngineOptions) -> (Engine, FileStore) {
    let (io, _wals) = EngineIo::memory();
    let files = io.files.clone();
    (Engine::open(opts, io).unwrap(), files)
}

#[test]
fn databases_and_declared_tables_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let e = open_local(dir.path());
    assert!(e.create_database("empty").unwrap(), "new");
    assert!(!e.create_database("empty").unwrap(), "exists already");
    assert!(e.create_database("app").unwrap());
    assert!(e.create_database("old").unwrap());
    assert!(e.create_table("app.cpu", host_v("ignored"), false).unwrap());
    // Schema on write adds a column to the declared table.
    let refused = write_row(
        &e,
        "app.cpu",
        SEC,
        &[("v", FieldValue::F64(1.0)), ("w", FieldValue::I64(2))],
    );
    assert!(refused.is_empty(), "{refused:?}");
    assert!(write_row(&e, "old.mem", SEC, &[("v", FieldValue::F64(3.0))]).is_empty());
    assert!(e.drop_database("old").unwrap());
    e.close().unwrap();

    let e = open_local(dir.path());
    assert_eq!(e.databases(), vec!["app", "empty"]);
    assert!(e.database_exists("empty") && !e.database_exists("old"));
    assert_eq!(
        e.tables(),
        vec!["app.cpu"],
        "old.mem went with its database"
    );
    let schema = e.schema("app.cpu").unwrap();
    assert_eq!(
        schema.name, "app.cpu",
        "the declared schema takes the table's name"
    );
    let kinds: Vec<(String, ColumnKind)> = schema.columns().to_vec();
    assert_eq!(
        kinds,
        vec![
            ("host".into(), ColumnKind::Tag),
            ("v".into(), ColumnKind::Field(FieldType::F64)),
            ("w".into(), ColumnKind::Field(FieldType::I64)),
        ]
    );
    let rows = e.scan("app.cpu", &Default::default()).unwrap();
    assert_eq!(rows.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
    // The old database's rows do not come back from the WAL either.
    assert!(e.scan("old.mem", &Default::default()).is_err());
}

#[test]
fn dropping_a_database_is_one_manifest_commit() {
    let (e, files) = memory_engine(small_opts());
    e.create_database("db").unwrap();
    e.create_database("other").unwrap();
    for t in ["db.a", "db.b", "db.c", "other.a"] {
        assert!(write_row(&e, t, SEC, &[("v", FieldValue::F64(1.0))]).is_empty());
    }
    e.flush().unwrap();
    let version = || {
        Manifest::open(files.clone(), 1 << 20)
            .unwrap()
            .state()
            .version
    };
    let before = version();
    assert!(e.drop_database("db").unwrap());
    assert_eq!(
        version(),
        before + 1,
        "three tables and the record in one commit"
    );
    assert_eq!(e.tables(), vec!["other.a"]);
    assert_eq!(e.databases(), vec!["other"]);
    assert!(!e.drop_database("db").unwrap(), "gone");
    assert_eq!(version(), before + 1, "dropping nothing commits nothing");
}

#[test]
fn declared_tables_are_refused_when_they_exist_or_their_database_does_not() {
    let (e, _) = memory_engine(small_opts());
    match e.create_table("nodb.t", host_v("t"), false) {
        Err(StorageError::DatabaseNotFound(db)) => assert_eq!(db, "nodb"),
        other => panic!("expected DatabaseNotFound, got {other:?}"),
    }
    assert!(e.tables().is_empty(), "nothing created");
    e.create_database("db").unwrap();
    assert!(e.create_table("db.t", host_v("t"), false).unwrap());
    let err = e.create_table("db.t", host_v("t"), false).unwrap_err();
    assert!(
        matches!(&err, StorageError::TableExists(t) if t == "db.t"),
        "{err}"
    );
    assert_eq!((err.http_status(), err.sqlstate()), (409, "42P07"));
    // IF NOT EXISTS leaves the table as it is, whatever the schema asked for.
    let other = TableSchema::with_columns("t", vec![("x".into(), ColumnKind::Tag)]);
    assert!(!e.create_table("db.t", other, true).unwrap());
    assert_eq!(e.schema("db.t").unwrap().kind("x"), None);
    // A table that schema-on-write created exists too.
    assert!(write_row(&e, "db.w", SEC, &[("v", FieldValue::F64(1.0))]).is_empty());
    assert!(matches!(
        e.create_table("db.w", host_v("w"), false),
        Err(StorageError::TableExists(_))
    ));
    // Bad declarations name what is wrong.
    let twice = TableSchema::with_columns(
        "d",
        vec![("a".into(), ColumnKind::Tag), ("a".into(), ColumnKind::Tag)],
    );
    let bad_column = TableSchema::with_columns("d", vec![("__a".into(), ColumnKind::Tag)]);
    for (name, table, schema, want) in [
        ("column twice", "db.d", twice, "declared twice"),
        ("reserved column", "db.d", bad_column, "reserved"),
        ("empty table part", "db.", host_v("d"), "empty"),
        (
            "bad database part",
            "a\u{1}.d",
            host_v("d"),
            "control characters",
        ),
    ] {
        let err = e
            .create_table(table, schema, false)
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "{name}: {err}");
    }
    assert_eq!(e.tables(), vec!["db.t", "db.w"]);
}

#[test]
fn writes_extend_a_declared_table_and_a_type_conflict_rejects_the_line() {
    let (e, _) = memory_engine(small_opts());
    e.create_database("db").unwrap();
    e.create_table("db.t", host_v("t"), false).unwrap();
    let refused = write_row(&e, "db.t", SEC, &[("v", FieldValue::Str("x".into()))]);
    assert_eq!(refused.len(), 1);
    assert!(refused[0].contains("has type string"), "{refused:?}");
    let refused = write_row(&e, "db.t", SEC, &[("host", FieldValue::F64(1.0))]);
    assert!(refused[0].contains("already a tag"), "{refused:?}");
    let fine = write_row(
        &e,
        "db.t",
        2 * SEC,
        &[("v", FieldValue::F64(1.0)), ("up", FieldValue::Bool(true))],
    );
    assert!(fine.is_empty(), "{fine:?}");
    let schema = e.schema("db.t").unwrap();
    assert_eq!(schema.kind("up"), Some(ColumnKind::Field(FieldType::Bool)));
    assert_eq!(schema.kind("v"), Some(ColumnKind::Field(FieldType::F64)));
}

#[test]
fn bad_database_names_are_refused_with_the_reason() {
    let (e, _) = memory_engine(small_opts());
    let long = "d".repeat(1025);
    for (case, name, reason) in [
        ("empty", "", "empty"),
        ("too long", long.as_str(), "longer than 1024 bytes"),
        ("with a dot", "a.b", "must not contain '.'"),
        ("a bell", "a\u{7}b", "control characters"),
        ("a newline", "a\nb", "control characters"),
        ("a DEL", "ab\u{7f}", "control characters"),
        ("the time column", "time", "timestamp column"),
        ("reserved prefix", "__db", "reserved"),
    ] {
        for (op, got) in [
            ("create", e.create_database(name).map(drop)),
            ("drop", e.drop_database(name).map(drop)),
        ] {
            let err = got.expect_err(case);
            let StorageError::InvalidDatabase {
                name: named,
                reason: why,
            } = &err
            else {
                panic!("{case} ({op}): expected InvalidDatabase, got {err}");
            };
            assert_eq!(named, &name.chars().take(64).collect::<String>(), "{case}");
            assert!(why.contains(reason), "{case} ({op}): {why}");
            assert!(err.to_string().contains(reason), "{case}: {err}");
            assert_eq!(
                (err.http_status(), err.sqlstate()),
                (400, "42602"),
                "{case}"
            );
        }
    }
    assert!(e.databases().is_empty());
    assert!(
        e.create_database("ok_name-1").unwrap(),
        "a good name passes"
    );
}

#[test]
fn max_databases_bounds_created_and_implicit_databases() {
    let opts = EngineOptions {
        max_databases: 2,
        ..small_opts()
    };
    let (e, _) = memory_engine(opts);
    assert!(e.create_database("a").unwrap());
    assert!(write_row(&e, "b.t", SEC, &[("v", FieldValue::F64(1.0))]).is_empty());
    let err = e.create_database("c").unwrap_err();
    assert!(matches!(err, StorageError::TooManyDatabases(2)), "{err}");
    assert!(err.to_string().contains("max_databases"), "{err}");
    let mut b = RowBatchBuilder::new("c.t").unwrap();
    b.push(
        &[("host", "h")],
        &[("v", FieldValue::F64(1.0))],
        Timestamp(SEC),
    )
    .unwrap();
    assert!(matches!(
        e.write(b.finish()),
        Err(StorageError::TooManyDatabases(2))
    ));
    // What exists stays usable: another table of b, b recorded, a again.
    assert!(write_row(&e, "b.u", SEC, &[("v", FieldValue::F64(1.0))]).is_empty());
    assert!(
        !e.create_database("b").unwrap(),
        "b held tables: recorded, not new"
    );
    assert!(!e.create_database("a").unwrap());
    assert!(e.drop_database("a").unwrap());
    assert!(e.create_database("c").unwrap(), "room again");
    assert_eq!(e.databases(), vec!["b", "c"]);
    let zero = EngineOptions {
        max_databases: 0,
        ..small_opts()
    };
    let err = Engine::open(zero, EngineIo::memory().0)
        .err()
        .expect("refused");
    assert!(err.to_string().contains("max_databases"), "{err}");
}

#[test]
fn a_database_that_only_held_tables_outlives_them_once_created() {
    let (e, _) = memory_engine(small_opts());
    assert!(write_row(&e, "imp.t", SEC, &[("v", FieldValue::F64(1.0))]).is_empty());
    assert_eq!(
        e.databases(),
        vec!["imp"],
        "a table makes its database exist"
    );
    assert!(!e.create_database("imp").unwrap(), "it existed");
    assert!(e.drop_table("imp.t").unwrap());
    assert!(e.database_exists("imp"), "recorded by create_database");
    assert!(write_row(&e, "gone.t", SEC, &[("v", FieldValue::F64(1.0))]).is_empty());
    assert!(e.drop_table("gone.t").unwrap());
    assert!(
        !e.database_exists("gone"),
        "never created: went with its last table"
    );
}
