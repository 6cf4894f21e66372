//! The settings PostgreSQL clients read, answered as PostgreSQL answers them:
//! `current_setting(name [, missing_ok])` and a PostgreSQL-form `version()` naming Tempora.
//!
//! Grafana's PostgreSQL data source checks `current_setting('server_version_num')::int/100`;
//! drivers and tools (pgx, JDBC, SQLAlchemy, DBeaver) parse `version()` and `server_version`
//! for "PostgreSQL <major>.<minor>". The values are one table ([`setting`]) that the
//! PostgreSQL port's start-up parameters and `SHOW` answer from too.
//!
//! Invariants: names are case-insensitive; an unknown name is PostgreSQL's error
//! (`unrecognized configuration parameter "x"`) unless `missing_ok` is true (then NULL).

use std::sync::Arc;

use arrow::array::{Array, AsArray, StringArray};
use arrow::datatypes::DataType;
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, TypeSignature, Volatility,
};

/// The PostgreSQL release whose behaviour the port follows.
pub const SERVER_VERSION: &str = "16.6";
/// `server_version_num` of [`SERVER_VERSION`].
pub const SERVER_VERSION_NUM: &str = "160006";

/// `version()`'s text: PostgreSQL's form, naming Tempora.
pub fn version_text() -> String {
    format!(
        "PostgreSQL {SERVER_VERSION} (Tempora {}) on {}-{}, compiled by rustc, 64-bit",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH,
        std::env::consts::OS
    )
}

/// The value of setting `name` (case-insensitive), or `None` if there is no such setting.
pub fn setting(name: &str) -> Option<String> {
    let v = match name.to_ascii_lowercase().as_str() {
        "server_version" => format!("{SERVER_VERSION} (Tempora {})", env!("CARGO_PKG_VERSION")),
        "server_version_num" => SERVER_VERSION_NUM.into(),
        "server_encoding" | "client_encoding" => "UTF8".into(),
        "timezone" | "log_timezone" => "UTC".into(),
        "datestyle" => "ISO, MDY".into(),
        "intervalstyle" => "postgres".into(),
        "integer_datetimes" => "on".into(),
        "standard_conforming_strings" => "on".into(),
        "search_path" => "\"$user\", public".into(),
        "max_identifier_length" => "63".into(),
        "default_transaction_read_only" | "transaction_read_only" => "off".into(),
        "default_transaction_isolation" | "transaction_isolation" => "read committed".into(),
        "is_superuser" => "on".into(),
        "lc_collate" | "lc_ctype" => "C.UTF-8".into(),
        "block_size" => "8192".into(),
        "extra_float_digits" => "1".into(),
        "application_name" => String::new(),
        "statement_timeout" | "lock_timeout" | "idle_in_transaction_session_timeout" => "0".into(),
        "bytea_output" => "hex".into(),
        "max_connections" => "100".into(),
        _ => return None,
    };
    Some(v)
}

/// `current_setting(name [, missing_ok])`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct CurrentSetting {
    signature: Signature,
}

impl CurrentSetting {
    pub fn new() -> Self {
        Self {
            signature: Signature::one_of(
                vec![
                    TypeSignature::Exact(vec![DataType::Utf8]),
                    TypeSignature::Exact(vec![DataType::Utf8, DataType::Boolean]),
                ],
                Volatility::Stable,
            ),
        }
    }
}

impl Default for CurrentSetting {
    fn default() -> Self {
        Self::new()
    }
}

impl ScalarUDFImpl for CurrentSetting {
    fn name(&self) -> &str {
        "current_setting"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let missing_ok = match args.args.get(1) {
            Some(ColumnarValue::Scalar(ScalarValue::Boolean(b))) => b.unwrap_or(false),
            Some(_) => return exec_err!("current_setting: missing_ok must be a constant"),
            None => false,
        };
        let one = |name: Option<&str>| -> Result<Option<String>> {
            let Some(name) = name else { return Ok(None) };
            match setting(name) {
                Some(v) => Ok(Some(v)),
                None if missing_ok => Ok(None),
                None => exec_err!("unrecognized configuration parameter \"{name}\""),
            }
        };
        match &args.args[0] {
            ColumnarValue::Scalar(ScalarValue::Utf8(name)) => Ok(ColumnarValue::Scalar(
                ScalarValue::Utf8(one(name.as_deref())?),
            )),
            ColumnarValue::Array(a) => {
                let names = a.as_string::<i32>();
                let out: StringArray = (0..names.len())
                    .map(|i| one(names.is_valid(i).then(|| names.value(i))))
                    .collect::<Result<_>>()?;
                Ok(ColumnarValue::Array(Arc::new(out)))
            }
            other => exec_err!("current_setting: unexpected argument {other:?}"),
        }
    }
}

/// `version()` in PostgreSQL's form (replaces DataFusion's).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Version {
    signature: Signature,
}

impl Version {
    pub fn new() -> Self {
        Self {
            signature: Signature::exact(vec![], Volatility::Stable),
        }
    }
}

impl Default for Version {
    fn default() -> Self {
        Self::new()
    }
}

impl ScalarUDFImpl for Version {
    fn name(&self) -> &str {
        "version"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }
    fn invoke_with_args(&self, _: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(
            version_text(),
        ))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_clients_read() {
        let cases = [
            ("grafana's check", "server_version_num", Some("160006")),
            ("case-insensitive", "Server_Version_Num", Some("160006")),
            ("time zone", "TimeZone", Some("UTC")),
            ("encoding", "client_encoding", Some("UTF8")),
            ("unknown", "no_such_setting", None),
        ];
        for (name, key, want) in cases {
            assert_eq!(setting(key).as_deref(), want, "{name}");
        }
        assert!(
            setting("server_version")
                .unwrap()
                .starts_with("16.6 (Tempora ")
        );
        let v = version_text();
        assert!(v.starts_with("PostgreSQL 16.6 (Tempora "), "{v}");
        // Grafana computes server_version_num / 100 as the version it shows.
        assert_eq!(SERVER_VERSION_NUM.parse::<i64>().unwrap() / 100, 1600);
    }
}
