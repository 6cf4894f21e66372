#!/usr/bin/env python3
"""Benchmark report: markdown tables and PNG charts from JSON-lines result files.

    python3 bench/report.py RESULTS.jsonl [MORE.jsonl ...] --out-dir docs/bench \\
        --markdown docs/bench/report.md [--title "..."] [--commands COMMANDS.txt] [--pick quietest]
    python3 bench/report.py RESULTS.jsonl --out-dir docs/bench --markdown docs/benchmarks.md --into

Writes, into --out-dir, one PNG per chart that has data (a chart without data is skipped):

  ingest.png            ingest rows/s per system: median over runs, min-max as error bars
  ingest_over_time.png  ingest rows/s over time, one line per run that has "samples"
  query_latency.png     query latency per query type, one bar per system: mean, p99 marked; log y
  bytes_per_value.png   bytes per stored value per system ("storage" records)
  memory.png            resident memory (MiB) over time, one panel per phase, one line per system
  compression.png       bytes per value per data set and system ("compression" records)

and the markdown file given by --markdown (with --into, only the part of that file between the
lines `<!-- report.py: begin -->` and `<!-- report.py: end -->`, its headings one level down): machine and versions, the commands (--commands FILE,
verbatim), one table per kind with a ratio against Tempora (--baseline, default "tempora") in
each, and links to the charts relative to the markdown file. Every ratio is written so that
> 1 means Tempora does better (faster, smaller, less memory).

Input schema. This docstring is the one place it is written down; the scripts that write results
follow it. Each line of a results file is a JSON object; blank lines are skipped. "kind" says what
the line is; a line without "kind" is a "query" line (bench/tsbs_queries.py writes those).
Fields marked * are required (a line without them is malformed); the others are optional, and
an optional field that is null counts as absent. Fields not listed here are kept and ignored.

  kind "query": one (system, query type) timing, as bench/tsbs_queries.py --json-out writes it
    system*            str    "tempora", "tempora-http", "questdb", "duckdb", ...
    query_type*        str    a TSBS cpu-only query type: "lastpoint", "double-groupby-1", ...
    mean_ms*, p99_ms*  number milliseconds, wall time on the client (not required if "error")
    min_ms, median_ms, max_ms  number
    runs               int    timed runs
    error              str    the query type failed; shown as ERROR, left out of the chart
    spelling           str    how the time bucket was written (bench/tsbs_queries.py's SPELLINGS:
                              "date_trunc", "date_bin", "sample_by", ...; "native" for a system
                              with its own dialect). Absent: the older "bucket" field, else
                              date_trunc (standard-SQL systems) or native (tsbs_queries.spelling_of)
    digest, note, when, seed, scale, cpu_other_pct, ...   kept, not all shown
    Several lines for one (system, query type): the last is used, or with --pick quietest the
    one with the least CPU used by other processes (bench/tsbs_queries.py's pick_records). The
    side-by-side table and chart take the default spelling (date_trunc or native) of each pair,
    another only where the pair has none; a system measured in several spellings also gets a
    "Bucket spellings" table: per query type, each spelling's mean and its ratio to the fastest
    spelling of that type (issue 21's bound: 1.2).

  kind "ingest": one ingest run
    system*            str
    rows_per_s*        number rows per second over the run
    rows, values       int    rows and field values written
    seconds            number wall time of the run
    values_per_s       number
    workers, batch     int    client connections, rows per request
    gzip               bool   request bodies gzip-compressed
    dataset            str    e.g. "cpu-only 100 hosts x 1 d"
    run                int    1-based run number
    samples            list of {"t_s": number, "rows_per_s": number}: throughput over time
    Runs of one (dataset, system, workers, batch, gzip) are one group: median, min and max.

  kind "storage": size on disk after a load (and compaction)
    system*            str
    bytes_per_value*   number bytes on disk / values
    dataset            str
    bytes              int    bytes on disk
    values             int    field values stored

  kind "memory": resident memory of a server over time
    system*            str
    phase*             str    "load", "query" or "idle"
    samples*           list of {"t_s": number, "rss_bytes": int}, at least one
    The report derives peak (largest rss_bytes) and steady (median of the later half of the
    samples, in time order).

  kind "compression": one data set stored by one system
    dataset*           str    e.g. "pvlib TMY3", "flights 3M"
    system*            str
    bytes_per_value*   number
    bytes              int    bytes stored
    values             int    field values stored
    source_bytes       int    size of the input file
    rows               int    rows in the data set

  kind "machine": where the figures were taken (the last such line is used)
    cpu                str    CPU model
    cores              int
    mem_bytes          int
    os, kernel, when   str
    versions           object {system: version string}

Lines of any other kind are reported on stderr and ignored. A line that is not a JSON object or
lacks a required field (or has one of the wrong type) stops the report with exit status 1 and a
message "FILE:LINE: ...".
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import textwrap
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tsbs_queries  # noqa: E402  (same directory: QUERY_TYPES, SYSTEMS, pick_records)

KINDS = ("query", "ingest", "storage", "memory", "compression", "machine")
NUM, STR, LIST, BOOL, DICT = "a number", "a string", "a list", "a boolean", "an object"
REQUIRED = {  # kind -> {field: type}
    "query": {"system": STR, "query_type": STR},
    "ingest": {"system": STR, "rows_per_s": NUM},
    "storage": {"system": STR, "bytes_per_value": NUM},
    "memory": {"system": STR, "phase": STR, "samples": LIST},
    "compression": {"dataset": STR, "system": STR, "bytes_per_value": NUM},
    "machine": {},
}
OPTIONAL = {  # kind -> {field: type}, checked when present
    "query": {"runs": NUM, "mean_ms": NUM, "p99_ms": NUM, "error": STR, "spelling": STR},
    "ingest": {"dataset": STR, "run": NUM, "values_per_s": NUM, "rows": NUM, "values": NUM,
               "seconds": NUM, "workers": NUM, "batch": NUM, "gzip": BOOL},
    "storage": {"dataset": STR, "bytes": NUM, "values": NUM},
    "memory": {},
    "compression": {"bytes": NUM, "values": NUM, "source_bytes": NUM, "rows": NUM},
    "machine": {"cores": NUM, "mem_bytes": NUM, "versions": DICT},
}
SAMPLE_FIELDS = {"ingest": ("t_s", "rows_per_s"), "memory": ("t_s", "rss_bytes")}
CHART_FILES = {
    "ingest": "ingest.png",
    "ingest_over_time": "ingest_over_time.png",
    "query": "query_latency.png",
    "storage": "bytes_per_value.png",
    "memory": "memory.png",
    "compression": "compression.png",
}
MIB = 1 << 20


class ResultError(Exception):
    """A malformed results line; the message starts with FILE:LINE."""


@dataclass
class Results:
    by_kind: dict = field(default_factory=lambda: {k: [] for k in KINDS})
    files: list = field(default_factory=list)


# ------------------------------------------------------------------ reading

def is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def type_ok(value, kind: str) -> bool:
    if kind == NUM:
        return is_number(value)
    if kind == STR:
        return isinstance(value, str)
    if kind == BOOL:
        return isinstance(value, bool)
    return isinstance(value, dict if kind == DICT else list)


def check_samples(rec: dict, kind: str, where: str):
    names = SAMPLE_FIELDS[kind]
    samples = rec.get("samples")
    if samples is None and kind == "ingest":
        return
    if not isinstance(samples, list) or (kind == "memory" and not samples):
        raise ResultError(f"{where}: \"samples\" must be a non-empty list")
    for i, s in enumerate(samples):
        if not isinstance(s, dict) or not all(is_number(s.get(n)) for n in names):
            raise ResultError(f"{where}: samples[{i}] must be an object with numbers {', '.join(names)}")


def check_record(rec: dict, kind: str, where: str):
    """Raises ResultError when a required field is missing or of the wrong type."""
    required = dict(REQUIRED[kind])
    if kind == "query" and "error" not in rec:
        required.update(mean_ms=NUM, p99_ms=NUM)
    for name in required:
        if name not in rec:
            raise ResultError(f"{where}: {kind} line without \"{name}\"")
    for name, t in {**OPTIONAL[kind], **required}.items():
        if name in rec and not type_ok(rec[name], t):
            raise ResultError(f"{where}: \"{name}\" must be {t}, not {json.dumps(rec[name])[:40]}")
    if kind in SAMPLE_FIELDS:
        check_samples(rec, kind, where)


def parse_line(text: str, where: str) -> dict:
    try:
        rec = json.loads(text)
    except json.JSONDecodeError as e:
        raise ResultError(f"{where}: not JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(rec, dict):
        raise ResultError(f"{where}: not a JSON object")
    kind = rec.setdefault("kind", "query")
    if kind in KINDS:
        for name in OPTIONAL[kind]:  # an optional field that is null counts as absent
            if name in rec and rec[name] is None:
                del rec[name]
        check_record(rec, kind, where)
    return rec


def read_file(path: str, results: Results, warn):
    unknown: dict = {}  # kind -> (count, first line)
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        raise ResultError(f"{path}: {e.strerror}") from None
    with f:
        for lineno, text in enumerate(f, 1):
            if not text.strip():
                continue
            rec = parse_line(text, f"{path}:{lineno}")
            kind = rec["kind"]
            if kind in KINDS:
                results.by_kind[kind].append(rec)
            else:
                n, first = unknown.get(kind, (0, lineno))
                unknown[kind] = (n + 1, first)
    for kind, (n, first) in unknown.items():
        warn(f"{path}:{first}: unknown kind {json.dumps(kind)} ignored ({n} line{'s' * (n != 1)})")


def read_results(paths: list[str], warn) -> Results:
    results = Results(files=list(paths))
    for p in paths:
        read_file(p, results, warn)
    return results


# ------------------------------------------------------------------ formatting

def fmt_int(v) -> str:
    """Thousands separators, no decimals: 1,234,567."""
    return f"{v:,.0f}"


def fmt_sig(v, digits: int = 3) -> str:
    """At least `digits` significant digits, integer digits never dropped: 0.0123, 5.45, 28.3, 1,235."""
    if v == 0 or not math.isfinite(v):
        return f"{v:g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(v))))
    return f"{v:,.{decimals}f}"


def fmt_ratio(v) -> str:
    return "-" if v is None else f"{v:.2f}"


def fmt_bpv(v) -> str:
    return f"{v:.2f}"


def fmt_mib(n_bytes) -> str:
    return f"{n_bytes / MIB:,.1f}"


def fmt_opt(rec: dict, key: str, fmt=str) -> str:
    v = rec.get(key)
    return "-" if v is None else fmt(v)


def ratio(num, den):
    """num / den, or None when either is missing or den is 0."""
    if num is None or den is None or den == 0:
        return None
    return num / den


def md_table(header: list[str], rows: list[list[str]]) -> str:
    esc = lambda c: str(c).replace("|", "\\|")  # noqa: E731
    lines = ["| " + " | ".join(esc(h) for h in header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def code_block(text: str) -> str:
    """A fenced block that holds `text` verbatim, whatever backticks it contains."""
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text.rstrip(chr(10))}\n{fence}"


# ------------------------------------------------------------------ ordering and grouping

def system_order(names, baseline: str) -> list[str]:
    """Baseline first, then bench/tsbs_queries.py's SYSTEMS order, then the rest as they come."""
    seen = list(dict.fromkeys(names))
    known = tsbs_queries.SYSTEMS

    def key(s):
        return (s != baseline, known.index(s) if s in known else len(known), seen.index(s))
    return sorted(seen, key=key)


