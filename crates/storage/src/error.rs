//! The storage crate's error type, with its HTTP status and SQLSTATE mapping.

use std::io;

/// Errors of the storage engine.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("invalid input: {0}")]
    Model(#[from] tempora_model::ModelError),
    #[error("write-ahead log: {0}")]
    Wal(#[from] tempora_wal::WalError),
    #[error("series index: {0}")]
    Index(#[from] tempora_index::IndexError),
    #[error("object store {op} {path}: {source}")]
    ObjectStore {
        op: &'static str,
        path: String,
        source: object_store::Error,
    },
    #[error("i/o {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: String,
        source: io::Error,
    },
    #[error("disk full while {op}: writes resume when space returns")]
    DiskFull { op: &'static str },
    #[error("parquet file {path}: {source}")]
    Parquet {
        path: String,
        source: parquet::errors::ParquetError,
    },
    #[error("arrow: {0}")]
    Arrow(#[from] arrow::error::ArrowError),
    #[error("manifest {path} is corrupt: {reason}")]
    CorruptManifest { path: String, reason: String },
    #[error("file {path} is corrupt: {reason}")]
    Corrupt { path: String, reason: String },
    #[error(
        "raw rows of {table} before {horizon} have expired and only its rollups remain; {what} needs raw rows (aggregate with count, sum, min, max or avg over buckets that are multiples of a rollup resolution, or start the range at or after {horizon})"
    )]
    RawExpired {
        table: String,
        horizon: String,
        what: String,
    },
    #[error(
        "memtable memory budget of {limit} bytes exhausted ({used} used); flushes are behind, retry later"
    )]
    MemoryBudget { used: usize, limit: usize },
    #[error("ingest queue of worker {worker} is full ({capacity} requests); retry later")]
    QueueFull { worker: usize, capacity: usize },
    #[error("request too large: {what} is {size}, the limit is {limit}")]
    TooLarge {
        what: &'static str,
        size: usize,
        limit: usize,
    },
    #[error("table {0:?} not found")]
    TableNotFound(String),
    #[error("too many tables: the limit is {0}")]
    TooManyTables(usize),
    #[error("invalid database name {name:?}: {reason}")]
    InvalidDatabase { name: String, reason: String },
    #[error("database {0:?} does not exist")]
    DatabaseNotFound(String),
    #[error("table {0:?} already exists")]
    TableExists(String),
    #[error("too many databases: the limit is {0} (max_databases)")]
    TooManyDatabases(usize),
    #[error("invalid setting {key}: {reason}")]
    InvalidSetting { key: String, reason: String },
    #[error("compaction of {region}: {reason}")]
    Compaction { region: String, reason: String },
    #[error("the engine is shut down")]
    ShutDown,
    #[error("injected fault: {0}")]
    Injected(String),
    #[error("{0}")]
    Shared(String),
}

pub type Result<T> = std::result::Result<T, StorageError>;

impl StorageError {
    /// The HTTP status a server should answer with.
    pub fn http_status(&self) -> u16 {
        use StorageError::*;
        match self {
            Model(_) | TableNotFound(_) | InvalidDatabase { .. } | InvalidSetting { .. } => 400,
            DatabaseNotFound(_) => 404,
            TableExists(_) => 409,
            TooLarge { .. } => 413,
            MemoryBudget { .. } | QueueFull { .. } | DiskFull { .. } => 503,
            Wal(w) if w.is_disk_full() => 503,
            TooManyTables(_) | TooManyDatabases(_) | RawExpired { .. } => 422,
            _ => 500,
        }
    }

    /// The PostgreSQL SQLSTATE a server should answer with.
    pub fn sqlstate(&self) -> &'static str {
        use StorageError::*;
        match self {
            Model(_) => "22000",
            TableNotFound(_) => "42P01",
            InvalidDatabase { .. } => "42602",
            InvalidSetting { .. } => "22023",
            DatabaseNotFound(_) => "3D000",
            TableExists(_) => "42P07",
            TooLarge { .. } => "54000",
            MemoryBudget { .. } => "53200",
            QueueFull { .. } => "53300",
            DiskFull { .. } => "53100",
            Wal(w) if w.is_disk_full() => "53100",
            TooManyTables(_) | TooManyDatabases(_) => "54000",
            CorruptManifest { .. } | Corrupt { .. } => "XX001",
            RawExpired { .. } => "0A000",
            _ => "XX000",
        }
    }

    /// A copy for answering several requests with one failure (sources become text).
    pub fn replicate(&self) -> StorageError {
        use StorageError::*;
        match self {
            DiskFull { op } => DiskFull { op },
            Wal(w) if w.is_disk_full() => DiskFull { op: "WAL commit" },
            MemoryBudget { used, limit } => MemoryBudget {
                used: *used,
                limit: *limit,
            },
            QueueFull { worker, capacity } => QueueFull {
                worker: *worker,
                capacity: *capacity,
            },
            TooLarge { what, size, limit } => TooLarge {
                what,
                size: *size,
                limit: *limit,
            },
            TableNotFound(t) => TableNotFound(t.clone()),
            InvalidDatabase { name, reason } => InvalidDatabase {
                name: name.clone(),
                reason: reason.clone(),
            },
            DatabaseNotFound(d) => DatabaseNotFound(d.clone()),
            InvalidSetting { key, reason } => InvalidSetting {
                key: key.clone(),
                reason: reason.clone(),
            },
            TableExists(t) => TableExists(t.clone()),
            TooManyDatabases(n) => TooManyDatabases(*n),
            ShutDown => ShutDown,
            other => Shared(other.to_string()),
        }
    }

    /// Whether retrying the same request later can succeed.
    pub fn is_retryable(&self) -> bool {
        self.http_status() == 503
    }
}

/// Maps an io error to DiskFull when it is ENOSPC.
pub(crate) fn io_err(op: &'static str, path: impl Into<String>, e: io::Error) -> StorageError {
    if e.kind() == io::ErrorKind::StorageFull || e.raw_os_error() == Some(28) {
        return StorageError::DiskFull { op };
    }
    StorageError::Io {
        op,
        path: path.into(),
        source: e,
    }
}

impl StorageError {
    /// Damaged files (a log, the manifest, an index or data file): what `tempora check`
    /// explains and `tempora repair` fixes.
    pub fn is_damage(&self) -> bool {
        matches!(
            self,
            StorageError::Wal(tempora_wal::WalError::Corrupt { .. })
                | StorageError::Wal(tempora_wal::WalError::UnsupportedVersion { .. })
                | StorageError::CorruptManifest { .. }
                | StorageError::Corrupt { .. }
                | StorageError::Index(_)
                | StorageError::Parquet { .. }
        )
    }
}
