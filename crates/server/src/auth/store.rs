//! The token catalog: one small file, `tokens`, in the data directory
//! (docs/format/tokens.md). It holds each token's name, permissions, SHA-256 and SCRAM
//! verifier (StoredKey and ServerKey, as PostgreSQL keeps) — never a token itself, nor
//! anything a client could log in with.
//!
//! Invariants:
//! - The file is replaced whole: written beside, fsynced, renamed over, the directory
//!   fsynced. A crash leaves the old catalog or the new one.
//! - Every change (the server's `CREATE TOKEN`, the offline `tempora token`) is a
//!   read-modify-write under an exclusive lock on `tokens.lock`, so two writers cannot lose
//!   each other's change.
//! - A running server sees a change made by another process at the next authentication: it
//!   compares the file's identity (inode, length, modification time) with the one it loaded,
//!   so a revocation takes effect at once.
//! - A damaged file is refused with its path and the reason; the server does not start on it.

use std::collections::BTreeSet;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use parking_lot::RwLock;

use super::grant::Grant;
use super::token::{self, Secret, TokenHash};

/// The file's first bytes.
pub const MAGIC: &[u8; 8] = b"TMPRTOKN";
/// The format version this build writes and reads.
pub const VERSION: u32 = 1;
/// Header: magic, version, body length, CRC-32C of the body.
const HEADER: usize = 8 + 4 + 4 + 4;
/// The most tokens one catalog holds.
pub const MAX_TOKENS: usize = 10_000;
/// The longest token name (it is also a PostgreSQL user name, at most 63 bytes there).
pub const MAX_NAME: usize = 63;

/// One stored token.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stored {
    pub grant: Grant,
    pub hash: TokenHash,
    /// The SCRAM-SHA-256 verifier for the PostgreSQL port.
    pub scram: super::scram::Verifier,
    pub created_ns: i64,
}

/// Checks a token name: 1 to 63 ASCII letters, digits, `_`, `-` or `.`, starting with a
/// letter or digit (it is a PostgreSQL user name and appears in messages and files).
pub fn validate_name(name: &str) -> Result<(), String> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    match name.chars().next() {
        None => Err("a token name cannot be empty".into()),
        _ if name.len() > MAX_NAME => Err(format!(
            "token name is {} bytes; at most {MAX_NAME} are allowed",
            name.len()
        )),
        Some(c) if !c.is_ascii_alphanumeric() => Err(format!(
            "token name {name:?} must start with an ASCII letter or digit"
        )),
        _ => match name.chars().find(|&c| !ok_char(c)) {
            Some(c) => Err(format!(
                "token name {name:?}: {c:?} is not allowed (ASCII letters, digits, _ - .)"
            )),
            None => Ok(()),
        },
    }
}

