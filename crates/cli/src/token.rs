//! `tempora token create|list|revoke`: the token catalog of a data directory, edited in
//! place (docs/security.md). It works with the server stopped — the first admin token is
//! made this way — and with it running: the server sees the change at its next
//! authentication.

use clap::{Args, Subcommand};
use tempora_server::auth::{Grant, store::TokenStore};

use crate::ServerFlags;

#[derive(Subcommand)]
pub enum TokenCmd {
    /// Makes a token and prints it (once: only its hash is kept).
    Create(CreateArgs),
    /// Lists the tokens (never their secrets).
    List(ServerFlags),
    /// Revokes a token at once.
    Revoke {
        name: String,
        #[command(flatten)]
        flags: ServerFlags,
    },
}

#[derive(Args)]
pub struct CreateArgs {
    /// The token's name (the PostgreSQL user it logs in as).
    #[arg(long)]
    name: String,
    /// Databases it may read: db1,db2 or * for all.
    #[arg(long, default_value = "")]
    read: String,
    /// Databases it may write: db1,db2 or * for all.
    #[arg(long, default_value = "")]
    write: String,
    /// Everything: DDL, DROP, tokens, models, settings.
    #[arg(long)]
    admin: bool,
    #[command(flatten)]
    flags: ServerFlags,
}

fn store(flags: &ServerFlags) -> Result<TokenStore, Box<dyn std::error::Error>> {
    let config = flags.load()?;
    Ok(TokenStore::open(&config.data_dir).map_err(|e| e.to_string())?)
}

pub fn run(cmd: TokenCmd) -> Result<(), Box<dyn std::error::Error>> {
    match cmd {
        TokenCmd::Create(a) => {
            let grant = Grant::parse(&a.name, &a.read, &a.write, a.admin)?;
            let store = store(&a.flags)?;
            let now = tempora_server::state::now_ns();
            let secret = store
                .create(grant.clone(), now)
                .map_err(|e| e.to_string())?;
            eprintln!(
                "created token {:?} ({}); it is shown this once:",
                grant.name,
                describe(&grant)
            );
            println!("{}", secret.0);
            Ok(())
        }
        TokenCmd::List(flags) => {
            for t in store(&flags)?.list() {
                let created = chrono::DateTime::from_timestamp_nanos(t.created_ns).to_rfc3339();
                println!(
                    "{}\t{}\tcreated {created}",
                    t.grant.name,
                    describe(&t.grant)
                );
            }
            Ok(())
        }
        TokenCmd::Revoke { name, flags } => match store(&flags)?.revoke(&name) {
            Ok(true) => {
                eprintln!("revoked token {name:?}");
                Ok(())
            }
            Ok(false) => Err(format!("token {name:?} does not exist").into()),
            Err(e) => Err(e.to_string().into()),
        },
    }
}

/// `read: db1,db2; write: db1; admin` as one line.
fn describe(g: &Grant) -> String {
    let list = |s: &std::collections::BTreeSet<String>| match s.is_empty() {
        true => "-".to_string(),
        false => s.iter().cloned().collect::<Vec<_>>().join(","),
    };
    format!(
        "read: {}; write: {}; admin: {}",
        list(&g.read),
        list(&g.write),
        if g.admin { "yes" } else { "no" }
    )
}
