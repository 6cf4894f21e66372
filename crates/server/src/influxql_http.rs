//! InfluxQL on `/query`: SELECT (translated per measurement into SQL and planned by the front
//! door, `tempora_query::influxql`) and the SHOW family (answered from the catalog), in
//! InfluxDB 1.8's JSON shape: `{"results": [{"statement_id", "series": [{"name", "tags",
//! "columns", "values"}]}]}`, times as RFC 3339 or, with `epoch=`, integers in that unit.
//!
//! Invariants: every statement needs read permission on the database it reads (the SQL it
//! becomes is checked as any SQL is); an error ends only its own statement's result.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};
use tempora_query::influxql::ast::{KeyMatch, Select, Source, Statement};
use tempora_query::influxql::translate::{self, Columns, Translated};

use crate::error::ServerError;
use crate::state::AppState;

/// Runs one parsed statement other than the ones `influx.rs` answers itself.
pub async fn run(
    s: &AppState,
    who: &crate::auth::Principal,
    id: usize,
    stmt: &Statement,
    p: &HashMap<String, String>,
) -> Value {
    let result = match stmt {
        Statement::Select(sel) => select(s, who, sel, p).await,
        other => show(s, who, other, p).await,
    };
    match result {
        Ok(series) if series.is_empty() => json!({ "statement_id": id }),
        Ok(series) => json!({ "statement_id": id, "series": series }),
        Err(e) => json!({ "statement_id": id, "error": e.to_string() }),
    }
}

fn default_db(s: &AppState, p: &HashMap<String, String>) -> String {
    p.get("db")
        .filter(|d| !d.is_empty())
        .cloned()
        .unwrap_or_else(|| s.config.default_database.clone())
}

/// The measurements a source names, with their database.
fn measurements(
    s: &AppState,
    src: &Source,
    db: &str,
) -> Result<Vec<(String, String)>, ServerError> {
    let inner = s.ready()?;
    Ok(match src {
        Source::Name { db: d, name } => {
            vec![(d.clone().unwrap_or_else(|| db.into()), name.clone())]
        }
        Source::Regex(re) => {
            let re = regex::Regex::new(re)
                .map_err(|e| ServerError::BadRequest(format!("invalid regex /{re}/: {e}")))?;
            inner
                .query
                .dbs
                .tables(db)
                .into_iter()
                .filter(|t| re.is_match(t))
                .map(|t| (db.to_string(), t))
                .collect()
        }
    })
}

fn columns_of(s: &AppState, db: &str, m: &str) -> Option<Columns> {
    let inner = s.ready().ok()?;
    let schema = inner
        .engine
        .schema(&tempora_storage::catalog::qualified(db, m))?;
    Some(Columns {
        tags: sorted(schema.tags().map(str::to_string).collect()),
        fields: sorted(
            schema
                .fields()
                .map(|(n, t)| (n.to_string(), t.name().to_string()))
                .collect(),
        ),
    })
}

/// InfluxDB lists keys by name.
fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

/// Runs SQL for `db` under the caller's permissions; the rows as JSON arrays.
async fn sql_rows(
    s: &AppState,
    who: &crate::auth::Principal,
    db: &str,
    sql: &str,
) -> Result<Vec<Vec<Value>>, ServerError> {
    let inner = s.ready()?;
    let mut opts = tempora_query::QueryOptions {
        max_rows: Some(s.config.max_result_rows),
        ..Default::default()
    };
    let out = inner
        .query
        .run(
            db,
            sql,
            crate::state::now_ns(),
            &mut opts,
            Vec::new(),
            &s.access.statements(who.clone()),
        )
        .await?;
    let (_, body) = crate::sql_http::encode("json", &out.schema, &out.batches)?;
    let v: Value =
        serde_json::from_slice(&body).map_err(|e| ServerError::Internal(e.to_string()))?;
    Ok(match v["rows"].clone() {
        Value::Array(rows) => rows
            .into_iter()
            .map(|r| match r {
                Value::Array(r) => r,
                other => vec![other],
            })
            .collect(),
        _ => Vec::new(),
    })
}