def query_type_order(names) -> list[str]:
    seen = list(dict.fromkeys(names))
    known = tsbs_queries.QUERY_TYPES
    return sorted(seen, key=lambda q: (known.index(q) if q in known else len(known), seen.index(q)))


def last_by(records: list[dict], key) -> dict:
    """The last record for each key(record), in first-seen key order."""
    out: dict = {}
    for r in records:
        out[key(r)] = r
    return out


def ingest_config(r: dict) -> tuple:
    return (r.get("workers"), r.get("batch"), r.get("gzip"))


def ingest_groups(records: list[dict]) -> dict:
    """(dataset, system, workers, batch, gzip) -> list of runs, in first-seen order."""
    groups: dict = {}
    for r in records:
        groups.setdefault((r.get("dataset", ""), r["system"]) + ingest_config(r), []).append(r)
    return groups


def ingest_summary(runs: list[dict]) -> dict:
    rates = [r["rows_per_s"] for r in runs]
    vps = [r["values_per_s"] for r in runs if is_number(r.get("values_per_s"))]
    return {"runs": len(runs), "median": statistics.median(rates), "min": min(rates), "max": max(rates),
            "values_median": statistics.median(vps) if vps else None}


def ingest_baseline(groups: dict, key: tuple, baseline: str):
    """The baseline group to compare `key` with: same data set and client settings, else the
    only baseline group of that data set."""
    same = (key[0], baseline) + key[2:]
    if same in groups:
        return same
    candidates = [k for k in groups if k[0] == key[0] and k[1] == baseline]
    return candidates[0] if len(candidates) == 1 else None


