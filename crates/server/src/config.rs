//! Server configuration: defaults < TOML file (`--config`) < `TEMPORA_*` environment
//! variables < command-line flags. Every key is a flat name (`http_addr`, `max_body_bytes`);
//! its environment variable is `TEMPORA_` plus the name in capitals.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::memory::{MemoryPlan, Part, Source};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Where the data lives.
    pub data_dir: PathBuf,
    /// HTTP: InfluxDB writes, SQL, health, metrics.
    pub http_addr: String,
    /// PostgreSQL wire protocol.
    pub pg_addr: String,
    /// When set, PostgreSQL clients must authenticate as `pg_user` with this password.
    pub pg_password: Option<String>,
    pub pg_user: String,
    /// Database used when a request names none.
    pub default_database: String,
    /// Largest request body, also after gzip decompression, and largest PostgreSQL message
    /// (bytes).
    pub max_body_bytes: usize,
    /// Longest line-protocol line (bytes).
    pub max_line_bytes: usize,
    /// Parsed request bodies waiting for the engine, at most (each holds the batches of all
    /// its tables; the name is the setting's since before bodies were queued whole).
    pub ingest_queue_batches: usize,
    /// `sync` (default), `none`, or an interval in milliseconds such as `100ms`.
    pub wal_sync: String,
    /// Region worker threads (0 = one per core).
    pub workers: usize,
    /// Retention of tables whose own and database's settings name none: a duration such as
    /// `30d`, or `forever`.
    pub default_ttl: String,
    /// Width of new time partitions when neither the table nor its database sets one: `auto`
    /// (chosen from each table's data rate) or a duration such as `1d`.
    pub partition: String,
    /// Rollups of tables whose own and database's settings declare none: a list such as
    /// `1m,1h` or `1m:30d,1h:365d` (resolution[:retention]), or `none` (the default).
    pub default_rollups: String,
    /// Fewest raw rows one rollup state must stand for (measured on the files) for queries to
    /// read that rollup where raw rows exist; 0 reads every rollup that fits.
    pub rollup_min_rows_per_state: u32,
    /// Seconds between runs of retention and compaction.
    pub maintenance_secs: usize,
    /// The memory the whole process may use: a size (`4GiB`, `512MiB`, bytes) or `auto`
    /// (three quarters of the machine's or the cgroup's memory). Each part below that is not
    /// set gets its share of it (`crate::memory`; `tempora config show` prints them).
    pub memory_budget: String,
    /// Memtables: rows written and not yet flushed; writes wait above it (bytes).
    pub memtable_bytes: Option<usize>,
    /// Request bodies and parsed rows on their way to the engine; writes wait above it.
    pub ingest_buffer_bytes: Option<usize>,
    /// Rows one compaction holds decoded at once (bytes).
    pub compaction_memory_bytes: Option<usize>,
    /// Memory for loaded series indexes of cold regions (bytes; the series cache).
    pub series_cache_bytes: Option<usize>,
    /// Memory for recently read data files and their footers (bytes; 0 = no cache).
    pub file_cache_bytes: Option<usize>,
    /// Memory for decoded column chunks of data files (bytes; 0 = no cache).
    pub decoded_cache_bytes: Option<usize>,
    /// After start, read the newest data into the decoded cache in the background until it
    /// holds this percentage of its budget (0 = off; at most 100).
    pub prewarm_percent: u8,
    /// Memory all queries may hold together (bytes).
    pub query_memory_bytes: Option<usize>,
    /// Memory one query may hold (bytes; default half of `query_memory_bytes`); clients may
    /// ask for less.
    pub query_memory_limit_bytes: Option<usize>,
    /// Longest a query may run (seconds).
    pub query_timeout_secs: u64,
    /// Rows in a SQL result sent over HTTP, at most.
    pub max_result_rows: usize,
    /// Tempora's plan operators for the monitoring shapes (bucketed aggregates, filtered rows,
    /// latest values); off gives DataFusion's plain plans (`query_fast_path` is the old name).
    #[serde(alias = "query_fast_path")]
    pub query_operators: bool,
    /// Optimised plans kept for reuse (the plan cache; 0 turns it off).
    pub plan_cache_entries: usize,
    /// Fewest values (estimated rows × (aggregates + 1)) an aggregate reads for it to be
    /// folded on several threads.
    pub query_parallel_min_values: u64,
    /// Memory one model's training may hold: its rows and fitted series (`CREATE MODEL`).
    pub model_memory_bytes: usize,
    /// `text` or `json` logs.
    pub log_format: String,
    /// Every request and connection must present a token (issue 26). Always on when a port
    /// binds to an address other than loopback, unless `insecure`.
    pub auth: bool,
    /// Allows a non-loopback bind without authentication (the operator's explicit choice).
    pub insecure: bool,
    /// TLS certificate chain (PEM) for both ports; with `tls_key`, TLS is on.
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM).
    pub tls_key: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from("tempora-data"),
            http_addr: "127.0.0.1:8086".into(),
            pg_addr: "127.0.0.1:5433".into(),
            pg_password: None,
            pg_user: "tempora".into(),
            default_database: "public".into(),
            max_body_bytes: 64 << 20,
            max_line_bytes: 64 << 10,
            ingest_queue_batches: 1024,
            wal_sync: "sync".into(),
            workers: 0,
            default_ttl: "forever".into(),
            partition: "auto".into(),
            default_rollups: "none".into(),
            rollup_min_rows_per_state: tempora_storage::rollup::view::DEFAULT_MIN_ROWS_PER_STATE,
            maintenance_secs: 60,
            memory_budget: "auto".into(),
            memtable_bytes: None,
            ingest_buffer_bytes: None,
            compaction_memory_bytes: None,
            series_cache_bytes: None,
            file_cache_bytes: None,
            decoded_cache_bytes: None,
            prewarm_percent: 75,
            query_memory_bytes: None,
            query_memory_limit_bytes: None,
            query_timeout_secs: 300,
            max_result_rows: 1_000_000,
            query_operators: true,
            plan_cache_entries: 1024,
            query_parallel_min_values: tempora_query::exec::aggregate::PARALLEL_MIN_VALUES,
            model_memory_bytes: 1 << 30,
            log_format: "text".into(),
            auth: false,
            insecure: false,
            tls_cert: None,
            tls_key: None,
        }
    }
}