async fn select(
    s: &AppState,
    who: &crate::auth::Principal,
    sel: &Select,
    p: &HashMap<String, String>,
) -> Result<Vec<Value>, ServerError> {
    let db = default_db(s, p);
    let now = crate::state::now_ns();
    let mut series = Vec::new();
    for src in &sel.from {
        for (mdb, m) in measurements(s, src, &db)? {
            // Checked before the catalog is read, so a refusal tells nothing of what exists.
            let scope = tempora_query::sql::scope::Scope::Databases([mdb.clone()].into());
            s.access
                .require(who, crate::auth::Permission::Read, &scope)?;
            let Some(cols) = columns_of(s, &mdb, &m) else {
                continue; // InfluxDB: a measurement that does not exist gives no series
            };
            let t = translate::select(sel, &m, &cols, now).map_err(ServerError::BadRequest)?;
            let rows = sql_rows(s, who, &mdb, &t.sql).await?;
            series.extend(shape(&m, &t, rows, p.get("epoch").map(String::as_str))?);
        }
    }
    let page = tempora_query::influxql::ast::Page {
        limit: sel.slimit,
        offset: sel.soffset.unwrap_or(0),
    };
    Ok(page.cut(series))
}

/// Rows (group tags first, then time unless fixed, then the outputs) cut into series.
fn shape(
    name: &str,
    t: &Translated,
    rows: Vec<Vec<Value>>,
    epoch: Option<&str>,
) -> Result<Vec<Value>, ServerError> {
    let k = t.group_tags.len();
    // Per series: its key and its points (time in ns, the outputs).
    let mut out: Vec<(Vec<Value>, Vec<Point>)> = Vec::new();
    for row in rows {
        let key = row[..k].to_vec();
        let (ns, values) = match t.fixed_time {
            Some(ns) => (ns, &row[k..]),
            None => (row_time(&row[k])?, &row[k + 1..]),
        };
        let point = (ns, values.to_vec());
        match out.last_mut() {
            Some((last, points)) if *last == key => points.push(point),
            _ => out.push((key, vec![point])),
        }
    }
    let mut columns = vec!["time".to_string()];
    columns.extend(t.columns.iter().cloned());
    let mut series = Vec::new();
    for (key, mut points) in out {
        transform(&mut points, &t.transforms);
        if let Some(start) = t.drop_before {
            points.retain(|(ns, _)| *ns >= start);
        }
        if let Some(end) = t.drop_after {
            points.retain(|(ns, _)| *ns <= end);
        }
        // No series for a group with no point in range (a fill grid of nulls).
        if !points.iter().any(|(_, v)| v.iter().any(|x| !x.is_null())) {
            continue;
        }
        if let Some((limit, offset)) = t.series_limit {
            let page = tempora_query::influxql::ast::Page {
                limit: Some(limit),
                offset,
            };
            points = page.cut(points);
        }
        let mut values = Vec::with_capacity(points.len());
        for (ns, v) in points {
            let mut row = vec![ns_to_time(ns, epoch)?];
            row.extend(v.iter().map(go_number));
            values.push(Value::Array(row));
        }
        let mut s = json!({ "name": name, "columns": columns, "values": values });
        if k > 0 {
            let tags: BTreeMap<&str, Value> = t
                .group_tags
                .iter()
                .zip(key)
                .map(|(t, v)| (t.as_str(), if v.is_null() { json!("") } else { v }))
                .collect();
            s["tags"] = json!(tags);
        }
        series.push(s);
    }
    Ok(series)
}

/// A point of a series: its time in ns and its output values.
type Point = (i64, Vec<Value>);

/// Applies the derivative columns; a point left without any value is dropped, as InfluxDB
/// drops the first bucket of a derivative.
fn transform(points: &mut Vec<Point>, transforms: &[Option<translate::Transform>]) {
    if transforms.iter().all(Option::is_none) {
        return;
    }
    for (c, tr) in transforms.iter().enumerate() {
        let Some(tr) = tr else { continue };
        let input: Vec<(i64, Option<f64>)> =
            points.iter().map(|(ns, v)| (*ns, v[c].as_f64())).collect();
        for ((_, v), rate) in points.iter_mut().zip(translate::derivative(&input, *tr)) {
            v[c] = rate.map_or(Value::Null, |r| json!(r));
        }
    }
    points.retain(|(_, v)| v.iter().any(|x| !x.is_null()));
}

/// A float written as InfluxDB (Go) writes it: `15`, not `15.0`.
fn go_number(v: &Value) -> Value {
    match v.as_f64() {
        Some(f) if v.is_f64() && f.fract() == 0.0 && f.abs() < 1e15 => json!(f as i64),
        _ => v.clone(),
    }
}

/// A row's time (RFC 3339 text from the SQL answer) in ns.
fn row_time(v: &Value) -> Result<i64, ServerError> {
    match v {
        Value::String(text) => translate::parse_time(text).map_err(ServerError::Internal),
        Value::Number(n) => n
            .as_i64()
            .ok_or_else(|| ServerError::Internal(format!("a time of {n}"))),
        other => Err(ServerError::Internal(format!("a time of {other}"))),
    }
}

