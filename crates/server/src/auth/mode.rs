//! Whether authentication is on: what the configuration asks for, and always when a port
//! binds to an address other than loopback (unless the operator passes `--insecure`). A
//! server bound beyond loopback with authentication and no admin credential refuses to start:
//! nobody could administer it.

use std::net::SocketAddr;

/// What start-up knows.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    pub auth: bool,
    pub insecure: bool,
    pub addrs: [&'a str; 2],
    /// Some admin token exists.
    pub has_admin_token: bool,
    /// `pg_password` is set (an admin credential).
    pub has_operator_password: bool,
}

/// Whether a listen address reaches beyond this machine.
pub fn beyond_loopback(addr: &str) -> bool {
    addr.parse::<SocketAddr>()
        .map(|a| !a.ip().is_loopback())
        .unwrap_or(true)
}

/// `Ok(true)`: authentication on; `Err`: the server must not start, and why.
pub fn decide(i: Inputs) -> Result<bool, String> {
    let exposed: Vec<&str> = i
        .addrs
        .iter()
        .copied()
        .filter(|a| beyond_loopback(a))
        .collect();
    if exposed.is_empty() || i.insecure {
        return Ok(i.auth);
    }
    if !i.has_admin_token && !i.has_operator_password {
        return Err(format!(
            "refusing to listen on {} (beyond loopback) without an admin token: create one \
             with `tempora token create --name admin --admin --data-dir <dir>`, or pass \
             --insecure to serve without authentication",
            exposed.join(" and ")
        ));
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authentication_is_on_when_asked_for_or_exposed() {
        let base = Inputs {
            auth: false,
            insecure: false,
            addrs: ["127.0.0.1:8086", "127.0.0.1:5433"],
            has_admin_token: false,
            has_operator_password: false,
        };
        let exposed = Inputs {
            addrs: ["0.0.0.0:8086", "127.0.0.1:5433"],
            ..base
        };
        let cases = [
            ("loopback, off", base, Ok(false)),
            (
                "loopback, asked for",
                Inputs { auth: true, ..base },
                Ok(true),
            ),
            (
                "IPv6 loopback",
                Inputs {
                    addrs: ["[::1]:8086", "127.0.0.1:5433"],
                    ..base
                },
                Ok(false),
            ),
            (
                "exposed with an admin token",
                Inputs {
                    has_admin_token: true,
                    ..exposed
                },
                Ok(true),
            ),
            (
                "exposed with pg_password",
                Inputs {
                    has_operator_password: true,
                    ..exposed
                },
                Ok(true),
            ),
            (
                "exposed, --insecure",
                Inputs {
                    insecure: true,
                    ..exposed
                },
                Ok(false),
            ),
        ];
        for (name, i, want) in cases {
            assert_eq!(decide(i), want, "{name}");
        }
        let e = decide(exposed).unwrap_err();
        assert!(
            e.contains("0.0.0.0:8086") && e.contains("--insecure") && e.contains("token create"),
            "{e}"
        );
        let pg = decide(Inputs {
            addrs: ["127.0.0.1:8086", "10.0.0.5:5433"],
            ..base
        });
        assert!(
            pg.unwrap_err().contains("10.0.0.5:5433"),
            "either port counts"
        );
    }
}
