//! PostgreSQL type names in `information_schema.columns.data_type`.
//!
//! DataFusion's information schema names column types as Arrow does (`Utf8`,
//! `Timestamp(ns, "UTC")`); Grafana's query builder, DBeaver and SQLAlchemy read
//! `data_type` to find time and text columns and expect PostgreSQL's names (`text`,
//! `timestamp with time zone`). This analyzer rule wraps every scan of
//! `information_schema.columns` — however the query spells it (alias, case, quoting,
//! subquery, join) — in a projection that maps `data_type` through [`pg_type_name`].
//!
//! Every `information_schema` table with a database column is filtered to the connected
//! database, as PostgreSQL lists only its own.
//!
//! Invariant: [`pg_type_name`] is idempotent (a PostgreSQL name maps to itself), so a plan
//! analysed twice is unchanged by the second pass.

use std::str::FromStr;
use std::sync::Arc;

use arrow::array::{AsArray, StringArray};
use arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, Expr, LogicalPlan, LogicalPlanBuilder, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;

/// PostgreSQL's name (as `information_schema.columns.data_type` gives it) of an Arrow type
/// written as Arrow displays it; text that is not an Arrow type is returned as it is.
pub fn pg_type_name(arrow: &str) -> String {
    let Ok(t) = DataType::from_str(arrow) else {
        return arrow.to_string();
    };
    of(&t).unwrap_or(arrow).to_string()
}

fn of(t: &DataType) -> Option<&'static str> {
    Some(match t {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "text",
        DataType::Dictionary(_, v) => return of(v),
        DataType::Boolean => "boolean",
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => "smallint",
        DataType::Int32 | DataType::UInt16 => "integer",
        DataType::Int64 | DataType::UInt32 => "bigint",
        DataType::UInt64 | DataType::Decimal128(..) | DataType::Decimal256(..) => "numeric",
        DataType::Float16 | DataType::Float32 => "real",
        DataType::Float64 => "double precision",
        DataType::Timestamp(_, Some(_)) => "timestamp with time zone",
        DataType::Timestamp(_, None) => "timestamp without time zone",
        DataType::Date32 | DataType::Date64 => "date",
        DataType::Time32(_) | DataType::Time64(_) => "time without time zone",
        DataType::Interval(_) | DataType::Duration(TimeUnit::Nanosecond) => "interval",
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => "bytea",
        DataType::FixedSizeBinary(_) => "bytea",
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..) => "ARRAY",
        DataType::Null => "unknown",
        _ => "USER-DEFINED",
    })
}

/// PostgreSQL's `udt_name` (`int8`, `float8`, `timestamptz`, …) of an Arrow type or of a
/// PostgreSQL type name.
pub fn pg_udt_name(t: &str) -> String {
    match pg_type_name(t).as_str() {
        "text" => "text",
        "boolean" => "bool",
        "smallint" => "int2",
        "integer" => "int4",
        "bigint" => "int8",
        "numeric" => "numeric",
        "real" => "float4",
        "double precision" => "float8",
        "timestamp with time zone" => "timestamptz",
        "timestamp without time zone" => "timestamp",
        "date" => "date",
        "time without time zone" => "time",
        "interval" => "interval",
        "bytea" => "bytea",
        other => return other.to_string(),
    }
    .to_string()
}

/// `pg_type_name(text)` as a function (used by the rule; callable from SQL too).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PgTypeName {
    signature: Signature,
    /// `pg_udt_name` rather than `pg_type_name`.
    udt: bool,
}

impl Default for PgTypeName {
    fn default() -> Self {
        Self {
            signature: Signature::exact(vec![DataType::Utf8], Volatility::Immutable),
            udt: false,
        }
    }
}

impl PgTypeName {
    /// `pg_udt_name(text)`.
    pub fn udt() -> Self {
        Self {
            udt: true,
            ..Self::default()
        }
    }
    fn map(&self, t: &str) -> String {
        match self.udt {
            true => pg_udt_name(t),
            false => pg_type_name(t),
        }
    }
}

