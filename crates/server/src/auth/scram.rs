//! SCRAM-SHA-256 (RFC 5802, RFC 7677) as PostgreSQL speaks it, the pure core: the stored
//! verifier and the server's two steps. Only `StoredKey` and `ServerKey` are kept — as
//! PostgreSQL keeps them — so the catalog on disk is not enough to log in: a client proves it
//! knows `ClientKey`, whose hash is `StoredKey`.
//!
//! PostgreSQL ignores the user name inside the SCRAM messages (the start-up message names
//! the user) and this server does too; channel binding is not offered (`n,,` or `y,,`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ring::{digest, hmac, pbkdf2};

/// PBKDF2 iterations of new verifiers (PostgreSQL's default).
pub const ITERATIONS: u32 = 4096;

/// What the server keeps for one login.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Verifier {
    /// The salt as sent to clients (bytes; base64 on the wire).
    pub salt: Vec<u8>,
    pub iterations: u32,
    #[serde(with = "hex32")]
    pub stored_key: [u8; 32],
    #[serde(with = "hex32")]
    pub server_key: [u8; 32],
}

fn hmac256(key: &[u8], msg: &[u8]) -> [u8; 32] {
    let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), msg);
    tag.as_ref().try_into().expect("32-byte tag")
}

fn sha256(b: &[u8]) -> [u8; 32] {
    digest::digest(&digest::SHA256, b)
        .as_ref()
        .try_into()
        .expect("32-byte digest")
}

impl Verifier {
    /// The verifier of `password` with `salt`.
    pub fn new(password: &str, salt: &[u8], iterations: u32) -> Verifier {
        let mut salted = [0u8; 32];
        pbkdf2::derive(
            pbkdf2::PBKDF2_HMAC_SHA256,
            std::num::NonZeroU32::new(iterations.max(1)).expect("positive"),
            salt,
            password.as_bytes(),
            &mut salted,
        );
        Verifier {
            salt: salt.to_vec(),
            iterations,
            stored_key: sha256(&hmac256(&salted, b"Client Key")),
            server_key: hmac256(&salted, b"Server Key"),
        }
    }
}

/// The client's first message, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFirst {
    /// `n,,` or `y,,`: what `c=` must carry back.
    pub gs2_header: String,
    /// Everything after the GS2 header (part of the signed message).
    pub bare: String,
    pub nonce: String,
}

/// Reads `n,,n=user,r=nonce` (or `y,,…`); channel binding (`p=`) is refused.
pub fn client_first(data: &[u8]) -> Result<ClientFirst, String> {
    let text = std::str::from_utf8(data).map_err(|_| "client-first is not UTF-8".to_string())?;
    let (gs2, bare) = match text.get(..3) {
        Some("n,," | "y,,") => (&text[..3], &text[3..]),
        _ if text.starts_with("p=") => {
            return Err("channel binding is not offered (use SCRAM-SHA-256)".into());
        }
        _ => return Err("client-first: expected a GS2 header n,, or y,,".into()),
    };
    let nonce = bare
        .split(',')
        .find_map(|a| a.strip_prefix("r="))
        .filter(|n| !n.is_empty() && n.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b','))
        .ok_or("client-first: no valid nonce r=")?;
    Ok(ClientFirst {
        gs2_header: gs2.to_string(),
        bare: bare.to_string(),
        nonce: nonce.to_string(),
    })
}

/// The server's first message for `first`, with the server's nonce part appended.
pub fn server_first(first: &ClientFirst, server_nonce: &str, v: &Verifier) -> String {
    format!(
        "r={}{server_nonce},s={},i={}",
        first.nonce,
        STANDARD.encode(&v.salt),
        v.iterations
    )
}

