//! Tokens: `tmp_` and 64 hex digits (32 bytes from the operating system's random source),
//! stored as their SHA-256 only.

use sha2::{Digest, Sha256};

/// A token as made: shown to the operator once, never stored.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(********)")
    }
}

/// The prefix of every token (so scanners and people can tell what it is).
pub const PREFIX: &str = "tmp_";

/// SHA-256 of a token, hex: what the catalog keeps.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TokenHash(pub String);

/// `N` bytes from the operating system's random source (tokens, salts, keys).
pub fn random_bytes<const N: usize>() -> std::io::Result<[u8; N]> {
    use std::io::Read;
    let mut bytes = [0u8; N];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes)
}

impl Secret {
    /// A new token from 32 random bytes.
    pub fn generate() -> std::io::Result<Secret> {
        let bytes = random_bytes::<32>()?;
        let mut s = String::from(PREFIX);
        for b in bytes {
            s.push_str(&format!("{b:02x}"));
        }
        Ok(Secret(s))
    }

    pub fn hash(&self) -> TokenHash {
        hash(&self.0)
    }
}

/// The stored form of a presented token.
pub fn hash(token: &str) -> TokenHash {
    let d = Sha256::digest(token.as_bytes());
    TokenHash(d.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether two hashes are equal, in time independent of where they differ.
pub fn same(a: &TokenHash, b: &TokenHash) -> bool {
    let (a, b) = (a.0.as_bytes(), b.0.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_prefixed_and_stored_as_hashes() {
        let a = Secret::generate().unwrap();
        let b = Secret::generate().unwrap();
        assert_ne!(a, b);
        assert!(
            a.0.starts_with(PREFIX) && a.0.len() == PREFIX.len() + 64,
            "{}",
            a.0
        );
        assert!(
            !format!("{a:?}").contains(&a.0[4..]),
            "Debug never shows the token"
        );
        let h = a.hash();
        assert_eq!(h.0.len(), 64);
        assert!(!h.0.contains(&a.0[4..]));
        assert!(same(&h, &hash(&a.0)));
        assert!(!same(&h, &b.hash()));
        assert!(!same(&h, &TokenHash("ab".into())), "a different length");
        // SHA-256 of "abc" (FIPS 180-2).
        assert_eq!(
            hash("abc").0,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
