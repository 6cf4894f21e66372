//! `tempora bench gen` (TSBS-shaped data) and `tempora bench load` (line protocol over HTTP).

use std::io::{BufRead, BufWriter, IsTerminal, Write};
use std::path::PathBuf;

use tempora_bench::load::{LoadOptions, load};
use tempora_bench::tsbs::{CpuOnly, Format, Scale, TSBS_START_NS};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

#[derive(clap::Subcommand)]
pub enum BenchCmd {
    /// Generates deterministic TSBS cpu-only data (streams; any scale).
    Gen(GenArgs),
    /// Loads line protocol over HTTP with concurrent workers; prints rows/s.
    Load(LoadArgs),
}

#[derive(clap::Args)]
pub struct GenArgs {
    #[arg(long, default_value = "cpu-only", value_parser = ["cpu-only"])]
    use_case: String,
    #[arg(long, default_value_t = 100)]
    hosts: usize,
    /// Seconds between points of a host.
    #[arg(long, default_value_t = 10)]
    interval_secs: i64,
    /// Length of the time range in seconds (default: one day).
    #[arg(long, default_value_t = 86_400)]
    duration_secs: i64,
    /// Start, in nanoseconds since the epoch (default: 2016-01-01, as TSBS).
    #[arg(long, default_value_t = TSBS_START_NS)]
    start_ns: i64,
    #[arg(long, default_value_t = 123)]
    seed: u64,
    #[arg(long, default_value = "lp", value_parser = ["lp", "csv"])]
    format: String,
    /// Output file (default: standard output).
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct LoadArgs {
    /// Line-protocol file (default: standard input).
    file: Option<PathBuf>,
    /// Write URL: Tempora or InfluxDB `http://H:8086/write?db=D`, QuestDB `http://H:9000/write`.
    #[arg(long, default_value = "http://127.0.0.1:8086/write?db=benchmark")]
    url: String,
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Lines per request.
    #[arg(long, default_value_t = 10_000)]
    batch: usize,
    #[arg(long)]
    gzip: bool,
}

pub fn run(cmd: BenchCmd) -> Res<()> {
    match cmd {
        BenchCmd::Gen(a) => gen_cmd(a),
        BenchCmd::Load(a) => load_cmd(a),
    }
}

fn gen_cmd(a: GenArgs) -> Res<()> {
    if a.interval_secs <= 0 || a.duration_secs <= 0 || a.hosts == 0 {
        return Err("hosts, interval and duration must be positive".into());
    }
    let scale = Scale {
        hosts: a.hosts,
        start_ns: a.start_ns,
        interval_ns: a.interval_secs * 1_000_000_000,
        steps: a.duration_secs / a.interval_secs,
        seed: a.seed,
    };
    let format = if a.format == "csv" {
        Format::Csv
    } else {
        Format::LineProtocol
    };
    let out: Box<dyn Write> = match &a.out {
        Some(p) => Box::new(std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()))?),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = BufWriter::with_capacity(1 << 20, out);
    let rows = CpuOnly::new(scale).write_all(format, &mut out)?;
    out.flush()?;
    eprintln!("generated {rows} rows ({})", a.use_case);
    Ok(())
}

fn load_cmd(a: LoadArgs) -> Res<()> {
    let input: Box<dyn BufRead> = match &a.file {
        Some(p) => Box::new(std::io::BufReader::with_capacity(
            1 << 20,
            std::fs::File::open(p).map_err(|e| format!("{}: {e}", p.display()))?,
        )),
        None => Box::new(std::io::stdin().lock()),
    };
    let opts = LoadOptions {
        url: a.url.clone(),
        workers: a.workers,
        batch_lines: a.batch,
        gzip: a.gzip,
        max_retries: 100,
    };
    let live = std::io::stderr().is_terminal();
    let r = load(input, &opts, |p, t| {
        let rows = p.rows.load(std::sync::atomic::Ordering::Relaxed);
        let values = p.values.load(std::sync::atomic::Ordering::Relaxed);
        let secs = t.as_secs_f64().max(1e-9);
        let msg = format!(
            "{:>6.1} s  {rows} rows  {:.0} rows/s  {:.0} values/s",
            secs,
            rows as f64 / secs,
            values as f64 / secs
        );
        if live {
            eprint!("\r{msg}   ");
        } else {
            eprintln!("{msg}");
        }
    })?;
    if live {
        eprintln!();
    }
    println!(
        "loaded {} rows ({} values, {} bytes sent) in {:.2} s: {:.0} rows/s, {:.0} values/s; \
         {} retries after 503; {} rows failed",
        r.rows,
        r.values,
        r.bytes,
        r.seconds,
        r.rows_per_sec(),
        r.values_per_sec(),
        r.retries,
        r.failed_rows
    );
    for f in &r.failures {
        println!("  failed: {f}");
    }
    if r.failed_rows > 0 {
        return Err(format!("{} rows were not loaded", r.failed_rows).into());
    }
    Ok(())
}
