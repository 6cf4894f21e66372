#!/usr/bin/env python3
"""Tests of bench/report.py on small synthetic result files.

    python3 -m unittest bench/test_report.py      # from the repository root
    python3 bench/test_report.py

Needs matplotlib (scripts/test-deps.sh installs it). Each test runs the report as a separate
process, as a user would, in a temporary directory.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPORT = os.path.join(HERE, "report.py")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ALL_CHARTS = ["ingest.png", "ingest_over_time.png", "query_latency.png", "bytes_per_value.png",
              "memory.png", "compression.png"]
MIB = 1 << 20


def query(system, qt, mean, p99, **kw):
    # no "kind": a query line, as bench/tsbs_queries.py writes them
    return {"system": system, "query_type": qt, "runs": 50, "min_ms": mean / 2, "median_ms": mean,
            "mean_ms": mean, "p99_ms": p99, "max_ms": p99 * 1.1, "digest": "abc123", "note": "",
            "when": "2026-11-24T02:00:00+00:00", "seed": 123, "scale": 100, **kw}


def ingest(system, run, rows_per_s, samples=None, **kw):
    rec = {"kind": "ingest", "system": system, "rows": 8_640_000, "values": 86_400_000,
           "seconds": 8_640_000 / rows_per_s, "rows_per_s": rows_per_s, "values_per_s": rows_per_s * 10,
           "workers": 4, "batch": 5000, "gzip": False, "dataset": "cpu-only 100 hosts x 1 d", "run": run, **kw}
    if samples:
        rec["samples"] = samples
    return rec


def memory(system, phase, mib_values):
    return {"kind": "memory", "system": system, "phase": phase,
            "samples": [{"t_s": float(i), "rss_bytes": int(v * MIB)} for i, v in enumerate(mib_values)]}


def full_records():
    """Every kind. Ratios by hand:
    query lastpoint: questdb 5.0 / tempora 2.0 = 2.50; double-groupby-1: questdb 1.0 / tempora 4.0 = 0.25
    ingest: tempora median(100k, 110k, 120k) = 110k; questdb median(40k, 60k) = 50k; 110k / 50k = 2.20
    storage: questdb 0.93 / tempora 0.44 = 2.11
    memory load: peaks questdb 500 / tempora 200 = 2.50; steady (median of the later half)
        tempora [.., 200, 160, 170] -> 170, questdb [.., 500, 425, 400] -> 425; 425 / 170 = 2.50
        (the median of all the samples would be 160 and 400)
    compression pvlib: questdb 1.5 / tempora 0.5 = 3.00
    """
    ramp = [{"t_s": t * 60.0, "rows_per_s": 90_000 + 1000 * t} for t in range(31)]
    return [
        {"kind": "machine", "cpu": "Test CPU 9000", "cores": 8, "mem_bytes": 16 << 30, "os": "Debian 12",
         "kernel": "6.1.0", "when": "2026-11-24", "versions": {"tempora": "0.1.0", "questdb": "9.3.4"}},
        query("tempora", "lastpoint", 2.0, 3.0),
        query("questdb", "lastpoint", 5.0, 9.0),
        query("tempora", "double-groupby-1", 4.0, 6.0),
        query("questdb", "double-groupby-1", 1.0, 1.5),
        query("duckdb", "lastpoint", 500.0, 700.0),
        {"system": "duckdb", "query_type": "double-groupby-1", "runs": 50, "error": "Boom: no", "mean_ms": None},
        ingest("tempora", 1, 100_000.0),
        ingest("tempora", 2, 120_000.0, samples=ramp),
        ingest("tempora", 3, 110_000.0),
        ingest("questdb", 1, 40_000.0),
        ingest("questdb", 2, 60_000.0),
        {"kind": "storage", "system": "tempora", "dataset": "cpu-only", "bytes": 40 * MIB,
         "values": 86_400_000, "bytes_per_value": 0.44},
        {"kind": "storage", "system": "questdb", "dataset": "cpu-only", "bytes": 80 * MIB,
         "values": 86_400_000, "bytes_per_value": 0.93},
        memory("tempora", "load", [50, 60, 200, 160, 170]),
        memory("questdb", "load", [100, 110, 500, 425, 400]),
        memory("tempora", "idle", [90, 90, 90]),
        {"kind": "compression", "dataset": "pvlib TMY3", "system": "tempora", "bytes": 1 * MIB,
         "values": 2_000_000, "bytes_per_value": 0.5, "source_bytes": 10 * MIB, "rows": 8760},
        {"kind": "compression", "dataset": "pvlib TMY3", "system": "questdb", "bytes": 3 * MIB,
         "values": 2_000_000, "bytes_per_value": 1.5, "source_bytes": 10 * MIB, "rows": 8760},
    ]


def write_jsonl(path, records):
    with open(path, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    return path


def table_after(md: str, heading: str) -> list[dict]:
    """The first markdown table after the line `heading`, as a list of {column: cell}."""
    lines = md.splitlines()
    start = lines.index(heading)
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("#"):
            break
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split(" | ")])
        elif rows:
            break
    header, body = rows[0], rows[2:]
    return [dict(zip(header, r)) for r in body]


class ReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.out = os.path.join(self.dir, "bench")
        self.md = os.path.join(self.out, "report.md")

    def tearDown(self):
        self.tmp.cleanup()

    def run_report(self, *files, extra=()):
        cmd = [sys.executable, REPORT, *files, "--out-dir", self.out, "--markdown", self.md, *extra]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=300)

    def read_md(self):
        with open(self.md) as f:
            return f.read()

    def assert_png(self, name):
        path = os.path.join(self.out, name)
        self.assertTrue(os.path.exists(path), f"{name} missing")
        self.assertGreater(os.path.getsize(path), 0)
        with open(path, "rb") as f:
            self.assertEqual(f.read(8), PNG_MAGIC, f"{name} is not a PNG")

    def full_report(self, extra=()):
        # two files: the report reads them as one set of results
        recs = full_records()
        a = write_jsonl(os.path.join(self.dir, "a.jsonl"), recs[:9])
        b = write_jsonl(os.path.join(self.dir, "b.jsonl"), recs[9:])
        p = self.run_report(a, b, extra=extra)
        self.assertEqual(p.returncode, 0, p.stderr)
        return self.read_md()

    def test_every_chart_is_a_png(self):
        self.full_report()
        for name in ALL_CHARTS:
            self.assert_png(name)

    def test_query_table_ratios(self):
        rows = {r["query type"]: r for r in table_after(self.full_report(), "## Query latency")}
        self.assertEqual(rows["lastpoint"]["questdb ÷ tempora"], "2.50")
        self.assertEqual(rows["double-groupby-1"]["questdb ÷ tempora"], "0.25")
        self.assertEqual(rows["lastpoint"]["duckdb ÷ tempora"], "250.00")
        self.assertEqual(rows["lastpoint"]["tempora"], "2.00 / 3.00")
        self.assertEqual(rows["lastpoint"]["duckdb"], "500 / 700")
        self.assertEqual(rows["double-groupby-1"]["duckdb"], "ERROR")
        self.assertEqual(rows["double-groupby-1"]["duckdb ÷ tempora"], "-")

    def test_spelling_table(self):
        recs = [query("tempora", "cpu-max-all-1", 2.0, 3.0, spelling="date_trunc"),
                query("tempora", "cpu-max-all-1", 3.0, 4.0, spelling="sample_by"),
                query("tempora", "cpu-max-all-1", 2.2, 4.0, spelling="grafana_epoch", digest="ffffff"),
                query("tempora", "lastpoint", 1.0, 2.0, spelling="date_trunc"),
                query("tempora", "lastpoint", 1.1, 2.0, spelling="sample_by"),
                {"system": "tempora", "query_type": "lastpoint", "runs": 50, "error": "Boom", "spelling": "cte"},
                query("questdb", "cpu-max-all-1", 4.0, 5.0, spelling="native"),
                query("duckdb", "cpu-max-all-1", 8.0, 9.0, bucket="date_trunc")]
        p = self.run_report(write_jsonl(os.path.join(self.dir, "s.jsonl"), recs))
        self.assertEqual(p.returncode, 0, p.stderr)
        md = self.read_md()
        main = {r["query type"]: r for r in table_after(md, "## Query latency")}
        self.assertEqual(main["cpu-max-all-1"]["tempora"], "2.00 / 3.00", "the default spelling")
        self.assertEqual(main["cpu-max-all-1"]["questdb ÷ tempora"], "2.00")
        self.assertEqual(main["cpu-max-all-1"]["duckdb ÷ tempora"], "4.00")
        self.assertNotIn("### questdb", md)  # one spelling: no spelling table
        self.assertNotIn("### duckdb", md)
        rows = {r["query type"]: r for r in table_after(md, "### tempora")}
        self.assertEqual(rows["cpu-max-all-1"]["date_trunc"], "2.00 (1.00)")
        self.assertEqual(rows["cpu-max-all-1"]["sample_by"], "3.00 (**1.50**)")
        self.assertEqual(rows["cpu-max-all-1"]["grafana_epoch"], "2.20 (1.10)")
        self.assertEqual(rows["cpu-max-all-1"]["worst"], "1.50")
        self.assertTrue(rows["cpu-max-all-1"]["rows"].startswith("DIFFER"))
        self.assertEqual(rows["lastpoint"]["cte"], "ERROR")
        self.assertEqual(rows["lastpoint"]["rows"], "same")
        self.assertIn("1 of 5 (query type, spelling) pairs above 1.2x", md)
        self.assertIn("- lastpoint cte: Boom", md)

    def test_ingest_table_ratios(self):
        rows = {r["system"]: r for r in table_after(self.full_report(), "## Ingest")}
        self.assertEqual(rows["tempora"]["rows/s (median)"], "110,000")
        self.assertEqual(rows["tempora"]["rows/s min–max"], "100,000–120,000")
        self.assertEqual(rows["tempora"]["runs"], "3")
        self.assertEqual(rows["questdb"]["rows/s (median)"], "50,000")
        self.assertEqual(rows["questdb"]["tempora ÷ peer"], "2.20")
        self.assertEqual(rows["tempora"]["tempora ÷ peer"], "baseline")

    def test_storage_table_ratios(self):
        rows = {r["system"]: r for r in table_after(self.full_report(), "## Bytes per value")}
        self.assertEqual(rows["tempora"]["bytes/value"], "0.44")
        self.assertEqual(rows["questdb"]["bytes/value"], "0.93")
        self.assertEqual(rows["questdb"]["peer ÷ tempora"], "2.11")

    def test_memory_table_ratios(self):
        rows = table_after(self.full_report(), "## Memory")
        by = {(r["phase"], r["system"]): r for r in rows}
        self.assertEqual(by[("load", "tempora")]["peak MiB"], "200.0")
        self.assertEqual(by[("load", "tempora")]["steady MiB"], "170.0")
        self.assertEqual(by[("load", "questdb")]["peak: peer ÷ tempora"], "2.50")
        self.assertEqual(by[("load", "questdb")]["steady: peer ÷ tempora"], "2.50")
        self.assertEqual(by[("idle", "tempora")]["peak MiB"], "90.0")

    def test_compression_table_ratios(self):
        rows = {r["system"]: r for r in table_after(self.full_report(), "## Compression")}
        self.assertEqual(rows["questdb"]["peer ÷ tempora"], "3.00")
        self.assertEqual(rows["tempora"]["source ÷ stored"], "10.00")
        self.assertEqual(rows["questdb"]["bytes/value"], "1.50")

    def test_machine_commands_and_links(self):
        cmds = os.path.join(self.dir, "commands.txt")
        text = "bench/peers/setup.sh load tempora\necho ```quoted``` | cat\n"
        with open(cmds, "w") as f:
            f.write(text)
        md = self.full_report(extra=["--commands", cmds, "--title", "Test run"])
        self.assertTrue(md.startswith("# Test run\n"))
        self.assertIn("| CPU | Test CPU 9000 |", md)
        self.assertIn("| questdb | 9.3.4 |", md)
        self.assertIn("````\n" + text + "````", md)  # verbatim, fence longer than its backticks
        for name in ALL_CHARTS:
            self.assertIn(f"]({name})", md)  # relative to the markdown file, which is in --out-dir

    def test_links_relative_to_markdown(self):
        self.md = os.path.join(self.dir, "docs", "report.md")
        self.full_report()
        self.assertIn("](../bench/ingest.png)", self.read_md())

    def test_malformed_line(self):
        path = write_jsonl(os.path.join(self.dir, "broken.jsonl"), full_records()[:3])
        with open(path, "a") as f:
            f.write('{"kind": "ingest", "system": "tempora", "rows_per_s": \n')
        p = self.run_report(path)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("broken.jsonl:4", p.stderr)
        self.assertFalse(os.path.exists(self.md))

    def test_missing_required_field(self):
        path = write_jsonl(os.path.join(self.dir, "nofield.jsonl"),
                           [query("tempora", "lastpoint", 1.0, 2.0), {"kind": "storage", "system": "x"}])
        p = self.run_report(path)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("nofield.jsonl:2", p.stderr)
        self.assertIn("bytes_per_value", p.stderr)

    def test_missing_kinds_no_chart_no_error(self):
        # queries only, no "kind" field: only the query chart and table, exit 0, nothing on stderr
        # but the closing "wrote" line
        path = write_jsonl(os.path.join(self.dir, "q.jsonl"),
                           [query("tempora", "lastpoint", 2.0, 3.0), query("questdb", "lastpoint", 5.0, 9.0)])
        p = self.run_report(path)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([ln for ln in p.stderr.splitlines() if "wrote" not in ln], [])
        self.assertEqual(sorted(os.listdir(self.out)), ["query_latency.png", "report.md"])
        md = self.read_md()
        self.assertIn("## Query latency", md)
        for heading in ("## Ingest", "## Memory", "## Compression", "## Bytes per value"):
            self.assertNotIn(heading, md)

    def test_ingest_without_samples_has_no_time_chart(self):
        path = write_jsonl(os.path.join(self.dir, "i.jsonl"), [ingest("tempora", 1, 1000.0)])
        p = self.run_report(path)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(self.out)), ["ingest.png", "report.md"])

    def test_unknown_kind_warned_and_ignored(self):
        path = write_jsonl(os.path.join(self.dir, "u.jsonl"),
                           [{"kind": "weather", "x": 1}, query("tempora", "lastpoint", 2.0, 3.0),
                            {"kind": "weather", "x": 2}])
        p = self.run_report(path)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("u.jsonl:1", p.stderr)
        self.assertIn("weather", p.stderr)
        self.assertIn("2 lines", p.stderr)


class FormatTest(unittest.TestCase):
    def test_numbers(self):
        sys.path.insert(0, HERE)
        import report
        self.assertEqual(report.fmt_sig(28.342), "28.3")
        self.assertEqual(report.fmt_sig(5.447), "5.45")
        self.assertEqual(report.fmt_sig(0.01234), "0.0123")
        self.assertEqual(report.fmt_sig(1547.6), "1,548")
        self.assertEqual(report.fmt_int(1234567.4), "1,234,567")
        self.assertEqual(report.fmt_bpv(0.437), "0.44")
        self.assertEqual(report.code_block("a ``` b"), "````\na ``` b\n````")


class IntoTest(unittest.TestCase):
    """--into: only the marked part of an existing document is replaced."""

    setUp, tearDown = ReportTest.setUp, ReportTest.tearDown
    run_report, read_md = ReportTest.run_report, ReportTest.read_md

    def test_the_marked_part_is_replaced_and_the_rest_kept(self):
        os.makedirs(self.out, exist_ok=True)
        before = "# Benchmarks\n\nHand-written intro.\n\n<!-- report.py: begin -->\nold table\n" \
                 "<!-- report.py: end -->\n\n## History\n\nkept\n"
        with open(self.md, "w") as f:
            f.write(before)
        recs = full_records()
        a = write_jsonl(os.path.join(self.dir, "a.jsonl"), recs)
        p = self.run_report(a, extra=["--into", "--title", "Latest run"])
        self.assertEqual(p.returncode, 0, p.stderr)
        md = self.read_md()
        self.assertTrue(md.startswith("# Benchmarks\n\nHand-written intro.\n\n<!-- report.py: begin -->\n"))
        self.assertTrue(md.endswith("<!-- report.py: end -->\n\n## History\n\nkept\n"))
        self.assertNotIn("old table", md)
        self.assertIn("\n## Latest run\n", md)  # the report's title, one level down
        self.assertNotIn("\n# Latest run", md)
        # Run again: the same document, regenerated in place, not nested.
        self.assertEqual(self.run_report(a, extra=["--into", "--title", "Latest run"]).returncode, 0)
        self.assertEqual(self.read_md().count("<!-- report.py: begin -->"), 1)

    def test_a_document_without_the_markers_is_refused_and_left_alone(self):
        os.makedirs(self.out, exist_ok=True)
        for name, text in [("no markers", "# B\n"),
                           ("end before begin", "<!-- report.py: end -->\n<!-- report.py: begin -->\n")]:
            with open(self.md, "w") as f:
                f.write(text)
            a = write_jsonl(os.path.join(self.dir, "a.jsonl"), full_records())
            p = self.run_report(a, extra=["--into"])
            self.assertEqual(p.returncode, 1, name)
            self.assertIn("report.py: begin", p.stderr, name)
            with open(self.md) as f:
                self.assertEqual(f.read(), text, name)

    def test_headings_in_code_blocks_stay(self):
        sys.path.insert(0, HERE)
        import report
        self.assertEqual(report.demote_headings("# A\n```\n# comment\n```\n## B"),
                         "## A\n```\n# comment\n```\n### B")


if __name__ == "__main__":
    unittest.main()
