//! `tempora`: the server (`serve`), its configuration (`config show`), a SQL client (`sql`),
//! a CSV importer (`import`) and the benchmark tools (`bench gen`, `bench load`).

mod bench;
mod check;
mod client;
mod prom_bench;
mod token;

/// mimalloc keeps freed pages for reuse: a query's column buffers (megabytes, allocated and
/// freed per query) would otherwise be unmapped by glibc and faulted in again on the next
/// query, which was a third of a whole-table aggregate's time (docs/benchmarks.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use tempora_server::Config;

#[derive(Parser)]
#[command(name = "tempora", version, about = "Tempora: a time-series database")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(clap::Args, Default)]
struct ServerFlags {
    /// TOML configuration file.
    #[arg(long)]
    config: Option<PathBuf>,
    #[arg(long)]
    data_dir: Option<PathBuf>,
    #[arg(long)]
    http_addr: Option<String>,
    #[arg(long)]
    pg_addr: Option<String>,
    /// Require a token on every request and connection (`auth = true`).
    #[arg(long)]
    auth: bool,
    /// Serve beyond loopback without authentication (the operator's explicit choice).
    #[arg(long)]
    insecure: bool,
}

impl ServerFlags {
    fn load(&self) -> Result<Config, Box<dyn std::error::Error>> {
        let mut flags = Vec::new();
        if let Some(d) = &self.data_dir {
            flags.push(("data_dir".to_string(), d.display().to_string()));
        }
        if let Some(a) = &self.http_addr {
            flags.push(("http_addr".to_string(), a.clone()));
        }
        if let Some(a) = &self.pg_addr {
            flags.push(("pg_addr".to_string(), a.clone()));
        }
        for (on, key) in [(self.auth, "auth"), (self.insecure, "insecure")] {
            if on {
                flags.push((key.to_string(), "true".to_string()));
            }
        }
        Ok(Config::load(
            self.config.as_deref(),
            std::env::vars(),
            &flags,
        )?)
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// Runs the server.
    Serve(ServerFlags),
    /// Shows configuration.
    Config {
        #[command(subcommand)]
        what: ConfigCmd,
    },
    /// SQL client: runs -c/-f statements, or a REPL.
    Sql(client::SqlArgs),
    /// Imports a CSV file.
    Import(client::ImportArgs),
    /// Tokens: create, list, revoke (in the data directory; the server need not run).
    Token {
        #[command(subcommand)]
        what: token::TokenCmd,
    },
    /// Verifies every file of a stopped server's data directory and reports the damage and
    /// what it costs, changing nothing.
    Check(check::CheckArgs),
    /// Repairs a stopped server's data directory: keeps every readable row, moves damaged
    /// files to <data_dir>/quarantine/ and writes a report of what was lost.
    Repair(check::CheckArgs),
    /// Benchmark tools: data generator and HTTP loader.
    Bench {
        #[command(subcommand)]
        what: bench::BenchCmd,
    },
}

#[derive(Subcommand)]
enum ConfigCmd {
    /// Prints the effective configuration (defaults < file < environment < flags) as TOML.
    Show(ServerFlags),
}

/// Stack of each of the server's threads (tokio's workers and blocking threads; 2 MiB by
/// default). Planning, DataFusion's optimizer and the operators' polling recurse once per
/// level of a plan, and a query may nest up to its bounds (256 operators): with 2 MiB a
/// PromQL chain of 250 comparisons overflowed a worker's stack and killed the server. The
/// memory is reserved, not committed: a thread touches only what it uses.
const WORKER_STACK_BYTES: usize = 16 << 20;

fn main() {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Serve(flags) => serve(&flags),
        Cmd::Config {
            what: ConfigCmd::Show(flags),
        } => flags.load().map(|c| print!("{}", c.to_toml())),
        Cmd::Sql(args) => client::sql(args),
        Cmd::Import(args) => client::import(args),
        Cmd::Bench { what } => bench::run(what),
        Cmd::Token { what } => token::run(what),
        Cmd::Check(args) => check::check(args),
        Cmd::Repair(args) => check::repair(args),
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn serve(flags: &ServerFlags) -> Result<(), Box<dyn std::error::Error>> {
    let config = flags.load()?;
    let filter = tracing_subscriber::EnvFilter::try_from_env("TEMPORA_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if config.log_format == "json" {
        builder.json().init();
    } else {
        builder.init();
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(WORKER_STACK_BYTES)
        .enable_all()
        .build()?;
    rt.block_on(tempora_server::run(
        config,
        tempora_server::shutdown_signal(),
    ))?;
    Ok(())
}
