//! Retention as InfluxDB clients set it, mapped onto a database's settings (`ttl`,
//! `partition`; `tempora_storage::catalog::settings`).
//!
//! - InfluxQL at `/query`: `CREATE DATABASE d WITH DURATION 30d [REPLICATION n]
//!   [SHARD DURATION 1d] [NAME rp]`, `CREATE RETENTION POLICY rp ON d DURATION 30d
//!   REPLICATION 1 [SHARD DURATION 1d] [DEFAULT]`, `ALTER RETENTION POLICY rp ON d [DURATION
//!   ..] [SHARD DURATION ..]`, `DROP RETENTION POLICY rp ON d` (back to forever) and `SHOW
//!   RETENTION POLICIES [ON d]`.
//! - `/api/v2/buckets`: `GET` (all, or `?name=`), `POST {name, retentionRules}`,
//!   `PATCH /api/v2/buckets/{id}`, `DELETE /api/v2/buckets/{id}`; a bucket is a database,
//!   `retentionRules[0].everySeconds` its ttl (0: forever) and `shardGroupDurationSeconds` its
//!   partition width.
//!
//! Choice: a database has one retention, so every policy name maps onto it (`SHOW RETENTION
//! POLICIES` lists it as `autogen`, the default); `REPLICATION` is accepted and ignored (a
//! cluster replicates through shared storage). Durations are InfluxDB's (`30d`, `1h30m`,
//! `INF`). A bucket's id is 16 hex digits derived from its name.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tempora_storage::catalog::settings::{Effective, Setting, StorageSettings, parse_partition};
use tempora_storage::catalog::settings::{MAX_PARTITION_NS, parse_ttl};

use crate::error::ServerError;
use crate::state::AppState;

/// A retention statement of InfluxQL, read from its words.
#[derive(Debug, Clone, PartialEq)]
pub enum RpStatement {
    /// `CREATE DATABASE d WITH ...` (`settings` may be empty).
    CreateDatabase {
        db: String,
        settings: StorageSettings,
    },
    /// `CREATE|ALTER RETENTION POLICY rp ON d ...`; `create` is false for ALTER.
    Set {
        db: String,
        settings: StorageSettings,
        create: bool,
    },
    /// `DROP RETENTION POLICY rp ON d`.
    Drop { db: String },
    /// `SHOW RETENTION POLICIES [ON d]`.
    Show { db: Option<String> },
}

fn unquote(w: &str) -> String {
    w.trim_matches('"').to_string()
}

/// Reads a retention statement; `None` when `words` are not one, an error naming the word
/// when they are one but malformed.
pub fn parse(words: &[&str]) -> Option<Result<RpStatement, String>> {
    let up: Vec<String> = words.iter().map(|w| w.to_ascii_uppercase()).collect();
    let up: Vec<&str> = up.iter().map(String::as_str).collect();
    Some(match up.as_slice() {
        ["CREATE", "DATABASE", _, "WITH", ..] => {
            clauses(&words[4..]).map(|settings| RpStatement::CreateDatabase {
                db: unquote(words[2]),
                settings,
            })
        }
        [
            verb @ ("CREATE" | "ALTER"),
            "RETENTION",
            "POLICY",
            _,
            "ON",
            _,
            ..,
        ] => clauses(&words[6..]).map(|settings| RpStatement::Set {
            db: unquote(words[5]),
            settings,
            create: *verb == "CREATE",
        }),
        ["DROP", "RETENTION", "POLICY", _, "ON", _] => Ok(RpStatement::Drop {
            db: unquote(words[5]),
        }),
        ["SHOW", "RETENTION", "POLICIES"] => Ok(RpStatement::Show { db: None }),
        ["SHOW", "RETENTION", "POLICIES", "ON", _] => Ok(RpStatement::Show {
            db: Some(unquote(words[4])),
        }),
        _ => return None,
    })
}

/// `DURATION d`, `REPLICATION n`, `SHARD DURATION d`, `NAME rp`, `DEFAULT`, in any order.
fn clauses(words: &[&str]) -> Result<StorageSettings, String> {
    let mut s = StorageSettings::default();
    let mut i = 0;
    let value = |i: usize, what: &str| {
        words
            .get(i)
            .copied()
            .ok_or_else(|| format!("{what} needs a value"))
    };
    while i < words.len() {
        match words[i].to_ascii_uppercase().as_str() {
            "DURATION" => {
                let v = value(i + 1, "DURATION")?;
                s.ttl = Some(parse_ttl(v).map_err(|e| e.to_string())?);
                i += 2;
            }
            "SHARD"
                if words
                    .get(i + 1)
                    .is_some_and(|w| w.eq_ignore_ascii_case("DURATION")) =>
            {
                let v = value(i + 2, "SHARD DURATION")?;
                s.partition = Some(parse_partition(v).map_err(|e| e.to_string())?);
                i += 3;
            }
            "REPLICATION" | "NAME" => {
                value(i + 1, words[i])?;
                i += 2;
            }
            "DEFAULT" => i += 1,
            other => return Err(format!("unexpected word {other:?} in a retention policy")),
        }
    }
    Ok(s)
}