/// `TEMPORA_*` environment variables that are not settings.
pub const NOT_SETTINGS: [&str; 4] = ["LOG", "TOKEN", "TOKEN_NAME", "BIN"];

/// A boolean setting's text.
fn flag(v: &str) -> Option<bool> {
    match v {
        "true" | "on" | "1" => Some(true),
        "false" | "off" | "0" => Some(false),
        _ => None,
    }
}

/// The memory this process may use: the machine's `MemTotal`, or the cgroup's `memory.max`
/// when lower; `None` when neither can be read.
pub fn machine_memory() -> Option<usize> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max").ok();
    memory_limit(meminfo.as_deref(), cgroup.as_deref())
}

/// The lower of `MemTotal` (`/proc/meminfo`, in kB) and a cgroup v2 `memory.max` (bytes, or
/// `max` for none); `None` when neither is readable.
fn memory_limit(meminfo: Option<&str>, cgroup_max: Option<&str>) -> Option<usize> {
    let total = meminfo.and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().strip_suffix("kB"))
            .and_then(|kb| kb.trim().parse::<usize>().ok())
            .map(|kb| kb.saturating_mul(1024))
    });
    let cgroup = cgroup_max.and_then(|c| c.trim().parse::<usize>().ok());
    match (total, cgroup) {
        (Some(t), Some(c)) => Some(t.min(c)),
        (t, c) => t.or(c),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config file {path}: {reason}")]
    File { path: String, reason: String },
    #[error("{source_name}: unknown setting {key:?}")]
    Unknown { source_name: String, key: String },
    #[error("{source_name}: {key} = {value:?}: {reason}")]
    Invalid {
        source_name: String,
        key: String,
        value: String,
        reason: String,
    },
}

impl Config {
    /// Builds the configuration from its four layers.
    pub fn load(
        file: Option<&std::path::Path>,
        env: impl IntoIterator<Item = (String, String)>,
        flags: &[(String, String)],
    ) -> Result<Self, ConfigError> {
        let mut c = match file {
            Some(p) => {
                let file_err = |reason: String| ConfigError::File {
                    path: p.display().to_string(),
                    reason,
                };
                let text = std::fs::read_to_string(p).map_err(|e| file_err(e.to_string()))?;
                toml::from_str(&text).map_err(|e| file_err(e.to_string()))?
            }
            None => Config::default(),
        };
        for (k, v) in env {
            // Variables of the tools, not settings: the log filter (read by the binary), the
            // clients' token (`tempora sql`, `bench load`, bench scripts) and the scripts'
            // binary.
            if let Some(key) = k
                .strip_prefix("TEMPORA_")
                .filter(|k| !NOT_SETTINGS.contains(k))
            {
                c.set("environment", &key.to_ascii_lowercase(), &v)?;
            }
        }
        for (k, v) in flags {
            c.set("command line", k, v)?;
        }
        c.validate()?;
        Ok(c)
    }