def memory_stats(rec: dict) -> dict:
    samples = sorted(rec["samples"], key=lambda s: s["t_s"])
    rss = [s["rss_bytes"] for s in samples]
    later = rss[len(rss) // 2:]
    return {"n": len(rss), "seconds": samples[-1]["t_s"] - samples[0]["t_s"], "peak": max(rss),
            "steady": statistics.median(later)}


def distinct_labels(parts: list[tuple], wrap: int = 18) -> list[str]:
    """One label per tuple of parts: the first part and the parts that differ between tuples,
    one per line, long ones wrapped."""
    if not parts:
        return []
    varies = [i == 0 or len({p[i] for p in parts}) > 1 for i in range(len(parts[0]))]
    return ["\n".join(textwrap.fill(str(v), wrap) for v, keep in zip(p, varies) if keep and v)
            for p in parts]


def config_parts(cfg: tuple) -> tuple:
    """("4 workers", "batch 5000", "gzip"); "" for what is not known."""
    workers, batch, gz = cfg
    return (f"{workers} workers" if workers is not None else "", f"batch {batch}" if batch is not None else "",
            {True: "gzip", False: "no gzip"}.get(gz, ""))


def config_text(cfg: tuple) -> str:
    return ", ".join(b for b in config_parts(cfg) if b)


# ------------------------------------------------------------------ markdown sections

def machine_section(records: list[dict]) -> str:
    if not records:
        return "## Machine\n\nNo machine line in the results."
    m = records[-1]
    rows = [["CPU", fmt_opt(m, "cpu")], ["cores", fmt_opt(m, "cores")],
            ["memory", fmt_opt(m, "mem_bytes", lambda b: f"{b / (1 << 30):,.1f} GiB")],
            ["OS", fmt_opt(m, "os")], ["kernel", fmt_opt(m, "kernel")], ["measured", fmt_opt(m, "when")]]
    out = "## Machine\n\n" + md_table(["", ""], rows)
    versions = m.get("versions") or {}
    if versions:
        out += "\n\n### Versions\n\n" + md_table(["system", "version"], [[s, v] for s, v in versions.items()])
    return out


def commands_section(text: str | None) -> str:
    if text is None:
        return ""
    return "## Commands\n\n" + code_block(text)


def image_link(charts: dict, key: str, md_dir: str, alt: str) -> str:
    if key not in charts:
        return ""
    rel = os.path.relpath(charts[key], md_dir).replace(os.sep, "/")
    return f"\n\n![{alt}]({rel})"


def query_cell(r: dict | None) -> str:
    if r is None:
        return "-"
    if "error" in r:
        return "ERROR"
    return f"{fmt_sig(r['mean_ms'])} / {fmt_sig(r['p99_ms'])}"


def query_ratio(r: dict | None, base: dict | None) -> str:
    ok = lambda x: x is not None and "error" not in x  # noqa: E731
    return fmt_ratio(ratio(r["mean_ms"], base["mean_ms"]) if ok(r) and ok(base) else None)


def query_rows(latest: dict, systems: list[str], qts: list[str], baseline: str) -> list[list[str]]:
    peers = [s for s in systems if s != baseline]
    rows = []
    for q in qts:
        base = latest.get((baseline, q))
        rows.append([q] + [query_cell(latest.get((s, q))) for s in systems]
                    + [query_ratio(latest.get((s, q)), base) for s in peers])
    return rows


def query_section(records: list[dict], baseline: str, pick: str) -> str:
    latest = tsbs_queries.pick_records(records, pick)
    systems = system_order([s for s, _ in latest], baseline)
    qts = query_type_order([q for _, q in latest])
    peers = [s for s in systems if s != baseline]
    header = ["query type"] + systems + [f"{s} ÷ {baseline}" for s in peers]
    runs = sorted({r["runs"] for r in latest.values() if is_number(r.get("runs"))})
    when = sorted(r["when"] for r in latest.values() if isinstance(r.get("when"), str))
    text = (f"Mean / p99 in ms, wall time on the client ({'/'.join(map(str, runs)) or '?'} runs each"
            + (f", measured {when[0]} to {when[-1]}" if when else "") + "). "
            f"Ratio: peer mean ÷ {baseline} mean, > 1 means {baseline} is faster.\n\n")
    text += md_table(header, query_rows(latest, systems, qts, baseline))
    errors = [f"- {r['system']} {r['query_type']}: {r['error']}" for r in latest.values() if "error" in r]
    return "## Query latency\n\n" + text + ("\n\nErrors:\n\n" + "\n".join(errors) if errors else "")


def spelling_section(records: list[dict], baseline: str, pick: str) -> str:
    """Per system measured in several spellings: per query type, each spelling's mean (ms) and
    its ratio to the fastest spelling of the type, the worst ratio, and whether every spelling
    returned the same rows. Empty when no system has several spellings."""
    matrix = tsbs_queries.spelling_matrix(records, pick)
    if not matrix:
        return ""
    limit = tsbs_queries.SPELLING_LIMIT
    text = ("## Bucket spellings\n\nThe bucketed query types written in each spelling of the time bucket "
            "(`bench/tsbs_queries.py --spelling`; lastpoint and high-cpu-* are one text in every spelling). "
            f"Mean in ms (its ratio to the fastest spelling of the query type; **bold** above {limit}). "
            "Rows: whether every spelling returned the same rows (result digest).")
    for system in system_order(matrix, baseline):
        by_type = matrix[system]
        spellings = [sp for sp in list(tsbs_queries.SPELLINGS) + [tsbs_queries.NATIVE_SPELLING]
                     if any(sp in by for by in by_type.values())]
        rows, over, pairs = [], 0, 0
        for q in query_type_order(by_type):
            by = by_type[q]
            ratios = tsbs_queries.spelling_ratios(by)
            cells = []
            for sp in spellings:
                r = by.get(sp)
                if r is None:
                    cells.append("-")
                elif "error" in r:
                    cells.append("ERROR")
                else:
                    x = ratios.get(sp)
                    xs = f"{x:.2f}" if x else "?"
                    cells.append(f"{fmt_sig(r['mean_ms'])} ({'**' + xs + '**' if x and x > limit else xs})")
                    pairs += 1
                    over += bool(x and x > limit)
            worst = max(ratios.values(), default=None)
            rows.append([q] + cells + [fmt_ratio(worst), tsbs_queries.spelling_rows_agree(by)])
        text += (f"\n\n### {system}\n\n{over} of {pairs} (query type, spelling) pairs above {limit}x the "
                 "fastest spelling.\n\n" + md_table(["query type"] + spellings + ["worst", "rows"], rows))
        errors = [f"- {q} {sp}: {r['error']}" for q, by in by_type.items() for sp, r in by.items() if "error" in r]
        if errors:
            text += "\n\nErrors:\n\n" + "\n".join(errors)
    return text


def ingest_rows(groups: dict, baseline: str) -> list[list[str]]:
    summaries = {k: ingest_summary(v) for k, v in groups.items()}
    rows = []
    for key, s in summaries.items():
        base_key = ingest_baseline(groups, key, baseline)
        r = "baseline" if key == base_key else fmt_ratio(
            ratio(summaries[base_key]["median"], s["median"]) if base_key else None)
        rows.append([key[0] or "-", key[1], config_text(key[2:]) or "-", str(s["runs"]),
                     fmt_int(s["median"]), f"{fmt_int(s['min'])}–{fmt_int(s['max'])}",
                     fmt_int(s["values_median"]) if s["values_median"] is not None else "-", r])
    return rows


def sort_by_dataset_system(keys, baseline: str) -> list:
    order = system_order([k[1] for k in keys], baseline)
    datasets = list(dict.fromkeys(k[0] for k in keys))
    return sorted(keys, key=lambda k: (datasets.index(k[0]), order.index(k[1])))


def ingest_section(records: list[dict], baseline: str) -> str:
    groups = ingest_groups(records)
    groups = {k: groups[k] for k in sort_by_dataset_system(list(groups), baseline)}
    header = ["data set", "system", "client", "runs", "rows/s (median)", "rows/s min–max",
              "values/s (median)", f"{baseline} ÷ peer"]
    text = (f"Rows per second, median over the runs. Ratio: {baseline} median ÷ peer median "
            f"(same data set and client settings), > 1 means {baseline} is faster.\n\n")
    return "## Ingest\n\n" + text + md_table(header, ingest_rows(groups, baseline))


def size_rows(latest: dict, baseline: str, extra) -> list[list[str]]:
    """Rows of the storage and compression tables; extra(rec) gives the kind's own columns."""
    rows = []
    for (dataset, system), r in latest.items():
        base = latest.get((dataset, baseline))
        rr = "baseline" if system == baseline else fmt_ratio(
            ratio(r["bytes_per_value"], base["bytes_per_value"]) if base else None)
        rows.append([dataset or "-", system] + extra(r) + [fmt_bpv(r["bytes_per_value"]), rr])
    return rows


def latest_sizes(records: list[dict], baseline: str) -> dict:
    latest = last_by(records, lambda r: (r.get("dataset", ""), r["system"]))
    return {k: latest[k] for k in sort_by_dataset_system(list(latest), baseline)}


def storage_section(records: list[dict], baseline: str) -> str:
    extra = lambda r: [fmt_opt(r, "bytes", fmt_mib), fmt_opt(r, "values", fmt_int)]  # noqa: E731
    header = ["data set", "system", "on disk MiB", "values", "bytes/value", f"peer ÷ {baseline}"]
    text = (f"Size on disk after the load. Ratio: peer bytes/value ÷ {baseline} bytes/value, "
            f"> 1 means {baseline} is smaller.\n\n")
    return "## Bytes per value\n\n" + text + md_table(header, size_rows(latest_sizes(records, baseline),
                                                                          baseline, extra))


def compression_extra(r: dict) -> list[str]:
    shrink = ratio(r.get("source_bytes"), r.get("bytes"))
    return [fmt_opt(r, "rows", fmt_int), fmt_opt(r, "source_bytes", fmt_mib), fmt_opt(r, "bytes", fmt_mib),
            "-" if shrink is None else f"{shrink:.2f}"]


def compression_section(records: list[dict], baseline: str) -> str:
    header = ["data set", "system", "rows", "source MiB", "stored MiB", "source ÷ stored", "bytes/value",
              f"peer ÷ {baseline}"]
    text = (f"Real data sets. Ratio: peer bytes/value ÷ {baseline} bytes/value on the same data set, "
            f"> 1 means {baseline} is smaller.\n\n")
    rows = size_rows(latest_sizes(records, baseline), baseline, compression_extra)
    return "## Compression\n\n" + text + md_table(header, rows)


def latest_memory(records: list[dict], baseline: str) -> dict:
    latest = last_by(records, lambda r: (r["phase"], r["system"]))
    phases = phase_order([p for p, _ in latest])
    systems = system_order([s for _, s in latest], baseline)
    keys = sorted(latest, key=lambda k: (phases.index(k[0]), systems.index(k[1])))
    return {k: memory_stats(latest[k]) for k in keys}


def phase_order(names) -> list[str]:
    known = ["load", "query", "idle"]
    seen = list(dict.fromkeys(names))
    return sorted(seen, key=lambda p: (known.index(p) if p in known else len(known), seen.index(p)))


def memory_rows(stats: dict, baseline: str) -> list[list[str]]:
    rows = []
    for (phase, system), st in stats.items():
        base = stats.get((phase, baseline))
        if system == baseline:
            ratios = ["baseline", "baseline"]
        else:
            ratios = [fmt_ratio(ratio(st[k], base[k]) if base else None) for k in ("peak", "steady")]
        rows.append([phase, system, str(st["n"]), fmt_sig(st["seconds"]), fmt_mib(st["peak"]),
                     fmt_mib(st["steady"])] + ratios)
    return rows


def memory_section(records: list[dict], baseline: str) -> str:
    header = ["phase", "system", "samples", "seconds", "peak MiB", "steady MiB",
              f"peak: peer ÷ {baseline}", f"steady: peer ÷ {baseline}"]
    text = (f"Resident set size. Steady: median of the later half of the samples. Ratio: peer ÷ "
            f"{baseline} in the same phase, > 1 means {baseline} uses less memory.\n\n")
    return "## Memory\n\n" + text + md_table(header, memory_rows(latest_memory(records, baseline), baseline))


# ------------------------------------------------------------------ charts

def require_matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("report.py: matplotlib is required for the charts: python3 -m pip install matplotlib "
                         "(scripts/test-deps.sh installs it)") from None
    matplotlib.use("Agg")  # never a display, even if something else imports pyplot


def new_figure(width: float = 8.0, height: float = 4.5, ncols: int = 1):
    """A figure not registered with pyplot (no global figure list); PNG through Agg."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    axes = fig.subplots(1, ncols, sharey=True, squeeze=False)[0]
    return fig, list(axes)


def save(fig, path: str) -> str:
    fig.savefig(path, format="png", metadata={"Software": None})
    return path


def outside_legend(fig, ax, handles=None, names=None):
    """The legend right of the plot, where it cannot hide bars or lines."""
    if handles is None:
        handles, names = ax.get_legend_handles_labels()
    fig.legend(handles, names, loc="outside right upper", fontsize=8)


def merged_legend(axes) -> tuple[list, list]:
    """Legend entries of several panels, each name once."""
    entries: dict = {}
    for ax in axes:
        for h, n in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(n, h)
    return list(entries.values()), list(entries)


def palette(systems: list[str]) -> dict:
    from matplotlib import colormaps
    colors = colormaps["tab10"].colors
    return {s: colors[i % len(colors)] for i, s in enumerate(systems)}


def log_axis_labels(ax):
    """Ticks at 1, 2, 5 times powers of ten, written as plain numbers (0.5, 2, 20, 500)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def thousands_axis(ax):
    from matplotlib.ticker import FuncFormatter
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))


