//! PromQL answered as Prometheus answers it. Debian's Prometheus (2.42) scrapes itself,
//! Debian's node exporter and Tempora every second and remote-writes into Tempora; then its
//! scraping is switched off (a config reload, which also writes staleness markers) and, once
//! every sample has been sent, `promtool query range|instant` asks both servers the same
//! expressions over the same window: label sets and timestamps must be identical, values
//! exact for selections and within 1e-9 (relative) where the order of a sum may differ.
//! Remote read is checked the same way: a second Prometheus without data, reading from
//! Tempora, answers as the first one does. Grafana's requests are replayed with curl.

mod common;

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Server, free_port};
use serde_json::Value;

struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(cmd: &mut Command) -> Proc {
    Proc(
        cmd.stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{cmd:?}: {e} (scripts/test-deps.sh installs it)")),
    )
}

fn get(url: &str) -> String {
    let out = common::curl(&["-sS", url]);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A metric's value in a Prometheus text exposition (summed over its series).
fn exposed(text: &str, name: &str) -> Option<f64> {
    let values: Vec<f64> = text
        .lines()
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with([' ', '{']))
        .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
        .collect();
    (!values.is_empty()).then(|| values.iter().sum())
}

fn wait_for(what: &str, secs: u64, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !ok() {
        assert!(Instant::now() < deadline, "{what}: not within {secs} s");
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn config(scrapes: &[(&str, String)], write_to: &str) -> String {
    let mut c = String::from("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n");
    if !scrapes.is_empty() {
        c.push_str("scrape_configs:\n");
        for (job, target) in scrapes {
            c.push_str(&format!(
                "  - job_name: {job}\n    static_configs:\n      - targets: ['{target}']\n"
            ));
        }
    }
    c.push_str(&format!(
        "remote_write:\n  - url: {write_to}\n    queue_config:\n      batch_send_deadline: 1s\n"
    ));
    c
}

/// promtool's JSON answer.
fn promtool(args: &[&str]) -> Value {
    let out = Command::new("promtool")
        .arg("query")
        .args(["-o", "json"])
        .args(args)
        .output()
        .expect("promtool is installed");
    assert!(
        out.status.success(),
        "promtool {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "promtool {args:?}: {e}: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// How two answers are compared.
#[derive(Clone, Copy, PartialEq)]
enum Cmp {
    /// Values identical (as text).
    Exact,
    /// Values within 1e-9 relative (1e-12 absolute near 0): sums in another order.
    Close,
    /// Per step, the multiset of values (topk/bottomk pick among ties differently).
    Values,
}

/// Series label text → points (time, value text).
fn points(v: &Value) -> BTreeMap<String, Vec<(String, String)>> {
    let items: Vec<Value> = match v {
        Value::Array(a) => a.clone(),
        Value::Object(_) => vec![v.clone()],
        _ => Vec::new(),
    };
    items
        .iter()
        .map(|s| {
            let metric = s["metric"].to_string();
            let pts = match (&s["values"], &s["value"]) {
                (Value::Array(vals), _) => vals.clone(),
                (_, Value::Array(_)) => vec![s["value"].clone()],
                _ => Vec::new(),
            };
            let pts = pts
                .iter()
                .map(|p| {
                    (
                        p[0].to_string(),
                        p[1].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect();
            (metric, pts)
        })
        .collect()
}

fn close(a: &str, b: &str) -> bool {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) if x.is_nan() && y.is_nan() => true,
        (Ok(x), Ok(y)) => {
            x == y || (x - y).abs() <= 1e-9 * x.abs().max(y.abs()) || (x - y).abs() < 1e-12
        }
        _ => a == b,
    }
}

fn compare(what: &str, cmp: Cmp, want: &Value, got: &Value) {
    let (w, g) = (points(want), points(got));
    if cmp == Cmp::Values {
        let by_step = |m: &BTreeMap<String, Vec<(String, String)>>| {
            let mut steps: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            for pts in m.values() {
                for (t, v) in pts {
                    steps.entry(t.clone()).or_default().push(v.parse().unwrap());
                }
            }
            for v in steps.values_mut() {
                v.sort_by(|a, b| a.total_cmp(b));
            }
            steps
        };
        let (ws, gs) = (by_step(&w), by_step(&g));
        assert_eq!(
            ws.keys().collect::<Vec<_>>(),
            gs.keys().collect::<Vec<_>>(),
            "{what}: steps"
        );
        for (t, wv) in &ws {
            let gv = &gs[t];
            assert_eq!(wv.len(), gv.len(), "{what} at {t}");
            for (a, b) in wv.iter().zip(gv) {
                assert!(
                    close(&a.to_string(), &b.to_string()),
                    "{what} at {t}: {wv:?} vs {gv:?}"
                );
            }
        }
        return;
    }
    assert_eq!(
        w.keys().collect::<Vec<_>>(),
        g.keys().collect::<Vec<_>>(),
        "{what}: the series differ"
    );
    for (labels, wp) in &w {
        let gp = &g[labels];
        let times = |p: &Vec<(String, String)>| p.iter().map(|x| x.0.clone()).collect::<Vec<_>>();
        assert_eq!(times(wp), times(gp), "{what} {labels}: timestamps");
        for ((t, a), (_, b)) in wp.iter().zip(gp) {
            let same = match cmp {
                Cmp::Exact => a == b,
                _ => close(a, b),
            };
            assert!(same, "{what} {labels} at {t}: Prometheus {a}, Tempora {b}");
        }
    }
}

/// The expressions compared, with how.
const EXPRESSIONS: &[(&str, Cmp)] = &[
    ("up", Cmp::Exact),
    ("prometheus_http_requests_total", Cmp::Exact),
    (
        r#"prometheus_http_requests_total{handler=~"/api.*|/metrics", code!="500"}"#,
        Cmp::Exact,
    ),
    (r#"{__name__=~"node_load.*", job="node"}"#, Cmp::Exact),
    ("go_goroutines offset 5s", Cmp::Exact),
    ("rate(prometheus_http_requests_total[10s])", Cmp::Close),
    ("irate(node_cpu_seconds_total[10s])", Cmp::Close),
    (
        "increase(prometheus_tsdb_head_samples_appended_total[15s])",
        Cmp::Close,
    ),
    ("delta(go_goroutines[10s])", Cmp::Close),
    ("idelta(process_resident_memory_bytes[5s])", Cmp::Close),
    (
        "rate(prometheus_http_requests_total[10s] offset 3s)",
        Cmp::Close,
    ),
    (
        "sum by (mode) (rate(node_cpu_seconds_total[10s]))",
        Cmp::Close,
    ),
    (
        "avg without (cpu) (rate(node_cpu_seconds_total[10s]))",
        Cmp::Close,
    ),
    ("max by (job) (go_goroutines)", Cmp::Exact),
    ("min(process_open_fds)", Cmp::Exact),
    ("count by (job) (up)", Cmp::Exact),
    ("group by (job) (up)", Cmp::Exact),
    ("stddev by (job) (go_memstats_alloc_bytes)", Cmp::Close),
    ("stdvar(go_goroutines)", Cmp::Close),
    ("quantile(0.5, go_goroutines)", Cmp::Close),
    ("sum(up)", Cmp::Exact),
    (
        "topk(3, rate(prometheus_http_requests_total[10s]))",
        Cmp::Values,
    ),
    ("bottomk by (job) (1, go_goroutines)", Cmp::Values),
    (
        "histogram_quantile(0.9, sum by (le) (rate(prometheus_http_request_duration_seconds_bucket[10s])))",
        Cmp::Close,
    ),
    (
        "histogram_quantile(0.5, rate(prometheus_tsdb_compaction_chunk_range_seconds_bucket[10s]))",
        Cmp::Close,
    ),
    ("avg_over_time(go_goroutines[10s])", Cmp::Close),
    ("max_over_time(node_load1[10s])", Cmp::Exact),
    ("min_over_time(go_goroutines[10s])", Cmp::Exact),
    ("sum_over_time(go_goroutines[10s])", Cmp::Close),
    ("count_over_time(up[10s])", Cmp::Exact),
    ("last_over_time(go_goroutines[10s])", Cmp::Exact),
    ("present_over_time(up[5s])", Cmp::Exact),
    ("stddev_over_time(go_goroutines[10s])", Cmp::Close),
    ("quantile_over_time(0.9, go_goroutines[10s])", Cmp::Close),
    ("changes(go_goroutines[10s])", Cmp::Exact),
    ("resets(prometheus_http_requests_total[10s])", Cmp::Exact),
    ("deriv(process_resident_memory_bytes[10s])", Cmp::Close),
    (
        "predict_linear(process_resident_memory_bytes[10s], 60)",
        Cmp::Close,
    ),
    (
        "node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes * 100",
        Cmp::Close,
    ),
    ("rate(prometheus_http_requests_total[10s]) > 0", Cmp::Close),
    ("up == bool 1", Cmp::Exact),
    ("up == 0", Cmp::Exact),
    ("2 * go_goroutines - 1", Cmp::Exact),
    (
        "go_goroutines + on(instance, job) process_open_fds",
        Cmp::Exact,
    ),
    (
        "rate(node_cpu_seconds_total[10s]) / on(instance) group_left count by (instance) (node_cpu_seconds_total)",
        Cmp::Close,
    ),
    (
        "go_goroutines > bool ignoring(instance) group_right go_threads",
        Cmp::Exact,
    ),
    ("go_goroutines and up", Cmp::Exact),
    (r#"go_goroutines unless on(job) up{job="node"}"#, Cmp::Exact),
    (
        r#"go_threads or on(job) go_goroutines{job="node"}"#,
        Cmp::Exact,
    ),
    ("up or go_goroutines", Cmp::Exact),
    (r#"go_threads{job="node"} or process_open_fds"#, Cmp::Exact),
    ("sum by (job) (up) or vector(0)", Cmp::Exact),
    ("up or up or go_goroutines or go_threads or up", Cmp::Exact),
    (r#"absent(nonexistent_metric{job="x"})"#, Cmp::Exact),
    ("absent(up)", Cmp::Exact),
    ("absent_over_time(nonexistent[5s])", Cmp::Exact),
    ("time() - process_start_time_seconds", Cmp::Close),
    (
        r#"label_replace(up, "host", "$1", "instance", "(.*):.*")"#,
        Cmp::Exact,
    ),
    (
        r#"label_join(up, "both", "/", "job", "instance")"#,
        Cmp::Exact,
    ),
    (
        "count(count by (mode) (node_cpu_seconds_total))",
        Cmp::Exact,
    ),
    ("scalar(count(up)) * 2", Cmp::Exact),
    ("vector(1) + 1", Cmp::Exact),
    ("clamp_max(go_goroutines, 20)", Cmp::Exact),
    (
        "round(rate(prometheus_http_requests_total[10s]), 0.01)",
        Cmp::Close,
    ),
    ("abs(-go_goroutines)", Cmp::Exact),
    ("sqrt(go_goroutines)", Cmp::Close),
    ("timestamp(up)", Cmp::Exact),
    ("timestamp(sum(up))", Cmp::Exact),
    ("hour(process_start_time_seconds)", Cmp::Exact),
    ("-up", Cmp::Exact),
    ("1 + 2", Cmp::Exact),
    ("time()", Cmp::Exact),
];

#[test]
fn promql_answers_as_prometheus_does() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let (prom_port, node_port) = (free_port(), free_port());
    let _node = spawn(
        Command::new("prometheus-node-exporter")
            .arg(format!("--web.listen-address=127.0.0.1:{node_port}"))
            .args([
                "--collector.disable-defaults",
                "--collector.cpu",
                "--collector.meminfo",
                "--collector.loadavg",
                "--collector.netdev",
            ]),
    );
    let write_to = s.url("/api/v1/write");
    let scrapes = [
        ("self", format!("127.0.0.1:{prom_port}")),
        ("node", format!("127.0.0.1:{node_port}")),
        ("tempora", s.http.clone()),
    ];
    let conf = dir.path().join("prometheus.yml");
    std::fs::write(&conf, config(&scrapes, &write_to)).unwrap();
    let prom_url = format!("http://127.0.0.1:{prom_port}");
    let _prom = spawn(
        Command::new("prometheus")
            .arg(format!("--config.file={}", conf.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("prom").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
            .arg("--web.enable-lifecycle"),
    );
    // 25 scrapes of each target reach Tempora.
    wait_for("25 scrapes of every target in Tempora", 120, || {
        let v = s.sql_json("public", "SELECT job, count(*) AS n FROM up GROUP BY job");
        v["rows"]
            .as_array()
            .is_some_and(|r| r.len() == 3 && r.iter().all(|row| row[1].as_i64().unwrap_or(0) >= 25))
    });
    // Stop scraping: the targets' series end with staleness markers.
    std::fs::write(&conf, config(&[], &write_to)).unwrap();
    let stopped = {
        let out = common::curl(&[
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-XPOST",
            &format!("{prom_url}/-/reload"),
        ]);
        assert_eq!(String::from_utf8_lossy(&out.stdout), "200");
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    // Every sample sent: nothing pending, nothing failed, the sent count steady.
    let mut last = -1.0;
    wait_for("remote write drained", 60, || {
        let m = get(&format!("{prom_url}/metrics"));
        let pending = exposed(&m, "prometheus_remote_storage_samples_pending").unwrap_or(1.0);
        let failed = exposed(&m, "prometheus_remote_storage_samples_failed_total").unwrap_or(0.0);
        assert_eq!(failed, 0.0, "Tempora refused samples:\n{m}");
        let sent = exposed(&m, "prometheus_remote_storage_samples_total").unwrap_or(-2.0);
        let steady = pending == 0.0 && sent == last && sent > 0.0;
        last = sent;
        steady
            && std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs_f64()
                > stopped + 3.0
    });
    let tempora_url = format!("http://{}", s.http);
    let end = stopped + 5.0;
    let windows = [
        (end - 25.0, end, "1s"),
        (end - 24.7, end, "5s"),
        (end - 30.0, end - 2.3, "7s"),
    ];
    // How many expressions had an answer (a comparison of two empty answers proves little).
    let mut answered = 0;
    for (expr, cmp) in EXPRESSIONS {
        for (start, end, step) in windows {
            let args = |url: &str| {
                vec![
                    "range".to_string(),
                    format!("--start={start:.3}"),
                    format!("--end={end:.3}"),
                    format!("--step={step}"),
                    "--".to_string(),
                    url.to_string(),
                    expr.to_string(),
                ]
            };
            let a = args(&prom_url);
            let b = args(&tempora_url);
            let want = promtool(&a.iter().map(String::as_str).collect::<Vec<_>>());
            let got = promtool(&b.iter().map(String::as_str).collect::<Vec<_>>());
            compare(&format!("{expr} [{step}]"), *cmp, &want, &got);
        }
        let at = format!("--time={:.3}", stopped - 3.2);
        let want = promtool(&["instant", &at, "--", &prom_url, expr]);
        let got = promtool(&["instant", &at, "--", &tempora_url, expr]);
        compare(&format!("{expr} (instant)"), *cmp, &want, &got);
        answered += usize::from(!points(&want).is_empty());
    }
    // The comparison itself sees a difference: labels, a value, a missing point.
    for (a, b) in [
        ("up", "up * 2"),
        ("up", "up + 0"),
        ("up", r#"up{job!="node"}"#),
    ] {
        let at = format!("--time={:.3}", stopped - 3.2);
        let want = promtool(&["instant", &at, "--", &prom_url, a]);
        let got = promtool(&["instant", &at, "--", &tempora_url, b]);
        let differs = std::panic::catch_unwind(|| compare(b, Cmp::Exact, &want, &got)).is_err();
        assert!(differs, "{a} and {b} compared equal");
    }
    // Only absent(up) and absent_over_time(nonexistent[5s])… answer nothing at that time.
    assert!(
        answered >= EXPRESSIONS.len() - 2,
        "{answered} of {} answered",
        EXPRESSIONS.len()
    );
    // A range vector as an instant query's answer, and sort_desc's order.
    for expr in [
        "up[5s]",
        "sort_desc(go_goroutines)",
        "sort(process_open_fds)",
    ] {
        let at = format!("--time={:.3}", stopped - 3.0);
        let want = promtool(&["instant", &at, "--", &prom_url, expr]);
        let got = promtool(&["instant", &at, "--", &tempora_url, expr]);
        compare(expr, Cmp::Exact, &want, &got);
        assert!(!points(&want).is_empty(), "{expr}");
        if expr.starts_with("sort") {
            let order = |v: &Value| {
                v.as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x["value"][1].as_str().unwrap().to_string())
                    .collect::<Vec<_>>()
            };
            assert_eq!(order(&want), order(&got), "{expr}: order");
        }
    }
    remote_read(&s, dir.path(), &prom_url, stopped);
    grafana_requests(&s, &prom_url, stopped);
    s.stop();
}

/// A second Prometheus, with no data of its own, reads from Tempora (remote read, recent
/// data too) and answers as the first one does.
fn remote_read(s: &Server, dir: &std::path::Path, prom_url: &str, stopped: f64) {
    let port = free_port();
    let conf = dir.join("reader.yml");
    std::fs::write(
        &conf,
        format!(
            "global:\n  scrape_interval: 1s\nremote_read:\n  - url: {}\n    read_recent: true\n",
            s.url("/api/v1/read")
        ),
    )
    .unwrap();
    let reader_url = format!("http://127.0.0.1:{port}");
    let _reader = spawn(
        Command::new("prometheus")
            .arg(format!("--config.file={}", conf.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("reader").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}")),
    );
    wait_for("the reading Prometheus is ready", 60, || {
        get(&format!("{reader_url}/-/ready")).contains("Ready")
    });
    for (expr, cmp) in [
        ("up", Cmp::Exact),
        ("prometheus_http_requests_total", Cmp::Exact),
        ("rate(node_cpu_seconds_total[10s])", Cmp::Close),
        ("sum by (job) (go_goroutines)", Cmp::Exact),
    ] {
        let args = |url: &str| {
            vec![
                "range".to_string(),
                format!("--start={:.3}", stopped - 20.0),
                format!("--end={:.3}", stopped + 5.0),
                "--step=1s".to_string(),
                "--".to_string(),
                url.to_string(),
                expr.to_string(),
            ]
        };
        let a = args(prom_url);
        let b = args(&reader_url);
        let want = promtool(&a.iter().map(String::as_str).collect::<Vec<_>>());
        let got = promtool(&b.iter().map(String::as_str).collect::<Vec<_>>());
        compare(&format!("remote read: {expr}"), cmp, &want, &got);
    }
}

/// What Grafana's Prometheus data source sends, replayed with curl: its answers have
/// Prometheus's shape and the same series and labels as Prometheus's own.
fn grafana_requests(s: &Server, prom_url: &str, stopped: f64) {
    let json = |url: String| -> Value {
        let body = get(&url);
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{url}: {e}: {body}"))
    };
    let build = json(s.url("/api/v1/status/buildinfo"));
    assert_eq!(build["data"]["version"], "2.42.0", "{build}");
    for path in [
        "/api/v1/label/job/values",
        "/api/v1/series?match%5B%5D=up",
        "/api/v1/series?match%5B%5D=%7B__name__%3D~%22go_gc.*%22%2Cjob%3D%22self%22%7D",
        "/api/v1/label/__name__/values?match%5B%5D=%7Bjob%3D%22node%22%2C__name__%3D~%22node_load.*%22%7D",
    ] {
        let want = json(format!("{prom_url}{path}"));
        let got = json(s.url(path));
        assert_eq!(got["status"], "success", "{path}: {got}");
        let sorted = |v: &Value| {
            let mut items: Vec<String> = v["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.to_string())
                .collect();
            items.sort();
            items
        };
        assert_eq!(sorted(&want), sorted(&got), "{path}");
    }
    let names = json(s.url("/api/v1/label/__name__/values"));
    let names = names["data"].as_array().unwrap();
    assert!(
        names.iter().any(|n| n == "node_cpu_seconds_total"),
        "{names:?}"
    );
    let labels = json(s.url("/api/v1/labels"));
    for l in ["__name__", "job", "instance", "mode", "le"] {
        assert!(
            labels["data"].as_array().unwrap().iter().any(|x| x == l),
            "{l} in {labels}"
        );
    }
    for path in [
        "/api/v1/metadata",
        "/api/v1/query_exemplars?query=up&start=0&end=1",
        "/api/v1/rules",
        "/api/v1/alerts",
    ] {
        assert_eq!(json(s.url(path))["status"], "success", "{path}");
    }
    // The panel query: a form POST, as Grafana sends it.
    let form = format!(
        "query=sum+by+(job)+(rate(prometheus_http_requests_total%5B10s%5D))&start={}&end={}&step=2",
        (stopped - 20.0) as i64,
        stopped as i64
    );
    let (code, body) = common::post_args(
        &s.url("/api/v1/query_range"),
        &[
            "-H",
            "Content-Type: application/x-www-form-urlencoded",
            "--data",
            &form,
        ],
    );
    assert_eq!(code, "200", "{body}");
    let got: Value = serde_json::from_str(&body).unwrap();
    let (_, body) = common::post_args(
        &format!("{prom_url}/api/v1/query_range"),
        &[
            "-H",
            "Content-Type: application/x-www-form-urlencoded",
            "--data",
            &form,
        ],
    );
    let want: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(got["data"]["resultType"], "matrix");
    compare(
        "grafana panel",
        Cmp::Close,
        &want["data"]["result"],
        &got["data"]["result"],
    );
    // Errors in Prometheus's shape.
    for (path, code, kind) in [
        ("/api/v1/query?query=sum(", "400", "bad_data"),
        (
            "/api/v1/query_range?query=up&start=10&end=0&step=1",
            "400",
            "bad_data",
        ),
        (
            "/api/v1/query_range?query=up&start=0&end=100000&step=1",
            "400",
            "bad_data",
        ),
        (
            "/api/v1/query?query=up%5B5m%5D%5B1m:10s%5D",
            "400",
            "bad_data",
        ),
        ("/api/v1/series", "400", "bad_data"),
        // Numbers of seconds the parser crate would panic on (issue 26's fuzz finding).
        ("/api/v1/query?query=up%20offset%201e400", "400", "bad_data"),
        ("/api/v1/query?query=rate(up%5B1e400%5D)", "400", "bad_data"),
        (
            "/api/v1/query_range?query=up%20offset%20-Inf&start=0&end=60&step=15",
            "400",
            "bad_data",
        ),
    ] {
        let (c, body) = common::curl_status(&[&s.url(path)]);
        assert_eq!(c, code, "{path}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            (v["status"].as_str(), v["errorType"].as_str()),
            (Some("error"), Some(kind)),
            "{path}: {body}"
        );
    }
    assert!(s.healthy());
}
