//! `tempora bench gen` (TSBS-shaped data), `tempora bench load` (line protocol or captured
//! Prometheus remote writes over HTTP) and `tempora bench capture` ([`crate::prom_bench`]).

use std::io::{BufRead, BufWriter, IsTerminal, Write};
use std::path::PathBuf;

use tempora_bench::devops::Devops;
use tempora_bench::iot::Iot;
use tempora_bench::load::{LoadOptions, LoadReport, load};
use tempora_bench::tsbs::{CpuOnly, Format, Scale, TSBS_START_NS};
use tempora_bench::walk::{UseCase, write_all};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

#[derive(clap::Subcommand)]
pub enum BenchCmd {
    /// Generates deterministic TSBS data: cpu-only, devops or iot (streams; any scale).
    Gen(GenArgs),
    /// Loads line protocol (or captured remote writes) over HTTP with concurrent workers;
    /// prints rows/s.
    Load(LoadArgs),
    /// Records the remote-write requests a Prometheus sends, for `load --format prom-rw`.
    Capture(crate::prom_bench::CaptureArgs),
    /// Times each stage of one query (parse, prepare, bind, physical plan, execute) over a
    /// data directory written by the server (stop the server first: the engine locks it).
    PlanTime(PlanTimeArgs),
}

#[derive(clap::Args)]
pub struct PlanTimeArgs {
    /// The engine's directory (the server's data directory + `/db`).
    #[arg(long)]
    data_dir: PathBuf,
    #[arg(long, default_value = "benchmark")]
    db: String,
    /// The statement.
    sql: String,
    #[arg(long, default_value_t = 200)]
    runs: u32,
}

#[derive(clap::Args)]
pub struct GenArgs {
    /// cpu-only: one `cpu` row per host and step; devops: nine measurements per host and
    /// step; iot: `readings` and `diagnostics` per truck and step, with missing and late points.
    #[arg(long, default_value = "cpu-only", value_parser = ["cpu-only", "devops", "iot"])]
    use_case: String,
    /// Hosts (trucks for iot).
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
    /// Output file (default: standard output). For CSV of devops or iot, whose measurements
    /// have different columns: a directory, which gets one MEASUREMENT.csv per measurement.
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct LoadArgs {
    /// Line-protocol file (default: standard input), or with `--format prom-rw` a capture of
    /// `tempora bench capture`.
    file: Option<PathBuf>,
    /// `lp`: line protocol in batches of `--batch` lines; `prom-rw`: each captured
    /// remote-write request sent as it was (rows are samples).
    #[arg(long, default_value = "lp", value_parser = ["lp", "prom-rw"])]
    format: String,
    /// prom-rw: replay the capture this many times, each copy's timestamps after the last's.
    #[arg(long, default_value_t = 1)]
    repeat: usize,
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
    /// Stop reading the input after this many seconds (a fixed-length run, e.g. from
    /// `tempora bench gen … | tempora bench load --max-secs 1800`).
    #[arg(long)]
    max_secs: Option<f64>,
    /// Appends the run as one JSON line (kind "ingest", bench/report.py's schema) to this file.
    #[arg(long)]
    json_out: Option<PathBuf>,
    /// The system loaded, for --json-out.
    #[arg(long, default_value = "tempora")]
    system: String,
    /// What was loaded, for --json-out (e.g. "cpu-only 100 hosts x 1 d").
    #[arg(long, default_value = "")]
    dataset: String,
    /// The token to present (or the TEMPORA_TOKEN environment variable).
    #[arg(long, env = "TEMPORA_TOKEN", hide_env_values = true)]
    token: Option<String>,
}

pub fn run(cmd: BenchCmd) -> Res<()> {
    match cmd {
        BenchCmd::Gen(a) => gen_cmd(a),
        BenchCmd::Load(a) => load_cmd(a),
        BenchCmd::Capture(a) => crate::prom_bench::capture_cmd(a),
        BenchCmd::PlanTime(a) => plan_time_cmd(a),
    }
}

fn plan_time_cmd(a: PlanTimeArgs) -> Res<()> {
    use std::sync::Arc;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let engine = Arc::new(tempora_storage::Engine::open(
            tempora_storage::EngineOptions::default(),
            tempora_storage::EngineIo::local(&a.data_dir)?,
        )?);
        let dbs = Arc::new(tempora_query::catalog::Databases::open(engine, None)?);
        let q = tempora_query::QueryService::new(dbs, tempora_query::QueryLimits::default())?;
        let s = tempora_query::stages::measure(&q, &a.db, &a.sql, a.runs).await?;
        println!("{s}");
        Ok(())
    })
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
    let rows = match a.use_case.as_str() {
        "cpu-only" => {
            let mut out = BufWriter::with_capacity(1 << 20, open_out(a.out.as_ref())?);
            let rows = CpuOnly::new(scale).write_all(format, &mut out)?;
            out.flush()?;
            rows
        }
        "devops" => write_use_case(Devops::new(scale), format, a.out.as_ref())?,
        _ => write_use_case(Iot::new(scale), format, a.out.as_ref())?,
    };
    eprintln!("generated {rows} rows ({})", a.use_case);
    Ok(())
}