def grouped_bars(ax, groups: list, systems: list[str], value, colors: dict, label_fmt=None, names=None):
    """One cluster of bars per group (tick label: names[i], else the group), one bar per system
    with value(group, system) not None, side by side and centred on the tick (no gaps for
    missing systems). Returns {(group, system): (x, width)}."""
    present = [[s for s in systems if value(g, s) is not None] for g in groups]
    width = 0.8 / max([1] + [len(p) for p in present])
    placed = {}
    for i, (g, here) in enumerate(zip(groups, present)):
        left = i - width * len(here) / 2
        for j, s in enumerate(here):
            placed[(g, s)] = (left + width * (j + 0.5), width)
    for s in systems:
        pts = [(placed[(g, s)][0], value(g, s)) for g in groups if (g, s) in placed]
        if pts:
            bars = ax.bar([x for x, _ in pts], [h for _, h in pts], width, label=s, color=colors[s])
            if label_fmt:
                ax.bar_label(bars, labels=[label_fmt(h) for _, h in pts], fontsize=8, padding=2)
    ax.set_xticks(range(len(groups)), names or groups)
    return placed


def chart_ingest(records: list[dict], baseline: str, colors: dict, path: str) -> str:
    groups = ingest_groups(records)
    keys = sort_by_dataset_system(list(groups), baseline)
    sums = [ingest_summary(groups[k]) for k in keys]
    labels = distinct_labels([(k[1], k[0]) + config_parts(k[2:]) for k in keys])
    fig, (ax,) = new_figure(max(6.0, 1.5 * len(keys) + 2), 4.5)
    med = [s["median"] for s in sums]
    err = [[s["median"] - s["min"] for s in sums], [s["max"] - s["median"] for s in sums]]
    bars = ax.bar(range(len(keys)), med, 0.6, yerr=err, capsize=6, color=[colors[k[1]] for k in keys])
    ax.bar_label(bars, labels=[fmt_int(m) for m in med], fontsize=9, color="white", fontweight="bold",
                 label_type="center")
    ax.set_xticks(range(len(keys)), labels)
    ax.set_ylabel("rows/s")
    thousands_axis(ax)
    lo, hi = min(s["runs"] for s in sums), max(s["runs"] for s in sums)
    ax.set_title(f"Ingest throughput: median of {lo if lo == hi else f'{lo}–{hi}'} runs, error bars min–max")
    ax.grid(axis="y", alpha=0.3)
    return save(fig, path)


