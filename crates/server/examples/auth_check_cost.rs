//! What one authentication and one statement check cost in process (issue 26): the HTTP
//! check of a request's token (a write request does this once per body) and the check of
//! one statement against a token's grant (every statement on both ports), each timed over
//! many calls on the TSBS query texts. `bench/auth_cost.sh` measures the same side by side
//! through the server; this gives the per-call figure behind it.
//!
//!   cargo run --release -p tempora-server --example auth_check_cost

use std::sync::Arc;
use std::time::Instant;

use tempora_query::access::Authorize;
use tempora_server::auth::{Access, Credentials, Grant, Principal, store::TokenStore};

const QUERIES: [&str; 4] = [
    "SELECT DISTINCT ON (hostname) * FROM cpu ORDER BY hostname, time DESC",
    "SELECT date_trunc('minute', time) AS minute, max(usage_user) FROM cpu \
     WHERE hostname IN ('host_1') AND time >= '2016-01-01T01:00:00Z' \
     AND time < '2016-01-01T02:00:00Z' GROUP BY minute ORDER BY minute",
    "SELECT date_trunc('hour', time) AS hour, hostname, avg(usage_user) FROM cpu \
     WHERE time >= '2016-01-01T00:00:00Z' AND time < '2016-01-01T12:00:00Z' \
     GROUP BY hour, hostname ORDER BY hour, hostname",
    "SELECT * FROM cpu WHERE usage_user > 90.0 AND time >= '2016-01-01T00:00:00Z' \
     AND time < '2016-01-01T12:00:00Z' AND hostname IN ('host_3') ORDER BY hostname, time",
];

fn main() {
    let dir = std::env::temp_dir().join(format!("tempora-auth-cost-{}", std::process::id()));
    let store = Arc::new(TokenStore::open(&dir).unwrap());
    let secret = store
        .create(Grant::parse("reader", "benchmark", "", false).unwrap(), 0)
        .unwrap();
    let access = Arc::new(Access::new(true, store, None));
    let n = 200_000;

    let creds = Credentials::Token(secret.0.clone());
    let t = Instant::now();
    for _ in 0..n {
        assert!(access.http(&creds).is_ok());
    }
    let http_ns = t.elapsed().as_nanos() as f64 / n as f64;
    println!(
        "HTTP authentication of a token: {:.2} µs per request",
        http_ns / 1e3
    );

    let check = access.statements(Principal::Token("reader".into()));
    for q in QUERIES {
        let stmt = tempora_query::sql::parse(q).unwrap().pop().unwrap();
        let t = Instant::now();
        for _ in 0..n {
            check.statement(&stmt, "benchmark").unwrap();
        }
        let ns = t.elapsed().as_nanos() as f64 / n as f64;
        println!(
            "statement check: {:.2} µs  {}",
            ns / 1e3,
            &q[..q.len().min(60)]
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