/// InfluxDB's text of a duration in ns (`720h0m0s`; `0s` for forever).
pub fn influx_duration(ns: Option<i64>) -> String {
    match ns {
        None => "0s".into(),
        Some(n) => {
            let s = n / 1_000_000_000;
            format!("{}h{}m{}s", s / 3600, s % 3600 / 60, s % 60)
        }
    }
}

/// Runs a retention statement; the result as InfluxDB's JSON for statement `id`.
pub fn run(s: &AppState, id: usize, stmt: RpStatement) -> Result<Value, ServerError> {
    let inner = s.ready()?;
    let dbs = &inner.query.dbs;
    let engine = dbs.engine();
    match stmt {
        RpStatement::CreateDatabase { db, settings } => dbs.create_with(&db, settings)?,
        RpStatement::Set { db, settings, .. } => {
            if !dbs.exists(&db) {
                return Err(ServerError::BadRequest(format!("database not found: {db}")));
            }
            engine.set_database_settings(&db, settings)?;
        }
        RpStatement::Drop { db } => {
            let forever = StorageSettings {
                ttl: Some(Setting::Unbounded),
                partition: None,
                rollups: None,
            };
            engine.set_database_settings(&db, forever)?;
        }
        RpStatement::Show { db } => {
            let db = db.unwrap_or_else(|| s.config.default_database.clone());
            if !dbs.exists(&db) {
                return Err(ServerError::BadRequest(format!("database not found: {db}")));
            }
            let (_, eff) = engine.database_settings(&db);
            let shard = eff.partition_ns.unwrap_or(24 * 3_600_000_000_000);
            let row = json!([
                "autogen",
                influx_duration(eff.ttl_ns),
                influx_duration(Some(shard)),
                1,
                true
            ]);
            return Ok(json!({ "statement_id": id, "series": [{
                "columns": ["name", "duration", "shardGroupDuration", "replicaN", "default"],
                "values": [row] }] }));
        }
    }
    Ok(json!({ "statement_id": id }))
}

/// A bucket's id: 16 hex digits from its name.
fn bucket_id(name: &str) -> String {
    format!("{:016x}", tempora_model::series_hash(name.as_bytes()))
}

fn bucket_json(name: &str, eff: Effective) -> Value {
    let secs = |ns: Option<i64>| ns.map_or(0, |n| n / 1_000_000_000);
    json!({
        "id": bucket_id(name),
        "name": name,
        "orgID": "0000000000000001",
        "type": "user",
        "retentionRules": [{
            "type": "expire",
            "everySeconds": secs(eff.ttl_ns),
            "shardGroupDurationSeconds": secs(eff.partition_ns),
        }],
    })
}

/// The settings a bucket body's `retentionRules` name.
fn rules(body: &Value) -> Result<StorageSettings, ServerError> {
    let mut s = StorageSettings::default();
    let Some(rule) = body.get("retentionRules").and_then(|r| r.get(0)) else {
        return Ok(s);
    };
    let secs = |key: &str| -> Result<Option<i64>, ServerError> {
        match rule.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_i64()
                .filter(|n| (0..=MAX_PARTITION_NS / 1_000_000_000).contains(n))
                .map(Some)
                .ok_or_else(|| {
                    ServerError::BadRequest(format!(
                        "retentionRules[0].{key}: expected whole seconds, got {v}"
                    ))
                }),
        }
    };
    if let Some(n) = secs("everySeconds")? {
        s.ttl = Some(parse_ttl(&format!("{n}s"))?);
    }
    if let Some(n) = secs("shardGroupDurationSeconds")?.filter(|n| *n > 0) {
        s.partition = Some(parse_partition(&format!("{n}s"))?);
    }
    Ok(s)
}

fn reply(r: Result<Response, ServerError>) -> Response {
    r.unwrap_or_else(|e| {
        (
            e.status(),
            Json(json!({ "code": "invalid", "message": e.to_string() })),
        )
            .into_response()
    })
}

/// The database a bucket id names.
fn db_of(s: &AppState, id: &str) -> Result<String, ServerError> {
    let inner = s.ready()?;
    inner
        .query
        .dbs
        .list()
        .into_iter()
        .find(|d| bucket_id(d) == id)
        .ok_or_else(|| ServerError::BadRequest(format!("bucket {id:?} not found")))
}

