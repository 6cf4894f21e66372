//! The credentials a request carries: `Authorization: Token X` or `Bearer X` (InfluxDB 2/3
//! clients), `Basic` with the token as the password, or InfluxDB 1.x `u`/`p` query
//! parameters (the password is the token). The header wins over the query.

use base64::Engine as _;

/// What a request presented.
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    None,
    /// A bare token.
    Token(String),
    /// A user and a password (the token).
    UserPassword {
        user: String,
        password: String,
    },
    /// Something that is not a credential this server reads, and why.
    Malformed(String),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::None => f.write_str("None"),
            Credentials::Token(_) => f.write_str("Token(********)"),
            Credentials::UserPassword { user, .. } => write!(f, "UserPassword({user:?}, ********)"),
            Credentials::Malformed(r) => write!(f, "Malformed({r:?})"),
        }
    }
}

impl Credentials {
    /// The token presented, if any (a password is one).
    pub fn token(&self) -> Option<&str> {
        match self {
            Credentials::Token(t) => Some(t),
            Credentials::UserPassword { password, .. } => Some(password),
            _ => None,
        }
    }
}

/// Credentials from an `Authorization` header value and a query string.
pub fn from_headers(authorization: Option<&str>, query: Option<&str>) -> Credentials {
    if let Some(h) = authorization {
        return from_authorization(h.trim());
    }
    let (mut user, mut password) = (None, None);
    for pair in query.unwrap_or("").split('&') {
        match pair.split_once('=') {
            Some(("u", v)) => user = Some(crate::form::strict(v)),
            Some(("p", v)) => password = Some(crate::form::strict(v)),
            _ => {}
        }
    }
    match (user, password) {
        (_, Some(Err(e))) | (Some(Err(e)), _) => Credentials::Malformed(e),
        (u, Some(Ok(p))) => Credentials::UserPassword {
            user: u.and_then(Result::ok).unwrap_or_default(),
            password: p,
        },
        (Some(Ok(_)), None) => Credentials::Malformed("query parameter u without p".into()),
        (None, None) => Credentials::None,
    }
}

fn from_authorization(h: &str) -> Credentials {
    let (scheme, rest) = h.split_once(' ').unwrap_or((h, ""));
    let rest = rest.trim();
    match scheme.to_ascii_lowercase().as_str() {
        "token" | "bearer" if !rest.is_empty() => Credentials::Token(rest.to_string()),
        "basic" => {
            let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(rest) else {
                return Credentials::Malformed("Basic credentials are not base64".into());
            };
            let Ok(text) = String::from_utf8(bytes) else {
                return Credentials::Malformed("Basic credentials are not UTF-8".into());
            };
            match text.split_once(':') {
                Some((u, p)) => Credentials::UserPassword {
                    user: u.to_string(),
                    password: p.to_string(),
                },
                None => Credentials::Malformed("Basic credentials without a ':'".into()),
            }
        }
        _ => Credentials::Malformed(
            "the Authorization header takes Token, Bearer or Basic credentials".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn up(u: &str, p: &str) -> Credentials {
        Credentials::UserPassword {
            user: u.into(),
            password: p.into(),
        }
    }

    #[test]
    fn every_spelling_of_credentials_is_read() {
        let basic = base64::engine::general_purpose::STANDARD.encode("grafana:tmp_abc");
        let basic = format!("Basic {basic}");
        let cases: Vec<(&str, Option<&str>, Option<&str>, Credentials)> = vec![
            ("nothing", None, Some("db=x"), Credentials::None),
            (
                "Token",
                Some("Token tmp_abc"),
                None,
                Credentials::Token("tmp_abc".into()),
            ),
            (
                "Bearer, any case",
                Some("bearer tmp_abc"),
                None,
                Credentials::Token("tmp_abc".into()),
            ),
            ("Basic", Some(&basic), None, up("grafana", "tmp_abc")),
            (
                "1.x u and p",
                None,
                Some("db=x&u=grafana&p=tmp_abc"),
                up("grafana", "tmp_abc"),
            ),
            ("p alone", None, Some("p=tmp%5Fabc"), up("", "tmp_abc")),
            (
                "the header wins",
                Some("Token a"),
                Some("u=x&p=b"),
                Credentials::Token("a".into()),
            ),
        ];
        for (name, h, q, want) in cases {
            assert_eq!(from_headers(h, q), want, "{name}");
        }
        let bad = [
            (
                "an unknown scheme",
                Some("Digest x"),
                None,
                "Token, Bearer or Basic",
            ),
            (
                "an empty token",
                Some("Token "),
                None,
                "Token, Bearer or Basic",
            ),
            ("Basic not base64", Some("Basic !!!"), None, "not base64"),
            (
                "Basic without a colon",
                Some("Basic Z3JhZmFuYQ=="),
                None,
                "without a ':'",
            ),
            ("a bad escape", None, Some("p=%zz"), "%-escape"),
            ("u without p", None, Some("u=x"), "without p"),
        ];
        for (name, h, q, want) in bad {
            match from_headers(h, q) {
                Credentials::Malformed(r) => assert!(r.contains(want), "{name}: {r}"),
                other => panic!("{name}: {other:?}"),
            }
        }
        assert!(!format!("{:?}", up("u", "secret")).contains("secret"));
    }
}