def time_axis(longest_s: float) -> tuple[float, str]:
    """(divisor for seconds, axis label): minutes past 10 minutes, else seconds."""
    return (60.0, "time since start (min)") if longest_s > 600 else (1.0, "time since start (s)")


def run_label(r: dict, many_datasets: bool) -> str:
    bits = [r["system"]] + ([r.get("dataset", "")] if many_datasets else [])
    bits += [f"run {r['run']}"] if "run" in r else []
    return ", ".join(b for b in bits if b)


def chart_ingest_over_time(records: list[dict], colors: dict, path: str) -> str | None:
    runs = [r for r in records if r.get("samples")]
    if not runs:
        return None
    scale, xlabel = time_axis(max(s["t_s"] for r in runs for s in r["samples"]))
    many = len({r.get("dataset", "") for r in runs}) > 1
    fig, (ax,) = new_figure(9.0, 4.5)
    styles, drawn = ["-", "--", ":", "-."], {}  # several runs of one system: one line style each
    for r in runs:
        pts = sorted(r["samples"], key=lambda s: s["t_s"])
        xs = [s["t_s"] / scale for s in pts]
        nth = drawn[r["system"]] = drawn.get(r["system"], -1) + 1
        ax.plot(xs, [s["rows_per_s"] for s in pts], styles[nth % len(styles)],
                color=colors[r["system"]], label=run_label(r, many), linewidth=1.2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("rows/s")
    ax.set_ylim(bottom=0)
    thousands_axis(ax)
    ax.set_title("Ingest throughput over time")
    ax.grid(alpha=0.3)
    outside_legend(fig, ax)
    return save(fig, path)


def chart_query_latency(records: list[dict], baseline: str, pick: str, colors: dict, path: str) -> str | None:
    from matplotlib.lines import Line2D
    latest = {k: r for k, r in tsbs_queries.pick_records(records, pick).items() if "error" not in r}
    if not latest:
        return None
    systems = system_order([s for s, _ in latest], baseline)
    qts = query_type_order([q for _, q in latest])
    fig, (ax,) = new_figure(max(8.0, 0.35 * len(qts) * len(systems) + 3), 5.0)
    value = lambda q, s: latest[(s, q)]["mean_ms"] if (s, q) in latest else None  # noqa: E731
    placed = grouped_bars(ax, qts, systems, value, colors)
    for (q, s), (x, w) in placed.items():
        ax.hlines(latest[(s, q)]["p99_ms"], x - w / 2, x + w / 2, colors="black", linewidth=1.5)
    ax.set_yscale("log")
    log_axis_labels(ax)
    ax.set_ylabel("ms (log scale)")
    ax.set_title("Query latency per query type: bar = mean, black line = p99")
    ax.tick_params(axis="x", labelrotation=20)
    for lbl in ax.get_xticklabels():
        lbl.set_horizontalalignment("right")
    ax.grid(axis="y", which="both", alpha=0.25)
    handles, names = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], color="black", linewidth=1.5))
    outside_legend(fig, ax, handles, names + ["p99"])
    ax.margins(y=0.15)
    return save(fig, path)