impl ScalarUDFImpl for PgTypeName {
    fn name(&self) -> &str {
        match self.udt {
            true => "pg_udt_name",
            false => "pg_type_name",
        }
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Ok(match &args.args[0] {
            ColumnarValue::Scalar(ScalarValue::Utf8(v)) => {
                ColumnarValue::Scalar(ScalarValue::Utf8(v.as_deref().map(|t| self.map(t))))
            }
            ColumnarValue::Array(a) => {
                let out: StringArray = a
                    .as_string::<i32>()
                    .iter()
                    .map(|v| v.map(|t| self.map(t)))
                    .collect();
                ColumnarValue::Array(Arc::new(out))
            }
            other => {
                return datafusion::common::exec_err!("pg_type_name: unexpected {other:?}");
            }
        })
    }
}

/// The rule.
#[derive(Debug, Default)]
pub struct PgTypeNamesRule;

/// The column naming the database of each row of an `information_schema` table, for the
/// tables that have one.
fn catalog_column(scan: &datafusion::logical_expr::TableScan) -> Option<&'static str> {
    let t = &scan.table_name;
    if t.schema() != Some("information_schema") {
        return None;
    }
    match t.table() {
        "tables" | "columns" | "views" => Some("table_catalog"),
        "schemata" => Some("catalog_name"),
        _ => None,
    }
}

impl AnalyzerRule for PgTypeNamesRule {
    fn name(&self) -> &str {
        "tempora_pg_type_names"
    }

    /// Wraps each scan of an `information_schema` table in a filter to the connected
    /// database (as PostgreSQL lists only its own), and gives `columns.data_type`
    /// PostgreSQL's names.
    fn analyze(&self, plan: LogicalPlan, config: &ConfigOptions) -> Result<LogicalPlan> {
        let udf = Arc::new(ScalarUDF::new_from_impl(PgTypeName::default()));
        let db = config.catalog.default_catalog.clone();
        // Subqueries too (EXISTS, IN, scalar): each holds a plan of its own.
        plan.transform_up_with_subqueries(|node| {
            let LogicalPlan::TableScan(scan) = &node else {
                return Ok(Transformed::no(node));
            };
            let Some(catalog) = catalog_column(scan) else {
                return Ok(Transformed::no(node));
            };
            let schema = scan.projected_schema.clone();
            let has = |n: &str| schema.field_with_unqualified_name(n).is_ok();
            let (typed, filtered) = (
                has("data_type") && scan.table_name.table() == "columns",
                has(catalog),
            );
            let mut b = LogicalPlanBuilder::from(node);
            if typed {
                let exprs: Vec<Expr> = schema
                    .iter()
                    .map(|(q, f)| {
                        let col =
                            Expr::Column(datafusion::common::Column::new(q.cloned(), f.name()));
                        if f.name() == "data_type" {
                            udf.call(vec![col]).alias_qualified(q.cloned(), "data_type")
                        } else {
                            col
                        }
                    })
                    .collect();
                b = b.project(exprs)?;
            }
            if filtered {
                let (q, _) = schema.qualified_field_with_unqualified_name(catalog)?;
                let col = Expr::Column(datafusion::common::Column::new(q.cloned(), catalog));
                b = b.filter(col.eq(datafusion::prelude::lit(db.clone())))?;
            }
            Ok(Transformed::yes(b.build()?))
        })
        .map(|t| t.data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrow_names_become_postgres_names() {
        let cases = [
            ("tag", "Utf8", "text"),
            ("time", "Timestamp(ns, \"UTC\")", "timestamp with time zone"),
            (
                "time without zone",
                "Timestamp(ns)",
                "timestamp without time zone",
            ),
            ("float field", "Float64", "double precision"),
            ("integer field", "Int64", "bigint"),
            ("unsigned field", "UInt64", "numeric"),
            ("boolean field", "Boolean", "boolean"),
            ("dictionary tag", "Dictionary(Int32, Utf8)", "text"),
            ("already postgres (idempotent)", "text", "text"),
            (
                "already postgres, two words",
                "double precision",
                "double precision",
            ),
        ];
        for (name, arrow, want) in cases {
            assert_eq!(pg_type_name(arrow), want, "{name}");
        }
    }
}
