//! `SHOW server_version` and the other fixed settings, answered from the one settings table
//! (`tempora_query::functions::pg_settings`) on both protocols, before datafusion-postgres's
//! own `SHOW` hook (which names DataFusion as the server); `TimeZone` from the session.
//! Other session settings (`statement_timeout`, `DateStyle`, …) are left to that hook.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::{DFSchema, ParamValues};
use datafusion::logical_expr::{EmptyRelation, LogicalPlan};
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::Statement;
use datafusion_postgres::hooks::{HookClient, QueryHook};
use datafusion_postgres::pgwire;
use pgwire::api::ClientInfo;
use pgwire::api::Type;
use pgwire::api::results::{DataRowEncoder, FieldFormat, FieldInfo, QueryResponse, Response};
use pgwire::error::{PgWireError, PgWireResult};
use tempora_query::functions::pg_settings::setting;

/// Settings no session changes.
const FIXED: &[&str] = &[
    "server_version",
    "server_version_num",
    "server_encoding",
    "max_identifier_length",
    "integer_datetimes",
    "block_size",
    "lc_collate",
    "lc_ctype",
    "is_superuser",
    "standard_conforming_strings",
    "max_connections",
];

/// The setting a `SHOW` statement names: (its column title as PostgreSQL prints it, value).
/// A fixed setting answers from the table; `TimeZone` from the session (`SET TIME ZONE`
/// writes `timezone`, a client's start-up parameter `TimeZone`), else `UTC`. Every other
/// name is left to datafusion-postgres's hook, which knows the session's other settings
/// (`statement_timeout`, `DateStyle`, …).
pub fn shown(
    s: &Statement,
    session: Option<&std::collections::HashMap<String, String>>,
) -> Option<(String, String)> {
    let Statement::ShowVariable { variable } = s else {
        return None;
    };
    let name = match variable.as_slice() {
        [one] => one.value.to_ascii_lowercase(),
        [a, b] if a.value.eq_ignore_ascii_case("time") && b.value.eq_ignore_ascii_case("zone") => {
            "timezone".to_string()
        }
        _ => return None,
    };
    if FIXED.contains(&name.as_str()) {
        return setting(&name).map(|v| (name, v));
    }
    if name != "timezone" {
        return None;
    }
    let session = session.and_then(|m| m.get("timezone").or_else(|| m.get("TimeZone")));
    let zone = session.cloned().or_else(|| setting("timezone"))?;
    Some(("TimeZone".to_string(), zone))
}

fn response(name: &str, value: &str) -> PgWireResult<Response> {
    let fields = Arc::new(vec![FieldInfo::new(
        name.to_string(),
        None,
        None,
        Type::TEXT,
        FieldFormat::Text,
    )]);
    let mut encoder = DataRowEncoder::new(fields.clone());
    encoder.encode_field(&Some(value))?;
    let row = encoder.take_row();
    let rows = futures::stream::once(async move { Ok(row) });
    Ok(Response::Query(QueryResponse::new(fields, Box::pin(rows))))
}

/// The hook.
pub struct ShowSettings;

#[async_trait]
impl QueryHook for ShowSettings {
    async fn handle_simple_query(
        &self,
        s: &Statement,
        _: &SessionContext,
        client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        shown(s, Some(client.metadata())).map(|(n, v)| response(&n, &v))
    }

    async fn handle_extended_parse_query(
        &self,
        s: &Statement,
        _: &SessionContext,
        _: &(dyn ClientInfo + Send + Sync),
    ) -> Option<PgWireResult<LogicalPlan>> {
        let (name, _) = shown(s, None)?;
        let schema = Schema::new(vec![Field::new(name, DataType::Utf8, false)]);
        Some(
            DFSchema::try_from(schema)
                .map(|schema| {
                    LogicalPlan::EmptyRelation(EmptyRelation {
                        produce_one_row: true,
                        schema: Arc::new(schema),
                    })
                })
                .map_err(|e| PgWireError::ApiError(Box::new(e))),
        )
    }

    async fn handle_extended_query(
        &self,
        s: &Statement,
        _: &LogicalPlan,
        _: &ParamValues,
        _: &SessionContext,
        client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        shown(s, Some(client.metadata())).map(|(n, v)| response(&n, &v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::{dialect::PostgreSqlDialect, parser::Parser};

    #[test]
    fn settings_shown() {
        let mut session = std::collections::HashMap::new();
        session.insert("TimeZone".to_string(), "Europe/Paris".to_string());
        let cases = [
            (
                "server version",
                "SHOW server_version",
                Some(("server_version", None)),
            ),
            (
                "any case",
                "SHOW SERVER_VERSION_NUM",
                Some(("server_version_num", Some("160006"))),
            ),
            (
                "the session's zone",
                "SHOW TimeZone",
                Some(("TimeZone", Some("Europe/Paris"))),
            ),
            (
                "TIME ZONE spelled apart",
                "SHOW TIME ZONE",
                Some(("TimeZone", Some("Europe/Paris"))),
            ),
            (
                "other session settings are the session hook's",
                "SHOW DateStyle",
                None,
            ),
            (
                "statement_timeout is the session hook's",
                "SHOW statement_timeout",
                None,
            ),
            ("unknown", "SHOW nothing_here", None),
            ("not a show", "SELECT 1", None),
        ];
        for (name, sql, want) in cases {
            let s = Parser::parse_sql(&PostgreSqlDialect {}, sql)
                .unwrap()
                .remove(0);
            let got = shown(&s, Some(&session));
            match want {
                None => assert_eq!(got, None, "{name}"),
                Some((n, v)) => {
                    let (gn, gv) = got.expect(name);
                    assert_eq!(gn, n, "{name}");
                    if let Some(v) = v {
                        assert_eq!(gv, v, "{name}");
                    }
                }
            }
        }
    }
}