/// The file's bytes for `tokens`.
pub fn encode(tokens: &[Stored]) -> Vec<u8> {
    let body = serde_json::to_vec(tokens).expect("tokens serialize");
    let mut out = Vec::with_capacity(HEADER + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// The tokens of a file's bytes, or what is wrong with them.
pub fn decode(bytes: &[u8]) -> Result<Vec<Stored>, String> {
    if bytes.len() < HEADER {
        return Err(format!(
            "torn: {} bytes, shorter than the {HEADER}-byte header",
            bytes.len()
        ));
    }
    if &bytes[..8] != MAGIC {
        return Err("not a token catalog (bad magic)".into());
    }
    let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
    let version = u32_at(8);
    if version != VERSION {
        return Err(format!(
            "format version {version}; this build reads version {VERSION}"
        ));
    }
    let len = u32_at(12) as usize;
    let body = &bytes[HEADER..];
    if body.len() != len {
        return Err(format!(
            "torn: the header names a {len}-byte body, the file holds {}",
            body.len()
        ));
    }
    if crc32c::crc32c(body) != u32_at(16) {
        return Err("checksum mismatch: the body is damaged".into());
    }
    let tokens: Vec<Stored> =
        serde_json::from_slice(body).map_err(|e| format!("body is not a token list: {e}"))?;
    let mut names = BTreeSet::new();
    for t in &tokens {
        validate_name(&t.grant.name)?;
        if !names.insert(&t.grant.name) {
            return Err(format!("token {:?} is stored twice", t.grant.name));
        }
    }
    Ok(tokens)
}

/// A file's identity: a change by any process changes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    ino: u64,
    len: u64,
    mtime_ns: i64,
}

fn stamp(path: &Path) -> std::io::Result<Option<Stamp>> {
    match std::fs::metadata(path) {
        Ok(m) => Ok(Some(Stamp {
            ino: m.ino(),
            len: m.len(),
            mtime_ns: m.mtime() * 1_000_000_000 + m.mtime_nsec(),
        })),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

struct Loaded {
    stamp: Option<Stamp>,
    tokens: Vec<Stored>,
}

/// The token catalog of one data directory.
pub struct TokenStore {
    dir: PathBuf,
    loaded: RwLock<Loaded>,
}

/// A failed catalog operation, with the message a client sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    Invalid(String),
    Duplicate(String),
    NotFound(String),
    Io(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Invalid(m) | StoreError::Io(m) => f.write_str(m),
            StoreError::Duplicate(n) => write!(f, "token {n:?} already exists"),
            StoreError::NotFound(n) => write!(f, "token {n:?} does not exist"),
        }
    }
}

impl TokenStore {
    /// The catalog in `dir` (created on first change); a damaged file fails.
    pub fn open(dir: &Path) -> Result<TokenStore, StoreError> {
        let store = TokenStore {
            dir: dir.to_path_buf(),
            loaded: RwLock::new(Loaded {
                stamp: None,
                tokens: Vec::new(),
            }),
        };
        store.refresh()?;
        Ok(store)
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join("tokens")
    }

    /// This data directory's secret for answering unknown PostgreSQL users: 32 random bytes
    /// in `tokens.nonce` (owner only), made on first use and kept, so an unknown name gets
    /// the same salt on every attempt and after restarts, as a real one does.
    pub fn decoy_key(&self) -> Result<Vec<u8>, StoreError> {
        let path = self.dir.join("tokens.nonce");
        if let Ok(b) = std::fs::read(&path)
            && b.len() == 32
        {
            return Ok(b);
        }
        std::fs::create_dir_all(&self.dir).map_err(|e| io(&self.dir, e))?;
        let key = token::random_bytes::<32>().map_err(random)?;
        write_atomic(&self.dir, &path, &key)?;
        Ok(key.to_vec())
    }

    /// Reloads the file when another process changed it.
    pub fn refresh(&self) -> Result<(), StoreError> {
        let path = self.path();
        let now = stamp(&path).map_err(|e| io(&path, e))?;
        if self.loaded.read().stamp == now {
            return Ok(());
        }
        let tokens = read(&path)?;
        *self.loaded.write() = Loaded { stamp: now, tokens };
        Ok(())
    }

    /// The grant of the token whose secret is `secret`. Every stored hash is compared in
    /// constant time, so the time taken does not depend on which (if any) matched.
    pub fn authenticate(&self, secret: &str) -> Option<Grant> {
        if let Err(e) = self.refresh() {
            tracing::error!(error = %e, "token catalog unreadable: refusing every token");
            return None;
        }
        let presented = token::hash(secret);
        let loaded = self.loaded.read();
        let mut found = None;
        for t in &loaded.tokens {
            if token::same(&t.hash, &presented) {
                found = Some(t.grant.clone());
            }
        }
        found
    }

    /// The current grant of token `name` (`None`: revoked or never made).
    pub fn grant(&self, name: &str) -> Option<Grant> {
        let _ = self.refresh();
        let loaded = self.loaded.read();
        let t = loaded.tokens.iter().find(|t| t.grant.name == name)?;
        Some(t.grant.clone())
    }

    /// Token `name`'s SCRAM verifier.
    pub fn scram(&self, name: &str) -> Option<super::scram::Verifier> {
        let _ = self.refresh();
        let loaded = self.loaded.read();
        let t = loaded.tokens.iter().find(|t| t.grant.name == name)?;
        Some(t.scram.clone())
    }

    /// Whether some token is an admin token.
    pub fn has_admin(&self) -> bool {
        let _ = self.refresh();
        self.loaded.read().tokens.iter().any(|t| t.grant.admin)
    }

    pub fn list(&self) -> Vec<Stored> {
        let _ = self.refresh();
        self.loaded.read().tokens.clone()
    }

    /// Makes and stores a token for `grant`; returns its secret (shown once).
    pub fn create(&self, grant: Grant, now_ns: i64) -> Result<Secret, StoreError> {
        validate_name(&grant.name).map_err(StoreError::Invalid)?;
        let secret = Secret::generate().map_err(random)?;
        let salt = token::random_bytes::<16>().map_err(random)?;
        let stored = Stored {
            hash: secret.hash(),
            scram: super::scram::Verifier::new(&secret.0, &salt, super::scram::ITERATIONS),
            created_ns: now_ns,
            grant,
        };
        self.change(|tokens| {
            if tokens.iter().any(|t| t.grant.name == stored.grant.name) {
                return Err(StoreError::Duplicate(stored.grant.name.clone()));
            }
            if tokens.len() >= MAX_TOKENS {
                return Err(StoreError::Invalid(format!(
                    "the catalog holds {MAX_TOKENS} tokens, the most it may (MAX_TOKENS)"
                )));
            }
            tokens.push(stored.clone());
            Ok(())
        })?;
        Ok(secret)
    }

    /// Revokes token `name`; `Ok(false)` when there was none.
    pub fn revoke(&self, name: &str) -> Result<bool, StoreError> {
        let mut removed = false;
        self.change(|tokens| {
            let before = tokens.len();
            tokens.retain(|t| t.grant.name != name);
            removed = tokens.len() < before;
            Ok(())
        })?;
        Ok(removed)
    }

    /// Reads the file, applies `f`, writes it back atomically, all under the lock.
    fn change(
        &self,
        f: impl FnOnce(&mut Vec<Stored>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        std::fs::create_dir_all(&self.dir).map_err(|e| io(&self.dir, e))?;
        let lock_path = self.dir.join("tokens.lock");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| io(&lock_path, e))?;
        lock.lock().map_err(|e| io(&lock_path, e))?;
        let path = self.path();
        let mut tokens = read(&path)?;
        f(&mut tokens)?;
        write_atomic(&self.dir, &path, &encode(&tokens))?;
        let now = stamp(&path).map_err(|e| io(&path, e))?;
        *self.loaded.write() = Loaded { stamp: now, tokens };
        Ok(())
    }
}

fn io(path: &Path, e: std::io::Error) -> StoreError {
    StoreError::Io(format!("{}: {e}", path.display()))
}

/// The tokens in `path` (none when it does not exist).
fn read(path: &Path) -> Result<Vec<Stored>, StoreError> {
    match std::fs::read(path) {
        Ok(b) => decode(&b).map_err(|e| {
            StoreError::Io(format!(
                "token catalog {} is damaged: {e} (see `tempora check`)",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(io(path, e)),
    }
}

fn random(e: std::io::Error) -> StoreError {
    StoreError::Io(format!("random: {e}"))
}

/// Replaces `path` (in `dir`) with `bytes`, readable by the owner only (the catalog holds
/// SCRAM verifiers, the nonce file a key): written beside as `<name>.tmp`, fsynced,
/// renamed, the directory fsynced.
fn write_atomic(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| io(&tmp, e))?;
    f.write_all(bytes).map_err(|e| io(&tmp, e))?;
    f.sync_all().map_err(|e| io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| io(path, e))?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io(dir, e))
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
