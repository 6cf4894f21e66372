//! The HTTP client side of the CLI: `tempora sql` and `tempora import`.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Instant;

use tempora_server::csv_import::{self, CsvSpec};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

#[derive(clap::Args)]
pub struct SqlArgs {
    /// Server HTTP address.
    #[arg(long, default_value = "127.0.0.1:8086")]
    host: String,
    #[arg(long, default_value = "public")]
    db: String,
    /// Run this SQL and exit.
    #[arg(short = 'c')]
    command: Option<String>,
    /// Run the statements of this file and exit.
    #[arg(short = 'f')]
    file: Option<PathBuf>,
    #[arg(long, default_value = "table", value_parser = ["table", "csv", "json"])]
    format: String,
    /// The token to present (or the TEMPORA_TOKEN environment variable).
    #[arg(long, env = "TEMPORA_TOKEN", hide_env_values = true)]
    token: Option<String>,
}

/// A POST to `url` carrying `token` when one is given.
fn post(
    agent: &ureq::Agent,
    url: &str,
    token: Option<&str>,
) -> ureq::RequestBuilder<ureq::typestate::WithBody> {
    let r = agent.post(url);
    match token {
        Some(t) => r.header("Authorization", &format!("Token {t}")),
        None => r,
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into()
}

/// Runs one statement; prints its result in `format`.
fn run_one(agent: &ureq::Agent, args: &SqlArgs, sql: &str, timing: bool) -> Res<()> {
    let started = Instant::now();
    let wire = if args.format == "csv" { "csv" } else { "json" };
    let url = format!(
        "http://{}/api/v1/sql?db={}&format={wire}",
        args.host, args.db
    );
    let mut resp = post(agent, &url, args.token.as_deref()).send(sql.as_bytes())?;
    let status = resp.status();
    let body = resp.body_mut().read_to_string()?;
    if !status.is_success() {
        let msg = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v["error"].as_str().map(str::to_string))
            .unwrap_or(body);
        return Err(format!("{status}: {msg}").into());
    }
    match args.format.as_str() {
        "table" => print_table(&serde_json::from_str(&body)?),
        _ => print!("{body}"),
    }
    if args.format != "csv" && args.format != "table" {
        println!();
    }
    if timing {
        println!("Time: {:.3} ms", started.elapsed().as_secs_f64() * 1e3);
    }
    Ok(())
}

fn cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn print_table(v: &serde_json::Value) {
    let cols: Vec<String> = v["columns"].as_array().map_or(Vec::new(), |c| {
        c.iter()
            .map(|c| c["name"].as_str().unwrap_or("").to_string())
            .collect()
    });
    let rows: Vec<Vec<String>> = v["rows"].as_array().map_or(Vec::new(), |r| {
        r.iter()
            .map(|r| {
                r.as_array()
                    .map_or(Vec::new(), |r| r.iter().map(cell).collect())
            })
            .collect()
    });
    let mut w: Vec<usize> = cols.iter().map(|c| c.len()).collect();
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.len());
        }
    }
    let line = |cells: &[String]| {
        let parts: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!(" {:<width$} ", c, width = w[i]))
            .collect();
        parts.join("|")
    };
    println!("{}", line(&cols));
    println!(
        "{}",
        w.iter()
            .map(|n| "-".repeat(n + 2))
            .collect::<Vec<_>>()
            .join("+")
    );
    for r in &rows {
        println!("{}", line(r));
    }
    println!(
        "({} row{})",
        rows.len(),
        if rows.len() == 1 { "" } else { "s" }
    );
}