fn ns_to_time(ns: i64, epoch: Option<&str>) -> Result<Value, ServerError> {
    let div = match epoch {
        None => {
            let t = chrono::DateTime::from_timestamp_nanos(ns);
            return Ok(json!(
                t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
            ));
        }
        Some("ns" | "n") => 1,
        Some("u" | "µ" | "us") => 1_000,
        Some("ms") => 1_000_000,
        Some("s") => 1_000_000_000,
        Some("m") => 60_000_000_000,
        Some("h") => 3_600_000_000_000,
        Some(other) => {
            return Err(ServerError::BadRequest(format!(
                "invalid epoch {other:?}: expected ns, u, ms, s, m or h"
            )));
        }
    };
    Ok(json!(ns.div_euclid(div)))
}

async fn show(
    s: &AppState,
    who: &crate::auth::Principal,
    stmt: &Statement,
    p: &HashMap<String, String>,
) -> Result<Vec<Value>, ServerError> {
    let inner = s.ready()?;
    let pick = |d: &Option<String>| d.clone().unwrap_or_else(|| default_db(s, p));
    let read = |db: &str| {
        let scope = tempora_query::sql::scope::Scope::Databases([db.to_string()].into());
        s.access.require(who, crate::auth::Permission::Read, &scope)
    };
    // The measurements a SHOW covers.
    let covered = |db: &str, from: &Option<Source>| -> Result<Vec<String>, ServerError> {
        Ok(match from {
            Some(src) => measurements(s, src, db)?
                .into_iter()
                .map(|(_, m)| m)
                .collect(),
            None => inner.query.dbs.tables(db),
        })
    };
    match stmt {
        Statement::ShowMeasurements { db, regex, page } => {
            let db = pick(db);
            read(&db)?;
            let re = regex
                .as_deref()
                .map(regex::Regex::new)
                .transpose()
                .map_err(|e| ServerError::BadRequest(format!("invalid regex: {e}")))?;
            let values: Vec<Value> = page.cut(
                inner
                    .query
                    .dbs
                    .tables(&db)
                    .into_iter()
                    .filter(|t| re.as_ref().is_none_or(|r| r.is_match(t)))
                    .map(|t| json!([t])),
            );
            Ok(match values.is_empty() {
                true => Vec::new(),
                false => {
                    vec![json!({ "name": "measurements", "columns": ["name"], "values": values })]
                }
            })
        }
        Statement::ShowTagKeys { db, from, page } | Statement::ShowFieldKeys { db, from, page } => {
            let db = pick(db);
            read(&db)?;
            let tags = matches!(stmt, Statement::ShowTagKeys { .. });
            let mut out = Vec::new();
            for m in covered(&db, from)? {
                let Some(c) = columns_of(s, &db, &m) else {
                    continue;
                };
                let (columns, values): (Value, Vec<Value>) = if tags {
                    (
                        json!(["tagKey"]),
                        page.cut(c.tags.iter().map(|t| json!([t]))),
                    )
                } else {
                    (
                        json!(["fieldKey", "fieldType"]),
                        page.cut(c.fields.iter().map(|(f, ty)| json!([f, ty]))),
                    )
                };
                if !values.is_empty() {
                    out.push(json!({ "name": m, "columns": columns, "values": values }));
                }
            }
            Ok(out)
        }
        Statement::ShowTagValues {
            db,
            from,
            key,
            condition,
            page,
        } => {
            let db = pick(db);
            read(&db)?;
            let mut out = Vec::new();
            for m in covered(&db, from)? {
                let Some(c) = columns_of(s, &db, &m) else {
                    continue;
                };
                let keys: Vec<&String> = c
                    .tags
                    .iter()
                    .filter(|t| match key {
                        KeyMatch::Eq(k) => *t == k,
                        KeyMatch::In(ks) => ks.contains(t),
                        KeyMatch::Regex(re) => regex::Regex::new(re).is_ok_and(|r| r.is_match(t)),
                    })
                    .collect();
                let mut values = Vec::new();
                let fast = index_matcher(&c, condition)?;
                for k in keys {
                    if let Some(matcher) = &fast {
                        let sets = index_tag_sets(s, &db, &m, vec![k.clone()], matcher).await?;
                        values.extend(
                            sets.into_iter()
                                .filter_map(|mut v| v.pop().flatten())
                                .map(|v| json!([k, v])),
                        );
                        continue;
                    }
                    let q = quote(k);
                    let sql = format!(
                        "{} WHERE {q} IS NOT NULL ORDER BY {q}",
                        distinct_tags_sql(&m, &c, std::slice::from_ref(k), condition)?
                    );
                    for row in sql_rows(s, who, &db, &sql).await? {
                        values.push(json!([k, row[0]]));
                    }
                }
                let values = page.cut(values);
                if !values.is_empty() {
                    out.push(json!({ "name": m, "columns": ["key", "value"], "values": values }));
                }
            }
            Ok(out)
        }
        Statement::ShowSeries {
            db,
            from,
            condition,
            page,
        } => {
            let db = pick(db);
            read(&db)?;
            let mut keys = Vec::new();
            for m in covered(&db, from)? {
                let Some(c) = columns_of(s, &db, &m) else {
                    continue;
                };
                if c.tags.is_empty() {
                    keys.push(m.clone());
                    continue;
                }
                let rows: Vec<Vec<Value>> = match index_matcher(&c, condition)? {
                    Some(matcher) => index_tag_sets(s, &db, &m, c.tags.clone(), &matcher)
                        .await?
                        .into_iter()
                        .map(|set| set.into_iter().map(|v| json!(v)).collect())
                        .collect(),
                    None => {
                        let sql = distinct_tags_sql(&m, &c, &c.tags, condition)?;
                        sql_rows(s, who, &db, &sql).await?
                    }
                };
                for row in rows {
                    let mut key = m.clone();
                    for (t, v) in c.tags.iter().zip(row) {
                        if let Some(v) = v.as_str() {
                            key.push_str(&format!(",{t}={v}"));
                        }
                    }
                    keys.push(key);
                }
            }
            keys.sort();
            let keys = page.cut(keys);
            Ok(match keys.is_empty() {
                true => Vec::new(),
                false => vec![
                    json!({ "columns": ["key"], "values": keys.iter().map(|k| json!([k])).collect::<Vec<_>>() }),
                ],
            })
        }
        _ => Err(ServerError::BadRequest("unsupported statement".into())),
    }
}