def chart_sizes(records: list[dict], baseline: str, colors: dict, path: str, title: str) -> str:
    """bytes/value, one cluster per data set, one bar per system (storage and compression)."""
    latest = latest_sizes(records, baseline)
    datasets = list(dict.fromkeys(d for d, _ in latest))
    systems = system_order([s for _, s in latest], baseline)
    fig, (ax,) = new_figure(max(6.0, 0.9 * len(latest) + 2), 4.5)
    value = lambda d, s: latest[(d, s)]["bytes_per_value"] if (d, s) in latest else None  # noqa: E731
    grouped_bars(ax, datasets, systems, value, colors, fmt_bpv, names=[d or "(no data set)" for d in datasets])
    sizes = [r["bytes_per_value"] for r in latest.values() if r["bytes_per_value"] > 0]
    if sizes and max(sizes) / min(sizes) > 50:  # one tall bar would flatten the rest
        ax.set_yscale("log")
        log_axis_labels(ax)
    ax.set_ylabel("bytes per value")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.margins(y=0.12)
    outside_legend(fig, ax)
    return save(fig, path)


def chart_memory(records: list[dict], baseline: str, colors: dict, path: str) -> str:
    latest = last_by(records, lambda r: (r["phase"], r["system"]))
    phases = phase_order([p for p, _ in latest])
    systems = system_order([s for _, s in latest], baseline)
    fig, axes = new_figure(max(6.0, 4.2 * len(phases)), 4.5, ncols=len(phases))
    for ax, phase in zip(axes, phases):
        here = [latest[(phase, s)] for s in systems if (phase, s) in latest]
        scale, xlabel = time_axis(max(p["t_s"] for r in here for p in r["samples"]))
        for r in here:
            pts = sorted(r["samples"], key=lambda p: p["t_s"])
            ax.plot([p["t_s"] / scale for p in pts], [p["rss_bytes"] / MIB for p in pts],
                    color=colors[r["system"]], label=r["system"])
        ax.set_title(f"phase: {phase}")
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    # Once, after every line is drawn: the panels share the y axis, and a limit set inside the
    # loop would freeze it at the first panel's range.
    axes[0].set_ylim(bottom=0)
    axes[0].set_ylabel("resident memory (MiB)")
    outside_legend(fig, axes[0], *merged_legend(axes))
    fig.suptitle("Server memory over time")
    return save(fig, path)