/// Checks the client's final message; `Ok(server-final)` when its proof is right.
/// `Err(true)`: a wrong proof (a wrong password, or no such login); `Err(false)`: a
/// malformed message.
pub fn client_final(
    v: &Verifier,
    first: &ClientFirst,
    server_first: &str,
    data: &[u8],
) -> Result<String, bool> {
    let text = std::str::from_utf8(data).map_err(|_| false)?;
    let (without_proof, proof) = text.rsplit_once(",p=").ok_or(false)?;
    let mut attrs = without_proof.split(',');
    let binding = attrs
        .next()
        .and_then(|a| a.strip_prefix("c="))
        .ok_or(false)?;
    let nonce = attrs
        .next()
        .and_then(|a| a.strip_prefix("r="))
        .ok_or(false)?;
    if binding != STANDARD.encode(&first.gs2_header)
        || Some(nonce)
            != server_first
                .strip_prefix("r=")
                .and_then(|s| s.split(',').next())
    {
        return Err(false);
    }
    let proof = STANDARD.decode(proof).map_err(|_| false)?;
    if proof.len() != 32 {
        return Err(false);
    }
    let message = format!("{},{server_first},{without_proof}", first.bare);
    let signature = hmac256(&v.stored_key, message.as_bytes());
    let client_key: Vec<u8> = proof.iter().zip(signature).map(|(p, s)| p ^ s).collect();
    let computed = sha256(&client_key);
    let same = computed
        .iter()
        .zip(v.stored_key)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
        == 0;
    if !same {
        return Err(true);
    }
    let server_signature = hmac256(&v.server_key, message.as_bytes());
    Ok(format!("v={}", STANDARD.encode(server_signature)))
}

mod hex32 {
    pub fn serialize<S: serde::Serializer>(k: &[u8; 32], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&k.iter().map(|b| format!("{b:02x}")).collect::<String>())
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<[u8; 32], D::Error> {
        let s: String = serde::Deserialize::deserialize(d)?;
        let bytes: Option<Vec<u8>> = (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
            .collect();
        bytes
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| serde::de::Error::custom("expected 64 hex digits"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677, section 3: user "user", password "pencil".
    #[test]
    fn the_rfc_7677_exchange_verifies() {
        let salt = STANDARD.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let v = Verifier::new("pencil", &salt, 4096);
        let first = client_first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO").unwrap();
        let sf = server_first(&first, "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0", &v);
        assert_eq!(
            sf,
            "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
        );
        let cf = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
                  p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
        assert_eq!(
            client_final(&v, &first, &sf, cf.as_bytes()),
            Ok("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=".into())
        );
        let wrong = Verifier::new("pencil2", &salt, 4096);
        assert_eq!(client_final(&wrong, &first, &sf, cf.as_bytes()), Err(true));
        let other_nonce = cf.replace("k0,p", "k1,p");
        let cases: [(&str, &[u8]); 5] = [
            ("another nonce", other_nonce.as_bytes()),
            ("no proof", b"c=biws,r=x"),
            ("a short proof", b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=AAAA"),
            ("channel binding changed", b"c=eSws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="),
            ("not UTF-8", b"\xff\xfe"),
        ];
        for (name, data) in cases {
            assert_eq!(client_final(&v, &first, &sf, data), Err(false), "{name}");
        }
    }

    #[test]
    fn client_first_messages_are_read_or_refused() {
        assert_eq!(client_first(b"y,,n=,r=abc").unwrap().gs2_header, "y,,");
        for (name, data, want) in [
            (
                "channel binding",
                &b"p=tls-server-end-point,,n=,r=x"[..],
                "channel binding",
            ),
            ("no header", b"n=user,r=x", "GS2 header"),
            ("no nonce", b"n,,n=user", "nonce"),
            ("an empty nonce", b"n,,n=user,r=", "nonce"),
            ("not UTF-8", b"\xff", "UTF-8"),
        ] {
            let e = client_first(data).unwrap_err();
            assert!(e.contains(want), "{name}: {e}");
        }
    }

    #[test]
    fn verifiers_round_trip_through_json() {
        let v = Verifier::new("tmp_x", b"salt", 4096);
        let json = serde_json::to_string(&v).unwrap();
        assert_eq!(serde_json::from_str::<Verifier>(&json).unwrap(), v);
        assert!(!json.contains("tmp_x"));
    }
}
