//! Dense tables in SQL (issue 25): `CREATE TABLE … WITH (layout = 'dense', interval = '1s'
//! [, block = '1d'])` read into the engine's [`DenseSpec`], and the declaration written back
//! as text for `information_schema.views` and `DESCRIBE`.
//!
//! A dense table's fields are fixed width: DOUBLE, BIGINT, BIGINT UNSIGNED, BOOLEAN and
//! VARCHAR(n) (n ≤ 4096 bytes; a text field needs its length). `layout = 'ordinary'` (the
//! default) is the columnar layout; `interval`, `block` and `cold_after` (blocks that ended
//! that long ago become compressed, read-only Parquet files) belong to dense tables only.

use tempora_model::{ColumnKind, FieldType, TableSchema};
use tempora_storage::catalog::settings::{format_duration_ns, parse_duration_ns};
use tempora_storage::dense::DenseSpec;
use tempora_storage::dense::layout::DenseField;

use crate::error::{QueryError, Result};
use crate::sql::ddl::Options;

fn bad(msg: String) -> QueryError {
    QueryError::Sql(format!("CREATE TABLE: {msg}"))
}

/// Splits a CREATE TABLE's options into the layout's (`layout`, `interval`, `block`) and the
/// rest (storage settings); reads the layout's into a spec for `columns` (`None`: ordinary).
pub fn layout_options(
    options: &Options,
    columns: &[(String, ColumnKind)],
    lengths: &[(String, usize)],
) -> Result<(Option<DenseSpec>, Options)> {
    let (mut layout, mut interval, mut block, mut cold) = (None, None, None, None);
    let mut rest = Vec::new();
    for (k, v) in options {
        match k.as_str() {
            "layout" => layout = Some(v.to_ascii_lowercase()),
            "interval" => interval = Some(duration("interval", v)?),
            "block" => block = Some(duration("block", v)?),
            "cold_after" => cold = Some(duration("cold_after", v)?),
            _ => rest.push((k.clone(), v.clone())),
        }
    }
    match layout.as_deref() {
        Some("dense") => {}
        None | Some("ordinary") | Some("columnar") => {
            if interval.is_some() || block.is_some() || cold.is_some() {
                return Err(bad(
                    "`interval`, `block` and `cold_after` are options of dense tables; add \
                     layout = 'dense'"
                        .into(),
                ));
            }
            return Ok((None, rest));
        }
        Some(other) => {
            return Err(bad(format!(
                "unknown layout {other:?} (known: 'dense', 'ordinary')"
            )));
        }
    }
    let interval = interval.ok_or_else(|| {
        bad("a dense table needs its point interval, as in interval = '1s'".into())
    })?;
    let fields = columns
        .iter()
        .filter_map(|(name, kind)| match kind {
            ColumnKind::Field(ty) => Some(DenseField {
                name: name.clone(),
                ty: *ty,
                max_len: match ty {
                    FieldType::Str => lengths
                        .iter()
                        .find(|(n, _)| n == name)
                        .map_or(0, |(_, l)| *l),
                    _ => 0,
                },
            }),
            ColumnKind::Tag => None,
        })
        .collect();
    let spec = DenseSpec::new(interval, block, fields)
        .and_then(|s| s.with_cold_after(cold))
        .map_err(bad)?;
    Ok((Some(spec), rest))
}

fn duration(key: &str, v: &str) -> Result<i64> {
    parse_duration_ns(v).map_err(|e| bad(format!("{key} = {v:?}: {e}")))
}

/// The SQL type a dense field is declared with.
pub fn field_sql(f: &DenseField) -> String {
    match f.ty {
        FieldType::F64 => "DOUBLE".into(),
        FieldType::I64 => "BIGINT".into(),
        FieldType::U64 => "BIGINT UNSIGNED".into(),
        FieldType::Bool => "BOOLEAN".into(),
        FieldType::Str => format!("VARCHAR({})", f.max_len),
    }
}

/// `dense, every 1s, blocks of 1d[, cold after 30d]`: the layout as `DESCRIBE` shows it.
pub fn layout_text(spec: &DenseSpec) -> String {
    let cold = spec
        .cold_after_ns
        .map(|c| format!(", cold after {}", format_duration_ns(c)))
        .unwrap_or_default();
    format!(
        "dense, every {}, blocks of {}{cold}",
        format_duration_ns(spec.interval_ns),
        format_duration_ns(spec.block_ns)
    )
}

/// The table's declaration as `CREATE TABLE` text (`name` is the engine's `db.table`).
pub fn definition(name: &str, schema: &TableSchema, spec: &DenseSpec) -> String {
    let mut cols = vec!["time TIMESTAMP".to_string()];
    cols.extend(schema.tags().map(|t| format!("{t} TAG")));
    cols.extend(
        spec.fields
            .iter()
            .map(|f| format!("{} {}", f.name, field_sql(f))),
    );
    let table = name.split_once('.').map_or(name, |(_, t)| t);
    let cold = spec
        .cold_after_ns
        .map(|c| format!(", cold_after = '{}'", format_duration_ns(c)))
        .unwrap_or_default();
    format!(
        "CREATE TABLE {table} ({}) WITH (layout = 'dense', interval = '{}', block = '{}'{cold})",
        cols.join(", "),
        format_duration_ns(spec.interval_ns),
        format_duration_ns(spec.block_ns)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(kv: &[(&str, &str)]) -> Options {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn layout_options_read_and_refused_by_name() {
        let cols = vec![
            ("device".to_string(), ColumnKind::Tag),
            ("kwh".to_string(), ColumnKind::Field(FieldType::F64)),
            ("note".to_string(), ColumnKind::Field(FieldType::Str)),
        ];
        let lens = vec![("note".to_string(), 8)];
        let (spec, rest) = layout_options(
            &opts(&[("layout", "dense"), ("interval", "1s"), ("ttl", "30d")]),
            &cols,
            &lens,
        )
        .unwrap();
        let spec = spec.unwrap();
        assert_eq!(
            (spec.interval_ns, spec.block_ns),
            (1_000_000_000, 86_400_000_000_000)
        );
        assert_eq!(spec.fields[1].max_len, 8);
        assert_eq!(rest, opts(&[("ttl", "30d")]));
        assert!(
            layout_options(&opts(&[("ttl", "1d")]), &cols, &lens)
                .unwrap()
                .0
                .is_none()
        );
        let cases = [
            (
                "no interval",
                opts(&[("layout", "dense")]),
                &lens,
                "interval = '1s'",
            ),
            (
                "interval alone",
                opts(&[("interval", "1s")]),
                &lens,
                "add layout = 'dense'",
            ),
            (
                "unknown layout",
                opts(&[("layout", "rows")]),
                &lens,
                "unknown layout",
            ),
            (
                "bad interval",
                opts(&[("layout", "dense"), ("interval", "soon")]),
                &lens,
                "interval = \"soon\"",
            ),
            (
                "block off grid",
                opts(&[("layout", "dense"), ("interval", "7s"), ("block", "1d")]),
                &lens,
                "multiple",
            ),
            (
                "text without length",
                opts(&[("layout", "dense"), ("interval", "1s")]),
                &vec![],
                "VARCHAR(32)",
            ),
        ];
        for (name, o, l, want) in cases {
            let e = layout_options(&o, &cols, l).unwrap_err().to_string();
            assert!(e.contains(want), "{name}: {e}");
        }
    }
}