def warn_stale(out_dir: str, charts: dict, warn):
    """A chart file left from an earlier run whose data is not in these results: say so (it is
    not linked from the report; it is not deleted either, --out-dir may hold other files)."""
    for key, name in CHART_FILES.items():
        if key not in charts and os.path.exists(os.path.join(out_dir, name)):
            warn(f"{os.path.join(out_dir, name)}: no data for it in these results; old file left as it is")


def write_charts(results: Results, out_dir: str, baseline: str, pick: str) -> dict:
    """Writes the charts that have data; returns {chart key: path}."""
    require_matplotlib()
    os.makedirs(out_dir, exist_ok=True)
    k = results.by_kind
    all_systems = [r["system"] for kind in ("query", "ingest", "storage", "memory", "compression")
                   for r in k[kind]]
    colors = palette(system_order(all_systems, baseline))
    p = {key: os.path.join(out_dir, name) for key, name in CHART_FILES.items()}
    charts = {}
    if k["ingest"]:
        charts["ingest"] = chart_ingest(k["ingest"], baseline, colors, p["ingest"])
        charts["ingest_over_time"] = chart_ingest_over_time(k["ingest"], colors, p["ingest_over_time"])
    if k["query"]:
        charts["query"] = chart_query_latency(k["query"], baseline, pick, colors, p["query"])
    if k["storage"]:
        charts["storage"] = chart_sizes(k["storage"], baseline, colors, p["storage"],
                                        "Bytes per value on disk (lower is better)")
    if k["memory"]:
        charts["memory"] = chart_memory(k["memory"], baseline, colors, p["memory"])
    if k["compression"]:
        charts["compression"] = chart_sizes(k["compression"], baseline, colors, p["compression"],
                                            "Bytes per value on real data sets (lower is better)")
    return {key: path for key, path in charts.items() if path}