/// The series-index matcher of a SHOW statement's condition, when it reads tags only (no
/// condition: every series); `None` when it needs a scan (fields, time).
fn index_matcher(
    c: &Columns,
    condition: &Option<tempora_query::influxql::ast::Expr>,
) -> Result<Option<tempora_index::Matcher>, ServerError> {
    let Some(cond) = condition else {
        return Ok(Some(tempora_index::Matcher::All));
    };
    let fields: Vec<String> = c.fields.iter().map(|(f, _)| f.clone()).collect();
    tempora_query::influxql::tag_matcher::matcher(cond, &fields)
        .transpose()
        .map_err(ServerError::BadRequest)
}

/// The distinct value tuples of `tags` (a missing or empty value is `None`) over the series
/// of measurement `m` that `matcher` selects, sorted, read from the series indexes off the
/// async runtime; at most `max_result_rows` of them.
async fn index_tag_sets(
    s: &AppState,
    db: &str,
    m: &str,
    tags: Vec<String>,
    matcher: &tempora_index::Matcher,
) -> Result<std::collections::BTreeSet<Vec<Option<String>>>, ServerError> {
    let engine = s.ready()?.engine.clone();
    let qualified = tempora_storage::catalog::qualified(db, m);
    let limit = s.config.max_result_rows;
    let matcher = matcher.clone();
    tokio::task::spawn_blocking(move || {
        let mut out = std::collections::BTreeSet::new();
        tempora_query::series_tags::each_series(&engine, &qualified, &tags, matcher, None, &mut |v| {
            out.insert(v.iter().map(|v| v.map(str::to_string)).collect());
            if out.len() > limit {
                return Err(tempora_query::QueryError::Sql(format!(
                    "more than {limit} series or tag values match (max_result_rows); narrow the condition"
                )));
            }
            Ok(())
        })?;
        Ok::<_, ServerError>(out)
    })
    .await
    .map_err(|e| ServerError::Internal(e.to_string()))?
}

fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// SQL for the distinct combinations of `tags` over the points of `m` matching `condition`:
/// a SELECT of those tags takes the same translation as any SELECT (InfluxDB's rules for the
/// condition), then DISTINCT over it.
fn distinct_tags_sql(
    m: &str,
    c: &Columns,
    tags: &[String],
    condition: &Option<tempora_query::influxql::ast::Expr>,
) -> Result<String, ServerError> {
    use tempora_query::influxql::ast::{Expr, Field};
    let fields = tags
        .iter()
        .map(|t| Field {
            expr: Expr::Var(t.clone(), Some("tag".into())),
            alias: None,
        })
        .collect();
    let sel = Select::new(fields, Vec::new(), condition.clone());
    let t =
        translate::select(&sel, m, c, crate::state::now_ns()).map_err(ServerError::BadRequest)?;
    let cols: Vec<String> = tags.iter().map(|t| quote(t)).collect();
    Ok(format!(
        "SELECT DISTINCT {} FROM ({}) AS s",
        cols.join(", "),
        t.sql
    ))
}