    /// Sets one key from its text form.
    pub fn set(&mut self, source_name: &str, key: &str, value: &str) -> Result<(), ConfigError> {
        let invalid = |reason: &str| ConfigError::Invalid {
            source_name: source_name.into(),
            key: key.into(),
            value: value.into(),
            reason: reason.into(),
        };
        let num = |v: &str| {
            v.parse::<usize>()
                .map_err(|_| invalid("expected a whole number"))
        };
        let size = |v: &str| {
            tempora_query::limits::parse_bytes(v)
                .map(|b| b.unwrap_or(0))
                .map_err(|_| invalid("expected a size: bytes, or a number with KiB, MiB or GiB"))
        };
        match key {
            "data_dir" => self.data_dir = value.into(),
            "http_addr" => self.http_addr = value.into(),
            "pg_addr" => self.pg_addr = value.into(),
            "pg_password" => self.pg_password = (!value.is_empty()).then(|| value.into()),
            "pg_user" => self.pg_user = value.into(),
            "default_database" => self.default_database = value.into(),
            "max_body_bytes" => self.max_body_bytes = num(value)?,
            "max_line_bytes" => self.max_line_bytes = num(value)?,
            "ingest_queue_batches" => self.ingest_queue_batches = num(value)?,
            "wal_sync" => self.wal_sync = value.into(),
            "workers" => self.workers = num(value)?,
            "default_ttl" => self.default_ttl = value.into(),
            "partition" => self.partition = value.into(),
            "default_rollups" => self.default_rollups = value.into(),
            "rollup_min_rows_per_state" => {
                self.rollup_min_rows_per_state =
                    u32::try_from(num(value)?).map_err(|_| invalid("at most 4294967295"))?
            }
            "maintenance_secs" => {
                let n = num(value)?;
                if n == 0 {
                    return Err(invalid("at least 1 second"));
                }
                self.maintenance_secs = n
            }
            "memory_budget" => {
                if value != "auto" {
                    size(value)?;
                }
                self.memory_budget = value.into()
            }
            "memtable_bytes" => self.memtable_bytes = Some(size(value)?),
            "ingest_buffer_bytes" => self.ingest_buffer_bytes = Some(size(value)?),
            "compaction_memory_bytes" => self.compaction_memory_bytes = Some(size(value)?),
            "series_cache_bytes" => self.series_cache_bytes = Some(size(value)?),
            "file_cache_bytes" => self.file_cache_bytes = Some(size(value)?),
            "decoded_cache_bytes" => self.decoded_cache_bytes = Some(size(value)?),
            "prewarm_percent" => {
                self.prewarm_percent = value
                    .parse::<u8>()
                    .ok()
                    .filter(|p| *p <= 100)
                    .ok_or_else(|| invalid("expected a whole number from 0 to 100"))?
            }
            "query_memory_bytes" => self.query_memory_bytes = Some(size(value)?),
            "query_memory_limit_bytes" => self.query_memory_limit_bytes = Some(size(value)?),
            "query_timeout_secs" => self.query_timeout_secs = num(value)? as u64,
            "max_result_rows" => self.max_result_rows = num(value)?,
            "plan_cache_entries" => self.plan_cache_entries = num(value)?,
            "query_parallel_min_values" => self.query_parallel_min_values = num(value)? as u64,
            "model_memory_bytes" => self.model_memory_bytes = size(value)?,
            "query_operators" | "query_fast_path" => {
                self.query_operators =
                    flag(value).ok_or_else(|| invalid("expected true or false"))?
            }
            "log_format" => self.log_format = value.into(),
            "auth" => self.auth = flag(value).ok_or_else(|| invalid("expected true or false"))?,
            "insecure" => {
                self.insecure = flag(value).ok_or_else(|| invalid("expected true or false"))?
            }
            "tls_cert" => self.tls_cert = (!value.is_empty()).then(|| value.into()),
            "tls_key" => self.tls_key = (!value.is_empty()).then(|| value.into()),
            _ => {
                return Err(ConfigError::Unknown {
                    source_name: source_name.into(),
                    key: key.into(),
                });
            }
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, value: String, reason: &str| ConfigError::Invalid {
            source_name: "configuration".into(),
            key: key.into(),
            value,
            reason: reason.into(),
        };
        self.sync_policy()
            .map_err(|r| bad("wal_sync", self.wal_sync.clone(), &r))?;
        self.storage_defaults().map_err(|(k, v, r)| bad(k, v, &r))?;
        let plan = self
            .memory_plan()
            .map_err(|r| bad("memory_budget", self.memory_budget.clone(), &r))?;
        if let Some(l) = self.query_memory_limit_bytes
            && l > plan.get(Part::QueryPool)
        {
            return Err(bad(
                "query_memory_limit_bytes",
                l.to_string(),
                &format!(
                    "above the query pool ({} bytes): one query cannot hold more than all",
                    plan.get(Part::QueryPool)
                ),
            ));
        }
        for (k, v) in [("http_addr", &self.http_addr), ("pg_addr", &self.pg_addr)] {
            v.parse::<std::net::SocketAddr>()
                .map_err(|_| bad(k, v.clone(), "expected HOST:PORT with an IP address"))?;
        }
        for (k, v) in [
            ("max_body_bytes", self.max_body_bytes),
            ("max_line_bytes", self.max_line_bytes),
            ("ingest_queue_batches", self.ingest_queue_batches),
            ("max_result_rows", self.max_result_rows),
        ] {
            if v == 0 {
                return Err(bad(k, "0".into(), "must be positive"));
            }
        }
        if !matches!(self.log_format.as_str(), "text" | "json") {
            return Err(bad(
                "log_format",
                self.log_format.clone(),
                "expected text or json",
            ));
        }
        tempora_query::validate_database(&self.default_database).map_err(|e| {
            bad(
                "default_database",
                self.default_database.clone(),
                &e.to_string(),
            )
        })?;
        if self.tls_cert.is_some() != self.tls_key.is_some() {
            let (k, v) = match &self.tls_cert {
                Some(c) => ("tls_cert", c.display().to_string()),
                None => (
                    "tls_key",
                    self.tls_key
                        .as_ref()
                        .map_or(String::new(), |k| k.display().to_string()),
                ),
            };
            return Err(bad(k, v, "TLS needs both tls_cert and tls_key"));
        }
        Ok(())
    }

    /// The server-wide retention (`None`: forever) and fixed partition width (`None`: auto)
    /// `default_ttl` and `partition` name; an error gives the key, value and reason.
    #[allow(clippy::type_complexity)]
    pub fn storage_defaults(
        &self,
    ) -> Result<(Option<i64>, Option<i64>), (&'static str, String, String)> {
        use tempora_storage::catalog::settings::{parse_partition, parse_ttl};
        let ttl = parse_ttl(&self.default_ttl)
            .map_err(|e| ("default_ttl", self.default_ttl.clone(), e.to_string()))?;
        let part = parse_partition(&self.partition)
            .map_err(|e| ("partition", self.partition.clone(), e.to_string()))?;
        Ok((ttl.ns(), part.ns()))
    }

    /// The server-wide rollups `default_rollups` declares.
    pub fn default_rollups(&self) -> Result<tempora_storage::catalog::rollups::RollupList, String> {
        tempora_storage::catalog::rollups::RollupList::parse(&self.default_rollups)
            .map_err(|e| format!("default_rollups = {:?}: {e}", self.default_rollups))
    }

    /// The budget `memory_budget` names (`auto`: from the machine's memory).
    pub fn memory_budget_bytes(&self) -> Result<usize, String> {
        match self.memory_budget.as_str() {
            "auto" => Ok(crate::memory::auto_budget(machine_memory())),
            v => tempora_query::limits::parse_bytes(v)?
                .ok_or_else(|| "expected a size such as 4GiB, or auto".to_string()),
        }
    }

    /// The budget split into the parts that hold memory, with the keys set kept.
    pub fn memory_plan(&self) -> Result<MemoryPlan, String> {
        let set: Vec<(Part, usize)> = [
            (Part::Memtables, self.memtable_bytes),
            (Part::IngestBuffers, self.ingest_buffer_bytes),
            (Part::Compaction, self.compaction_memory_bytes),
            (Part::DecodedCache, self.decoded_cache_bytes),
            (Part::FileCache, self.file_cache_bytes),
            (Part::SeriesCache, self.series_cache_bytes),
            (Part::QueryPool, self.query_memory_bytes),
        ]
        .into_iter()
        .filter_map(|(p, v)| v.map(|v| (p, v)))
        .collect();
        crate::memory::plan(self.memory_budget_bytes()?, &set)
    }

    /// Memory one query may hold: its key, or half of the query pool.
    pub fn query_limit_bytes(&self, plan: &MemoryPlan) -> usize {
        let pool = plan.get(Part::QueryPool);
        self.query_memory_limit_bytes.unwrap_or(pool / 2).min(pool)
    }

    /// The WAL sync policy `wal_sync` names.
    pub fn sync_policy(&self) -> Result<tempora_storage::options::SyncPolicy, String> {
        match self.wal_sync.as_str() {
            "sync" => Ok(tempora_storage::options::SyncPolicy::Sync),
            "none" => Ok(tempora_storage::options::SyncPolicy::None),
            s => {
                let ms = s
                    .strip_suffix("ms")
                    .and_then(|n| n.parse::<u64>().ok())
                    .ok_or("expected sync, none, or an interval like 100ms")?;
                Ok(tempora_storage::options::SyncPolicy::Interval(
                    Duration::from_millis(ms),
                ))
            }
        }
    }

    /// The configuration as TOML (what `tempora config show` prints).
    /// The settings as TOML, with the password (if any) masked.
    pub fn to_toml(&self) -> String {
        let mut shown = self.clone();
        if shown.pg_password.is_some() {
            shown.pg_password = Some("********".into());
        }
        let mut out = toml::to_string(&shown).expect("config serializes");
        if let Ok(plan) = self.memory_plan() {
            out.push_str(&format!(
                "\n# memory_budget = {}: the parts' bytes (set: from its key; derived: its share)\n",
                crate::memory::human(plan.budget)
            ));
            for (spec, bytes, source) in &plan.parts {
                let from = match source {
                    Source::Set => "set",
                    Source::Derived => "derived",
                };
                out.push_str(&format!(
                    "#   {:<24} {:>12} ({from}, {})\n",
                    spec.key,
                    bytes,
                    crate::memory::human(*bytes)
                ));
            }
            out.push_str(&format!(
                "#   {:<24} {:>12} (derived, {})\n#   {:<24} {:>12} (not handed out)\n",
                "query_memory_limit_bytes",
                self.query_limit_bytes(&plan),
                crate::memory::human(self.query_limit_bytes(&plan)),
                "headroom",
                plan.unassigned()
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_override_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.toml");
        std::fs::write(
            &file,
            "http_addr = \"127.0.0.1:1000\"\npg_addr = \"127.0.0.1:2000\"\nworkers = 3\n",
        )
        .unwrap();
        let env = vec![
            ("TEMPORA_PG_ADDR".to_string(), "127.0.0.1:3000".to_string()),
            ("TEMPORA_WORKERS".to_string(), "4".to_string()),
            ("HOME".to_string(), "/root".to_string()),
            ("TEMPORA_LOG".to_string(), "debug".to_string()),
            ("TEMPORA_TOKEN".to_string(), "tmp_client".to_string()),
            ("TEMPORA_BIN".to_string(), "/usr/bin/tempora".to_string()),
            ("TEMPORA_AUTH".to_string(), "true".to_string()),
        ];
        let flags = vec![("workers".to_string(), "5".to_string())];
        let c = Config::load(Some(&file), env, &flags).unwrap();
        assert_eq!(c.http_addr, "127.0.0.1:1000", "file over default");
        assert_eq!(c.pg_addr, "127.0.0.1:3000", "environment over file");
        assert_eq!(c.workers, 5, "flag over environment");
        assert_eq!(c.max_body_bytes, 64 << 20, "default kept");
        assert!(
            c.auth,
            "TEMPORA_AUTH is a setting; the tools' variables are not"
        );
    }

    #[test]
    fn config_show_masks_the_password() {
        let env = vec![("TEMPORA_PG_PASSWORD".to_string(), "hunter2".to_string())];
        let c = Config::load(None, env, &[]).unwrap();
        assert_eq!(c.pg_password.as_deref(), Some("hunter2"));
        let shown = c.to_toml();
        assert!(!shown.contains("hunter2") && shown.contains("pg_password = \"********\""));
    }

    #[test]
    fn bad_settings_are_named() {
        let cases: &[(&str, &str, &str)] = &[
            ("TEMPORA_NOPE", "1", "unknown setting \"nope\""),
            (
                "TEMPORA_WORKERS",
                "many",
                "workers = \"many\": expected a whole number",
            ),
            ("TEMPORA_WAL_SYNC", "sometimes", "wal_sync"),
            ("TEMPORA_HTTP_ADDR", "localhost", "http_addr"),
            ("TEMPORA_MAX_BODY_BYTES", "0", "must be positive"),
            ("TEMPORA_DEFAULT_DATABASE", "a.b", "must not contain '.'"),
            (
                "TEMPORA_PREWARM_PERCENT",
                "101",
                "prewarm_percent = \"101\": expected a whole number from 0 to 100",
            ),
            ("TEMPORA_PREWARM_PERCENT", "-1", "from 0 to 100"),
            ("TEMPORA_PREWARM_PERCENT", "half", "from 0 to 100"),
        ];
        for (k, v, want) in cases {
            let err = Config::load(None, vec![(k.to_string(), v.to_string())], &[])
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{k}={v}: {err}");
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bad.toml");
        std::fs::write(&file, "colour = 1\n").unwrap();
        let err = Config::load(Some(&file), Vec::new(), &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("bad.toml") && err.contains("colour"), "{err}");
    }

    #[test]
    fn the_machine_memory_is_the_lower_of_memtotal_and_the_cgroup() {
        const GIB: usize = 1 << 30;
        let meminfo = "MemTotal:       25165824 kB\nMemFree:         1000 kB\n";
        type Case<'a> = (&'a str, Option<&'a str>, Option<&'a str>, Option<usize>);
        let cases: &[Case] = &[
            (
                "24 GiB machine, no cgroup",
                Some(meminfo),
                None,
                Some(24 * GIB),
            ),
            (
                "cgroup without a limit",
                Some(meminfo),
                Some("max\n"),
                Some(24 * GIB),
            ),
            (
                "cgroup limit of 4 GiB",
                Some(meminfo),
                Some("4294967296\n"),
                Some(4 * GIB),
            ),
            (
                "cgroup above the machine",
                Some(meminfo),
                Some("99999999999999\n"),
                Some(24 * GIB),
            ),
            ("only a cgroup", None, Some("2147483648"), Some(2 * GIB)),
            ("no MemTotal line", Some("MemFree: 1 kB\n"), None, None),
            ("garbage", Some("MemTotal: lots kB\n"), Some("x"), None),
            ("nothing readable", None, None, None),
        ];
        for (name, m, c, want) in cases {
            assert_eq!(memory_limit(*m, *c), *want, "{name}");
        }
    }

    #[test]
    fn the_memory_budget_is_split_and_shown() {
        let flags = |kv: &[(&str, &str)]| -> Vec<(String, String)> {
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let c = Config::load(None, Vec::new(), &flags(&[("memory_budget", "1GiB")])).unwrap();
        let plan = c.memory_plan().unwrap();
        assert_eq!(plan.budget, 1 << 30);
        assert_eq!(c.query_limit_bytes(&plan), plan.get(Part::QueryPool) / 2);
        let shown = c.to_toml();
        for key in [
            "memtable_bytes",
            "decoded_cache_bytes",
            "query_memory_limit_bytes",
            "headroom",
        ] {
            assert!(
                shown.contains(&format!("#   {key}")),
                "{key} shown: {shown}"
            );
        }
        let c = Config::load(
            None,
            vec![("TEMPORA_DECODED_CACHE_BYTES".into(), "100MiB".into())],
            &flags(&[("memory_budget", "1GiB")]),
        )
        .unwrap();
        assert_eq!(c.memory_plan().unwrap().get(Part::DecodedCache), 100 << 20);
        assert!(
            c.to_toml().contains("104857600 (set, 100 MiB)"),
            "{}",
            c.to_toml()
        );
        for (kv, want) in [
            (vec![("memory_budget", "lots")], "memory_budget = \"lots\""),
            (vec![("memory_budget", "1MiB")], "below the smallest"),
            (
                vec![("memory_budget", "1GiB"), ("decoded_cache_bytes", "1GiB")],
                "decoded_cache_bytes set to 1 GiB",
            ),
            (
                vec![
                    ("memory_budget", "1GiB"),
                    ("query_memory_limit_bytes", "900MiB"),
                ],
                "one query cannot hold more than all",
            ),
        ] {
            let err = Config::load(None, Vec::new(), &flags(&kv))
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{kv:?}: {err}");
        }
    }

    #[test]
    fn shown_config_loads_back_the_same() {
        let c = Config::default();
        let back: Config = toml::from_str(&c.to_toml()).unwrap();
        assert_eq!(back, c);
    }
}