# ------------------------------------------------------------------ the report

def kind_sections(results: Results, charts: dict, md_dir: str, baseline: str, pick: str) -> list[str]:
    k = results.by_kind
    link = lambda key, alt: image_link(charts, key, md_dir, alt)  # noqa: E731
    out = []
    if k["ingest"]:
        out.append(ingest_section(k["ingest"], baseline) + link("ingest", "ingest rows/s per system")
                   + link("ingest_over_time", "ingest rows/s over time"))
    if k["query"]:
        out.append(query_section(k["query"], baseline, pick) + link("query", "query latency per query type"))
        spellings = spelling_section(k["query"], baseline, pick)
        if spellings:
            out.append(spellings)
    if k["storage"]:
        out.append(storage_section(k["storage"], baseline) + link("storage", "bytes per value per system"))
    if k["compression"]:
        out.append(compression_section(k["compression"], baseline) + link("compression", "bytes per value per data set"))
    if k["memory"]:
        out.append(memory_section(k["memory"], baseline) + link("memory", "memory over time"))
    return out


def render_markdown(results: Results, charts: dict, md_path: str, title: str, commands: str | None,
                    baseline: str, pick: str) -> str:
    md_dir = os.path.dirname(os.path.abspath(md_path))
    sources = ", ".join(f"`{p}`" for p in results.files)
    parts = [f"# {title}", f"Generated by `bench/report.py` from {sources}.",
             machine_section(results.by_kind["machine"]), commands_section(commands)]
    parts += kind_sections(results, charts, md_dir, baseline, pick)
    return "\n\n".join(p for p in parts if p) + "\n"


BEGIN_MARK = "<!-- report.py: begin -->"
END_MARK = "<!-- report.py: end -->"


def demote_headings(text: str) -> str:
    """One more `#` on every heading outside fenced code, so a report can sit under a heading."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        out.append("#" + line if line.startswith("#") and not fenced else line)
    return "\n".join(out)


def splice(document: str, generated: str, where: str) -> str:
    """`document` with everything between BEGIN_MARK and END_MARK replaced by `generated`."""
    b, e = document.find(BEGIN_MARK), document.find(END_MARK)
    if b < 0 or e < 0 or e < b:
        raise ResultError(f"{where}: needs the lines {BEGIN_MARK} and {END_MARK}, in that order")
    return document[:b + len(BEGIN_MARK)] + "\n" + generated + document[e:]


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", help="JSON-lines result files")
    ap.add_argument("--out-dir", required=True, help="directory for the PNG charts")
    ap.add_argument("--markdown", required=True,
                    help="the markdown file to write (with --into: the file to update)")
    ap.add_argument("--into", action="store_true",
                    help=f"replace only what lies between {BEGIN_MARK} and {END_MARK} in --markdown, "
                         "headings one level down; the rest of the file is kept")
    ap.add_argument("--title", default="Tempora benchmarks")
    ap.add_argument("--commands", help="a text file of the commands that produced the results, "
                                       "included verbatim")
    ap.add_argument("--baseline", default="tempora", help="the system every ratio is taken against")
    ap.add_argument("--pick", choices=["last", "quietest"], default="last",
                    help="several query lines of one (system, query type): the last, or the one with "
                         "the least CPU used by other processes")
    return ap.parse_args(argv)


def read_commands(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise ResultError(f"{path}: {e.strerror}") from None


def main(argv=None) -> int:
    args = parse_args(argv)
    warn = lambda msg: print(f"report.py: {msg}", file=sys.stderr)  # noqa: E731
    try:
        results = read_results(args.results, warn)
        commands = read_commands(args.commands)
    except ResultError as e:
        print(f"report.py: {e}", file=sys.stderr)
        return 1
    charts = write_charts(results, args.out_dir, args.baseline, args.pick)
    warn_stale(args.out_dir, charts, warn)
    text = render_markdown(results, charts, args.markdown, args.title, commands, args.baseline, args.pick)
    if args.into:
        try:
            with open(args.markdown, encoding="utf-8") as f:
                text = splice(f.read(), demote_headings(text), args.markdown)
        except OSError as e:
            print(f"report.py: {args.markdown}: {e.strerror}", file=sys.stderr)
            return 1
        except ResultError as e:
            print(f"report.py: {e}", file=sys.stderr)
            return 1
    os.makedirs(os.path.dirname(os.path.abspath(args.markdown)), exist_ok=True)
    with open(args.markdown, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"report.py: wrote {args.markdown} and {len(charts)} chart(s) in {args.out_dir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
