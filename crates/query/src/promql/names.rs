//! Metric names: how PromQL's `__name__` maps onto Tempora's tables and fields.
//!
//! A table `t` gives these metrics:
//! - `t` itself, for its field `value` (what Prometheus remote write stores: one table per
//!   metric, labels as tags, the sample in `value`);
//! - `t_f` for every other numeric field `f` (the naming VictoriaMetrics and InfluxDB's
//!   Prometheus endpoints use for line protocol, so `cpu_usage_user` is table `cpu`, field
//!   `usage_user`).
//!
//! A name resolves to the table named exactly so with a `value` field, else to the longest
//! table-name prefix before an `_` whose remainder is a numeric field of that table. Fields
//! that are not numeric (strings) are no metric. Pure: the catalog comes in as a function.

/// What resolution needs of a table.
#[derive(Debug, Clone, PartialEq)]
pub struct TableInfo {
    /// The table's name in its database.
    pub name: String,
    /// Numeric and boolean fields (the ones with a float reading).
    pub fields: Vec<String>,
}

/// Where a metric's samples are.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Metric {
    /// The metric name (`__name__`).
    pub name: String,
    pub table: String,
    pub field: String,
}

/// The field of a table holding Prometheus samples.
pub const VALUE_FIELD: &str = "value";

/// Every metric of a table.
pub fn metrics_of(t: &TableInfo) -> Vec<Metric> {
    t.fields
        .iter()
        .map(|f| Metric {
            name: if f == VALUE_FIELD {
                t.name.clone()
            } else {
                format!("{}_{f}", t.name)
            },
            table: t.name.clone(),
            field: f.clone(),
        })
        .collect()
}

/// The metric of a name, if one exists.
pub fn resolve(name: &str, table: &dyn Fn(&str) -> Option<TableInfo>) -> Option<Metric> {
    if let Some(t) = table(name)
        && t.fields.iter().any(|f| f == VALUE_FIELD)
    {
        return Some(Metric {
            name: name.to_string(),
            table: t.name,
            field: VALUE_FIELD.to_string(),
        });
    }
    // Longest table name first.
    for (i, _) in name
        .match_indices('_')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
    {
        let (prefix, field) = (&name[..i], &name[i + 1..]);
        if prefix.is_empty() || field.is_empty() || field == VALUE_FIELD {
            continue;
        }
        if let Some(t) = table(prefix)
            && t.fields.iter().any(|f| f == field)
        {
            return Some(Metric {
                name: name.to_string(),
                table: t.name,
                field: field.to_string(),
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog(name: &str) -> Option<TableInfo> {
        let t = |fields: &[&str]| TableInfo {
            name: name.to_string(),
            fields: fields.iter().map(|f| f.to_string()).collect(),
        };
        match name {
            "up" => Some(t(&["value"])),
            "node_cpu_seconds_total" => Some(t(&["value"])),
            "cpu" => Some(t(&["usage_user", "usage_system"])),
            "cpu_usage" => Some(t(&["total"])),
            "mixed" => Some(t(&["value", "other"])),
            _ => None,
        }
    }

    #[test]
    fn names_resolve_to_tables_and_fields() {
        let cases = [
            ("up", Some(("up", "value"))),
            (
                "node_cpu_seconds_total",
                Some(("node_cpu_seconds_total", "value")),
            ),
            ("cpu_usage_user", Some(("cpu", "usage_user"))),
            ("cpu_usage_total", Some(("cpu_usage", "total"))),
            ("mixed", Some(("mixed", "value"))),
            ("mixed_other", Some(("mixed", "other"))),
            ("mixed_value", None),
            ("cpu", None),
            ("cpu_", None),
            ("_usage_user", None),
            ("nothing_here", None),
        ];
        for (name, want) in cases {
            let got = resolve(name, &catalog);
            assert_eq!(
                got.as_ref().map(|m| (m.table.as_str(), m.field.as_str())),
                want,
                "{name}"
            );
            if let Some(m) = got {
                assert_eq!(m.name, name);
            }
        }
    }

    #[test]
    fn every_listed_metric_resolves_to_itself() {
        for t in ["up", "cpu", "cpu_usage", "mixed"] {
            for m in metrics_of(&catalog(t).unwrap()) {
                assert_eq!(resolve(&m.name, &catalog), Some(m.clone()), "{}", m.name);
            }
        }
    }
}