/// `GET /api/v2/buckets[?name=]`.
pub async fn list(
    State(s): State<Arc<AppState>>,
    Query(p): Query<std::collections::HashMap<String, String>>,
) -> Response {
    reply((|| {
        let inner = s.ready()?;
        let buckets: Vec<Value> = inner
            .query
            .dbs
            .list()
            .into_iter()
            .filter(|d| p.get("name").is_none_or(|n| n == d))
            .map(|d| bucket_json(&d, inner.query.dbs.engine().database_settings(&d).1))
            .collect();
        Ok(Json(json!({ "buckets": buckets })).into_response())
    })())
}

/// `POST /api/v2/buckets`.
pub async fn create(State(s): State<Arc<AppState>>, Json(body): Json<Value>) -> Response {
    reply((|| {
        let name = body
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| ServerError::BadRequest("a bucket needs a \"name\"".into()))?;
        let settings = rules(&body)?;
        let inner = s.ready()?;
        if inner.query.dbs.exists(name) {
            return Err(ServerError::BadRequest(format!(
                "bucket with name {name} already exists"
            )));
        }
        inner.query.dbs.create_with(name, settings)?;
        let eff = inner.query.dbs.engine().database_settings(name).1;
        Ok((StatusCode::CREATED, Json(bucket_json(name, eff))).into_response())
    })())
}

/// `PATCH /api/v2/buckets/{id}`: new retention rules.
pub async fn update(
    State(s): State<Arc<AppState>>,
    Path(id): Path<String>,
    Json(body): Json<Value>,
) -> Response {
    reply((|| {
        let db = db_of(&s, &id)?;
        let engine = s.ready()?.query.dbs.engine().clone();
        engine.set_database_settings(&db, rules(&body)?)?;
        Ok(Json(bucket_json(&db, engine.database_settings(&db).1)).into_response())
    })())
}

/// `DELETE /api/v2/buckets/{id}`: drops the database.
pub async fn delete(State(s): State<Arc<AppState>>, Path(id): Path<String>) -> Response {
    reply((|| {
        let db = db_of(&s, &id)?;
        let inner = s.ready()?;
        inner.query.dbs.drop_database(&db)?;
        inner.query.forget(&db);
        Ok(StatusCode::NO_CONTENT.into_response())
    })())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_statements_read_as_settings() {
        let day = 86_400_000_000_000i64;
        let cases: [(&str, RpStatement); 4] = [
            (
                "CREATE DATABASE \"iot\" WITH DURATION 30d REPLICATION 1 SHARD DURATION 1d NAME \"rp\"",
                RpStatement::CreateDatabase {
                    db: "iot".into(),
                    settings: StorageSettings {
                        ttl: Some(Setting::Ns(30 * day)),
                        partition: Some(Setting::Ns(day)),
                        rollups: None,
                    },
                },
            ),
            (
                "create retention policy \"one_week\" on \"iot\" duration 1w replication 1 default",
                RpStatement::Set {
                    db: "iot".into(),
                    settings: StorageSettings {
                        ttl: Some(Setting::Ns(7 * day)),
                        partition: None,
                        rollups: None,
                    },
                    create: true,
                },
            ),
            (
                "ALTER RETENTION POLICY autogen ON iot DURATION INF",
                RpStatement::Set {
                    db: "iot".into(),
                    settings: StorageSettings {
                        ttl: Some(Setting::Unbounded),
                        partition: None,
                        rollups: None,
                    },
                    create: false,
                },
            ),
            (
                "SHOW RETENTION POLICIES ON iot",
                RpStatement::Show {
                    db: Some("iot".into()),
                },
            ),
        ];
        for (text, want) in cases {
            let words: Vec<&str> = text.split_whitespace().collect();
            assert_eq!(parse(&words).unwrap().unwrap(), want, "{text}");
        }
        for (text, word) in [
            (
                "CREATE RETENTION POLICY rp ON d DURATION",
                "DURATION needs a value",
            ),
            ("CREATE RETENTION POLICY rp ON d DURATION 10s", "1m"),
            (
                "CREATE RETENTION POLICY rp ON d DURATION 1d SIDEWAYS",
                "SIDEWAYS",
            ),
        ] {
            let words: Vec<&str> = text.split_whitespace().collect();
            let e = parse(&words).unwrap().unwrap_err();
            assert!(e.contains(word), "{text}: {e}");
        }
        assert!(parse(&["SHOW", "DATABASES"]).is_none());
        assert_eq!(influx_duration(Some(30 * day)), "720h0m0s");
        assert_eq!(influx_duration(None), "0s");
    }
}