/// Splits SQL text into statements at `;` outside quotes.
pub fn split_statements(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    for ch in text.chars() {
        match (quote, ch) {
            (None, '\'' | '"') => quote = Some(ch),
            (Some(q), c) if c == q => quote = None,
            (None, ';') => {
                if !cur.trim().is_empty() {
                    out.push(cur.trim().to_string());
                }
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

pub fn sql(args: SqlArgs) -> Res<()> {
    let agent = agent();
    if let Some(c) = &args.command {
        for s in split_statements(c) {
            run_one(&agent, &args, &s, false)?;
        }
        return Ok(());
    }
    if let Some(f) = &args.file {
        let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        for s in split_statements(&text) {
            run_one(&agent, &args, &s, false)?;
        }
        return Ok(());
    }
    repl(&agent, &args)
}

fn repl(agent: &ureq::Agent, args: &SqlArgs) -> Res<()> {
    let mut rl = rustyline::DefaultEditor::new()?;
    let history = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".tempora_history"));
    if let Some(h) = &history {
        let _ = rl.load_history(h);
    }
    let mut timing = false;
    let mut buf = String::new();
    loop {
        let prompt = if buf.is_empty() {
            format!("{}=> ", args.db)
        } else {
            format!("{}-> ", args.db)
        };
        let line = match rl.readline(&prompt) {
            Ok(l) => l,
            Err(rustyline::error::ReadlineError::Interrupted) => {
                buf.clear();
                continue;
            }
            Err(_) => break,
        };
        let t = line.trim();
        if buf.is_empty() && t.starts_with('\\') {
            let _ = rl.add_history_entry(t);
            let mut words = t.split_whitespace();
            let sql = match (words.next(), words.next()) {
                (Some("\\q"), _) => break,
                (Some("\\timing"), _) => {
                    timing = !timing;
                    println!("Timing is {}.", if timing { "on" } else { "off" });
                    continue;
                }
                // The database's own tables, not the catalog views of every database.
                (Some("\\dt"), _) => format!(
                    "SELECT table_name FROM information_schema.tables \
                     WHERE table_catalog = '{}' AND table_schema = 'public' ORDER BY table_name",
                    args.db.replace('\'', "''")
                ),
                (Some("\\d"), Some(table)) => format!("DESCRIBE {table}"),
                _ => {
                    println!("commands: \\dt, \\d TABLE, \\timing, \\q");
                    continue;
                }
            };
            if let Err(e) = run_one(agent, args, &sql, timing) {
                eprintln!("error: {e}");
            }
            continue;
        }
        buf.push_str(&line);
        buf.push('\n');
        if !t.ends_with(';') {
            continue;
        }
        let _ = rl.add_history_entry(buf.trim());
        for s in split_statements(&buf) {
            if let Err(e) = run_one(agent, args, &s, timing) {
                eprintln!("error: {e}");
            }
        }
        buf.clear();
    }
    if let Some(h) = &history {
        let _ = rl.save_history(h);
    }
    Ok(())
}

#[derive(clap::Args)]
pub struct ImportArgs {
    /// CSV file with a header row.
    file: PathBuf,
    #[arg(long, default_value = "127.0.0.1:8086")]
    host: String,
    #[arg(long, default_value = "public")]
    db: String,
    #[arg(long)]
    table: String,
    /// Column holding the time: RFC 3339, or integer nanoseconds.
    #[arg(long, default_value = "time")]
    time_column: String,
    /// Columns that are tags (comma-separated); the others are fields.
    #[arg(long, value_delimiter = ',')]
    tags: Vec<String>,
    /// Rows per request.
    #[arg(long, default_value_t = 10_000)]
    batch: usize,
    /// The token to present (or the TEMPORA_TOKEN environment variable).
    #[arg(long, env = "TEMPORA_TOKEN", hide_env_values = true)]
    token: Option<String>,
}

pub fn import(args: ImportArgs) -> Res<()> {
    let f = std::fs::File::open(&args.file).map_err(|e| format!("{}: {e}", args.file.display()))?;
    let size = f.metadata()?.len();
    let mut rdr = csv::Reader::from_reader(std::io::BufReader::new(f));
    let headers = rdr.headers()?.clone();
    let spec = CsvSpec {
        table: args.table.clone(),
        time_column: args.time_column.clone(),
        tags: args.tags.clone(),
    };
    let time_idx = csv_import::time_index(&headers, &spec)?;
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(size);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {msg}")
                .expect("template"),
        );
        b
    });
    let agent = agent();
    let url = format!("http://{}/write?db={}", args.host, args.db);
    let (mut sent, mut bad, mut body) = (0usize, Vec::new(), String::new());
    // The CSV row of each line in `body`, to name rows the server rejects.
    let mut body_rows: Vec<usize> = Vec::new();
    let started = Instant::now();
    let flush = |body: &mut String, body_rows: &mut Vec<usize>, bad: &mut Vec<String>| -> Res<()> {
        if body.is_empty() {
            return Ok(());
        }
        let mut resp = post(&agent, &url, args.token.as_deref()).send(body.as_bytes())?;
        let status = resp.status().as_u16();
        let text = resp.body_mut().read_to_string()?;
        if status == 400 {
            let v: serde_json::Value = serde_json::from_str(&text)?;
            for r in v["rejected"].as_array().into_iter().flatten() {
                let line = r["line"].as_u64().unwrap_or(0) as usize;
                let row = body_rows.get(line.wrapping_sub(1)).copied().unwrap_or(0);
                bad.push(format!(
                    "server: row {row}: {}",
                    r["reason"].as_str().unwrap_or("")
                ));
            }
        } else if status != 204 {
            return Err(format!("server answered {status}: {text}").into());
        }
        body.clear();
        body_rows.clear();
        Ok(())
    };
    // Column types come from the first batch of rows (the file is streamed, not held).
    let mut records = rdr.records();
    let first: Vec<_> = records.by_ref().take(args.batch.max(1)).collect();
    let types =
        csv_import::infer_types(first.iter().filter_map(|r| r.as_ref().ok()), headers.len());
    let cols = csv_import::Columns {
        spec: &spec,
        headers: &headers,
        types: &types,
        time_idx,
    };
    let mut pos = 0;
    for (i, rec) in first.into_iter().chain(records).enumerate() {
        let row = i + 1;
        if let Some(p) = rec.as_ref().ok().and_then(|r| r.position()) {
            pos = p.byte();
        }
        let line = rec
            .map_err(|e| e.to_string())
            .and_then(|rec| csv_import::record_to_line(&cols, &rec, 1));
        match line {
            Ok(l) => {
                body.push_str(&l);
                body.push('\n');
                body_rows.push(row);
                sent += 1;
            }
            Err(e) => bad.push(format!("row {row}: {e}")),
        }
        if body_rows.len() >= args.batch {
            flush(&mut body, &mut body_rows, &mut bad)?;
            if let Some(b) = &bar {
                b.set_position(pos);
            }
        }
    }
    flush(&mut body, &mut body_rows, &mut bad)?;
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let secs = started.elapsed().as_secs_f64();
    let refused_by_server = bad.iter().filter(|b| b.starts_with("server: ")).count();
    let written = sent - refused_by_server;
    println!(
        "imported {written} rows into {}.{} in {secs:.2} s ({:.0} rows/s); {} rejected",
        args.db,
        args.table,
        written as f64 / secs.max(1e-9),
        bad.len()
    );
    for b in bad.iter().take(20) {
        println!("  {b}");
    }
    std::io::stdout().flush()?;
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!("{} rows were not imported", bad.len()).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_split_at_semicolons_outside_quotes() {
        assert_eq!(
            split_statements("select 1; select ';' ;\n"),
            vec!["select 1", "select ';'"]
        );
        assert_eq!(split_statements("  ;; "), Vec::<String>::new());
    }
}