fn open_out(path: Option<&PathBuf>) -> Res<Box<dyn Write>> {
    Ok(match path {
        Some(p) => Box::new(std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()))?),
        None => Box::new(std::io::stdout().lock()),
    })
}

/// Line protocol to one output; CSV to one file per measurement in the directory `out`.
fn write_use_case(mut uc: impl UseCase, format: Format, out: Option<&PathBuf>) -> Res<u64> {
    let mut outs: Vec<Box<dyn Write>> = if format == Format::Csv {
        let dir = out.ok_or("CSV of a use case with several measurements needs --out DIR")?;
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut v: Vec<Box<dyn Write>> = Vec::new();
        for m in uc.measurements() {
            let p = dir.join(format!("{}.csv", m.name));
            let f = std::fs::File::create(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            v.push(Box::new(BufWriter::with_capacity(1 << 20, f)));
        }
        v
    } else {
        vec![Box::new(BufWriter::with_capacity(1 << 20, open_out(out)?))]
    };
    let rows = write_all(&mut uc, format, &mut outs)?;
    for o in &mut outs {
        o.flush()?;
    }
    Ok(rows)
}

fn load_cmd(a: LoadArgs) -> Res<()> {
    if let Some(s) = a.max_secs
        && !(s.is_finite() && s > 0.0)
    {
        return Err(format!("--max-secs must be a positive number of seconds, not {s}").into());
    }
    let prom = a.format == "prom-rw";
    let bodies = match (&a.file, prom) {
        (Some(p), true) => Some(crate::prom_bench::bodies(p, a.repeat)?),
        (None, true) => return Err("--format prom-rw reads a capture file: name it".into()),
        _ => None,
    };
    let input: Box<dyn BufRead + Send> = match &a.file {
        _ if prom => Box::new(std::io::empty()),
        Some(p) => Box::new(std::io::BufReader::with_capacity(
            1 << 20,
            std::fs::File::open(p).map_err(|e| format!("{}: {e}", p.display()))?,
        )),
        None => Box::new(std::io::BufReader::new(std::io::stdin())),
    };
    let opts = LoadOptions {
        url: a.url.clone(),
        workers: a.workers,
        batch_lines: a.batch,
        gzip: a.gzip,
        max_retries: 100,
        max_duration: a.max_secs.map(std::time::Duration::from_secs_f64),
        token: a.token.clone(),
        headers: if prom {
            crate::prom_bench::headers()
        } else {
            Vec::new()
        },
    };
    let live = std::io::stderr().is_terminal();
    // Throughput of each interval between ticks: (seconds since the start, rows/s).
    let samples = std::sync::Mutex::new((0u64, 0f64, Vec::<(f64, f64)>::new()));
    let tick = |p: &tempora_bench::load::Progress, t: std::time::Duration| {
        let rows = p.rows.load(std::sync::atomic::Ordering::Relaxed);
        let values = p.values.load(std::sync::atomic::Ordering::Relaxed);
        let secs = t.as_secs_f64().max(1e-9);
        {
            let mut s = samples.lock().unwrap_or_else(|e| e.into_inner());
            let (prev_rows, prev_t) = (s.0, s.1);
            let rate = (rows - prev_rows) as f64 / (secs - prev_t).max(1e-9);
            s.2.push((secs, rate));
            (s.0, s.1) = (rows, secs);
        }
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
    };
    let r = match bodies {
        Some(b) => tempora_bench::load::load_bodies(b, &opts, tick)?,
        None => load(input, &opts, tick)?,
    };
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
    if let Some(path) = &a.json_out {
        let samples = samples.into_inner().unwrap_or_else(|e| e.into_inner()).2;
        let line = ingest_record(&a, &r, &samples);
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        writeln!(f, "{line}").map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if r.failed_rows > 0 {
        return Err(format!("{} rows were not loaded", r.failed_rows).into());
    }
    Ok(())
}

/// One `ingest` result line, in the schema of bench/report.py's docstring.
fn ingest_record(a: &LoadArgs, r: &LoadReport, samples: &[(f64, f64)]) -> serde_json::Value {
    let samples: Vec<serde_json::Value> = samples
        .iter()
        .map(|(t, rate)| serde_json::json!({"t_s": t, "rows_per_s": rate}))
        .collect();
    serde_json::json!({
        "kind": "ingest",
        "system": a.system,
        "dataset": a.dataset,
        "rows": r.rows,
        "values": r.values,
        "seconds": r.seconds,
        "rows_per_s": r.rows_per_sec(),
        "values_per_s": r.values_per_sec(),
        "workers": a.workers,
        "batch": a.batch,
        "gzip": a.gzip,
        "failed_rows": r.failed_rows,
        "retries": r.retries,
        "samples": samples,
    })
}
