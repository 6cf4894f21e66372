#!/usr/bin/env python3
"""Tests of bench/tsbs_queries.py: the thirteen query types' parameters, their texts in every
dialect and every spelling of the time bucket, and the rows of the standard SQL (in each spelling
DuckDB takes) checked against a plain-Python reference on DuckDB.

    python3 -m unittest bench/test_tsbs_queries.py      # from the repository root

The cross-system check (the same rows from Tempora and DuckDB) is the quick benchmark's
(bench/quick.sh); this file checks that the standard text asks what each TSBS type asks, by
computing the answer a second way.
"""
from __future__ import annotations

import io
import json
import os
import random
import re
import sys
import unittest
from datetime import datetime, timezone
from decimal import Decimal

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tsbs_queries as tq  # noqa: E402  (same directory)

START_NS = int(datetime(2016, 1, 1, tzinfo=timezone.utc).timestamp()) * 10**9
HOURS = 13
END_NS = START_NS + HOURS * tq.HOUR_NS
HOSTS = 10
STEP_NS = 10 * 10**9
MIN_NS = 60 * 10**9


def rows_table() -> list[tuple]:
    """10 hosts x 13 h every 10 s, ROW_COLUMNS order; values in tenths, so sums are exact enough."""
    rng = random.Random(7)
    rows = []
    for t in range(START_NS, END_NS, STEP_NS):
        for h in range(HOSTS):
            tags = [f"host_{h}", f"region_{h % 3}", f"dc_{h % 4}", str(h), "Ubuntu", "x64", "SF",
                    str(h % 5), "1", "production"]
            rows.append((t, *tags, *(rng.randrange(1000) / 10 for _ in tq.FIELDS)))
    return rows


ts = tq._ns_datetime  # epoch ns -> UTC datetime, as the runner converts InfluxDB's times


def reference(qt: str, p: tq.Params, rows: list[tuple]) -> list[tuple]:
    """What the query type asks, computed without SQL."""
    qs = tq.spec(qt)
    col = {c: i for i, c in enumerate(tq.ROW_COLUMNS)}
    fi = [col[f] for f in qs.fields]
    host_ok = (lambda r: r[1] in p.hosts) if p.hosts else (lambda r: True)

    def in_window(r):
        return p.start_ns <= r[0] < p.end_ns

    def grouped(keep, key, agg):
        groups: dict = {}
        for r in rows:
            if keep(r):
                groups.setdefault(key(r), []).append(r)
        return [(*k, *(agg([r[i] for r in g]) for i in fi)) for k, g in sorted(groups.items())]

    def mean(v):
        return sum(v) / len(v)
    if qs.shape == "lastpoint":
        newest: dict = {}
        for r in rows:
            if r[1] not in newest or r[0] > newest[r[1]][0]:
                newest[r[1]] = r
        return [(ts(r[0]), *r[1:]) for _, r in sorted(newest.items())]
    if qs.shape == "single-groupby":
        out = grouped(lambda r: host_ok(r) and in_window(r), lambda r: (r[0] // MIN_NS * MIN_NS,), max)
    elif qs.shape == "cpu-max-all":
        out = grouped(lambda r: host_ok(r) and in_window(r), lambda r: (r[0] // tq.HOUR_NS * tq.HOUR_NS,), max)
    elif qs.shape == "double-groupby":
        out = grouped(in_window, lambda r: (r[0] // tq.HOUR_NS * tq.HOUR_NS, r[1]), mean)
    elif qs.shape == "high-cpu":
        keep = [r for r in rows if r[col["usage_user"]] > 90.0 and host_ok(r) and in_window(r)]
        return [(ts(r[0]), *r[1:]) for r in sorted(keep, key=lambda r: (r[1], r[0]))]
    elif qs.shape == "groupby-orderby-limit":
        out = grouped(lambda r: r[0] < p.end_ns, lambda r: (r[0] // MIN_NS * MIN_NS,), max)[::-1][:5]
    else:
        raise AssertionError(qs.shape)
    return [(ts(r[0]), *r[1:]) for r in out]


class SpecTest(unittest.TestCase):
    def test_thirteen_types_and_their_names_say_their_sizes(self):
        self.assertEqual(len(tq.QUERY_TYPES), 13)
        for qt, qs in tq.QUERY_SPECS.items():
            with self.subTest(qt):
                if m := re.fullmatch(r"single-groupby-(\d+)-(\d+)-(\d+)", qt):
                    self.assertEqual((qs.shape, qs.metrics, qs.hosts, qs.window_ns),
                                     ("single-groupby", int(m[1]), int(m[2]), int(m[3]) * tq.HOUR_NS))
                elif m := re.fullmatch(r"double-groupby-(\d+|all)", qt):
                    self.assertEqual((qs.shape, qs.hosts, qs.window_ns), ("double-groupby", 0, 12 * tq.HOUR_NS))
                    self.assertEqual(qs.metrics, 10 if m[1] == "all" else int(m[1]))
                elif m := re.fullmatch(r"(high-cpu|cpu-max-all)-(\d+|all)", qt):
                    self.assertEqual(qs.shape, m[1])
                    self.assertEqual(qs.hosts, 0 if m[2] == "all" else int(m[2]))
                    self.assertEqual(qs.metrics, 10)
                else:
                    self.assertIn(qt, ("lastpoint", "groupby-orderby-limit"))

    def test_unknown_type_is_refused_by_name(self):
        with self.assertRaisesRegex(ValueError, "unknown query type 'cpu-max-all-3'"):
            tq.generate_params("cpu-max-all-3", 1, 1, 100, START_NS, END_NS)
        with self.assertRaisesRegex(ValueError, "unknown query type"):
            tq.standard_sql("cpu-max-all-3", tq.Params("cpu-max-all-3"))


class ParamsTest(unittest.TestCase):
    def test_hosts_and_windows_per_type(self):
        for qt, qs in tq.QUERY_SPECS.items():
            with self.subTest(qt):
                params, _ = tq.generate_params(qt, 20, 123, HOSTS, START_NS, END_NS)
                self.assertEqual(len(params), 20)
                for p in params:
                    self.assertEqual(len(p.hosts), qs.hosts)
                    self.assertEqual(len(set(p.hosts)), len(p.hosts), "hosts are drawn without repeats")
                    self.assertTrue(all(0 <= int(h.removeprefix("host_")) < HOSTS for h in p.hosts))
                    if qs.shape == "lastpoint":
                        self.assertEqual((p.start_ns, p.end_ns), (0, 0))
                    elif qs.shape == "groupby-orderby-limit":
                        self.assertEqual(p.start_ns, 0)
                        self.assertTrue(START_NS + qs.window_ns <= p.end_ns <= END_NS)
                    else:
                        self.assertEqual(p.end_ns - p.start_ns, qs.window_ns)
                        self.assertTrue(START_NS <= p.start_ns and p.end_ns <= END_NS)
                    self.assertEqual(p.start_ns % 1000, 0, "bounds are cut to microseconds")

    def test_same_seed_same_draws_and_another_seed_others(self):
        a, _ = tq.generate_params("cpu-max-all-8", 5, 123, 100, START_NS, END_NS)
        b, _ = tq.generate_params("cpu-max-all-8", 5, 123, 100, START_NS, END_NS)
        c, _ = tq.generate_params("cpu-max-all-8", 5, 124, 100, START_NS, END_NS)
        self.assertEqual([p.to_json() for p in a], [p.to_json() for p in b])
        self.assertNotEqual([p.to_json() for p in a], [p.to_json() for p in c])

    def test_more_hosts_than_the_data_has_is_an_error_not_a_hang(self):
        with self.assertRaisesRegex(ValueError, "single-groupby-5-8-1 draws 8 hosts but the data has 5"):
            tq.generate_params("single-groupby-5-8-1", 1, 123, 5, START_NS, END_NS)

    def test_window_longer_than_the_data_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "does not fit"):
            tq.generate_params("double-groupby-all", 1, 123, HOSTS, START_NS, START_NS + 11 * tq.HOUR_NS)


class DialectTextTest(unittest.TestCase):
    """Every dialect's text reads the type's fields and hosts, and no others."""

    def test_fields_and_hosts_in_every_dialect(self):
        for qt, qs in tq.QUERY_SPECS.items():
            p = tq.generate_params(qt, 1, 123, 100, START_NS, END_NS)[0][0]
            p.data_start_ns, p.data_end_ns = START_NS, END_NS
            texts = {
                "standard": tq.standard_sql(qt, p),
                "clickhouse": tq.clickhouse_sql(qt, p),
                "questdb": tq.questdb_sql(qt, p),
                "influxql": tq.influxql(qt, p),
                "metricsql": tq.victoriametrics_query(qt, p)["params"]["query"],
            }
            for dialect, text in texts.items():
                with self.subTest(qt=qt, dialect=dialect):
                    for h in p.hosts:
                        self.assertRegex(text, rf"\bhost_{h.removeprefix('host_')}\b")
                    self.assertEqual(len(set(re.findall(r"\bhost_\d+\b", text))), len(p.hosts))
                    if qs.shape in ("single-groupby", "double-groupby", "cpu-max-all") and dialect != "metricsql":
                        fn = "max" if qs.shape != "double-groupby" else ("mean" if dialect == "influxql" else "avg")
                        self.assertEqual(re.findall(rf"\b{fn}\((\w+)\)", text), qs.fields)
                    if dialect == "metricsql" and qs.shape != "lastpoint":
                        names = re.search(r'__name__=~"([^"]+)"', text)[1]
                        wanted = {"cpu_" + f for f in qs.fields}
                        if qs.shape == "high-cpu":
                            wanted = {"cpu_" + f for f in tq.FIELDS}
                        got = {"cpu_" + f for f in tq.FIELDS if re.fullmatch(names, "cpu_" + f)}
                        self.assertEqual(got, wanted)


class ConversionTest(unittest.TestCase):
    """InfluxDB's series and VictoriaMetrics' matrices made into the standard rows."""

    def test_influx_double_groupby_with_several_fields(self):
        series = [
            {"name": "cpu", "tags": {"hostname": "host_1"}, "columns": ["time", "mean", "mean_1"],
             "values": [[2 * tq.HOUR_NS, 1.5, 2.5], [3 * tq.HOUR_NS, None, None]]},
            {"name": "cpu", "tags": {"hostname": "host_0"}, "columns": ["time", "mean", "mean_1"],
             "values": [[2 * tq.HOUR_NS, 3.0, 4.0]]},
        ]
        self.assertEqual(tq.influx_rows("double-groupby-5", series), [
            (ts(2 * tq.HOUR_NS), "host_0", 3.0, 4.0), (ts(2 * tq.HOUR_NS), "host_1", 1.5, 2.5)])

    def test_influx_high_cpu_all_rows_in_host_then_time_order(self):
        cols = ["time", "hostname"] + tq.FIELDS
        series = [{"name": "cpu", "columns": cols, "values": [
            [20, "host_2", *range(10)], [10, "host_2", *range(10)], [30, "host_1", *range(10)]]}]
        rows = tq.influx_rows("high-cpu-all", series)
        self.assertEqual([(r[1], r[0]) for r in rows], [("host_1", ts(30)), ("host_2", ts(10)), ("host_2", ts(20))])
        self.assertEqual(rows[0][len(tq.TAGS) + 1:], tuple(range(10)))


BUCKETED = [qt for qt, qs in tq.QUERY_SPECS.items() if qs.shape in tq.BUCKETED_SHAPES]


def parse(text: str) -> dict:
    """DuckDB's parse tree of a statement (parsed, not bound: unknown functions are fine)."""
    import duckdb
    tree = json.loads(duckdb.connect().execute("SELECT json_serialize_sql(?)", [text]).fetchone()[0])
    if tree["error"]:
        raise AssertionError(f"does not parse: {tree.get('error_message')}: {text}")
    (stmt,) = tree["statements"]
    return stmt["node"]


def function_names(node) -> list[str]:
    out = []
    if isinstance(node, dict):
        if "function_name" in node:
            out.append(node["function_name"])
        for v in node.values():
            out += function_names(v)
    elif isinstance(node, list):
        for v in node:
            out += function_names(v)
    return out


def key_form(exprs: list[dict]) -> list:
    """GROUP BY / ORDER BY keys as written: column names, or positions as ints."""
    out = []
    for e in exprs:
        if e["class"] == "COLUMN_REF":
            out.append(e["column_names"][-1])
        elif e["class"] == "CONSTANT":
            out.append(int(e["literal"]["text"]))
        else:
            out.append(e["class"])
    return out


def modifiers(node: dict) -> tuple[list, list, int | None]:
    """ORDER BY keys, their directions, LIMIT (or None) of a SELECT node."""
    order, dirs, limit = [], [], None
    for m in node["modifiers"]:
        if m["type"] == "ORDER_MODIFIER":
            order = key_form([o["expression"] for o in m["orders"]])
            dirs = [o["type"] for o in m["orders"]]
        elif m["type"] == "LIMIT_MODIFIER":
            limit = int(m["limit"]["literal"]["text"])
    return order, dirs, limit


class SpellingTextTest(unittest.TestCase):
    """Each spelling's text, parsed, is what its name says: the bucket expression, the GROUP BY
    form, where ORDER BY and LIMIT sit; the types without a bucket are the same in every one."""

    # spelling -> (functions the bucket expression calls, its argument count or None, keys by
    # position?, wrapper: None, "cte" or "subquery")
    TABLE = {
        "date_trunc": ({"date_trunc"}, 2, False, None),
        "date_bin": ({"date_bin"}, 2, False, None),
        "date_bin_origin": ({"date_bin"}, 3, False, None),
        "time_bucket": ({"time_bucket"}, 2, False, None),
        "grafana_epoch": ({"floor", "date_part", "/", "*"}, None, True, None),
        "timescale_epoch": ({"to_timestamp", "date_part", "/", "*"}, None, False, None),
        "group_by_position": ({"date_trunc"}, 2, True, None),
        "cte": ({"date_trunc"}, 2, False, "cte"),
        "subquery": ({"date_trunc"}, 2, False, "subquery"),
    }

    def params(self, qt):
        return tq.generate_params(qt, 1, 123, 100, START_NS, END_NS)[0][0]

    def test_the_table_covers_every_spelling_but_sample_by(self):
        self.assertEqual(set(self.TABLE) | {"sample_by"}, set(tq.SPELLINGS))
        self.assertEqual(tq.DEFAULT_SPELLING, "date_trunc")

    def test_each_spelling_parses_as_what_it_claims(self):
        for qt in BUCKETED:
            qs, p = tq.spec(qt), self.params(qt)
            by_host = qs.shape == "double-groupby"
            unit, secs = ("hour", 3600) if qs.shape in ("double-groupby", "cpu-max-all") else ("minute", 60)
            want_order_dir = {"single-groupby": "ASCENDING", "groupby-orderby-limit": "DESCENDING"}.get(
                qs.shape, "ORDER_DEFAULT")
            want_limit = 5 if qs.shape == "groupby-orderby-limit" else None
            for sp, (funcs, nargs, positional, wrapper) in self.TABLE.items():
                with self.subTest(qt=qt, spelling=sp):
                    text = tq.standard_sql(qt, p, sp)
                    outer = parse(text)
                    if wrapper == "cte":
                        (cte,) = outer["cte_map"]["map"]
                        self.assertEqual(cte["key"], "q")
                        inner = cte["value"]["query_node"]
                    elif wrapper == "subquery":
                        self.assertEqual(outer["from_table"]["type"], "SUBQUERY")
                        inner = outer["from_table"]["subquery"]["node"]
                    else:
                        inner = outer
                    if wrapper:  # SELECT * outside, the aggregate and its GROUP BY inside
                        self.assertEqual([e["class"] for e in outer["select_list"]], ["STAR"])
                        self.assertEqual(outer["group_expressions"], [])
                        self.assertEqual(modifiers(inner), ([], [], None), "ORDER BY and LIMIT outside")
                    self.assertEqual(inner["from_table"].get("table_name"), "cpu")
                    bucket = inner["select_list"][0]
                    names = function_names(bucket)
                    self.assertTrue(funcs <= set(names), f"{names} lacks {funcs}")
                    for other in {"date_trunc", "date_bin", "time_bucket", "to_timestamp", "floor"} - funcs:
                        self.assertNotIn(other, names)
                    if nargs is not None:
                        self.assertEqual(len(bucket["arguments"]), nargs)
                    if sp == "date_bin_origin":
                        self.assertIn("TIMESTAMP '1970-01-01T00:00:00Z'", text)
                    if sp in ("grafana_epoch", "timescale_epoch"):
                        self.assertIn("extract(epoch from time)", text)
                        self.assertIn(f"/{secs})*{secs}", text)
                    else:
                        self.assertIn(f"'{unit}'" if "date_trunc" in funcs else f"INTERVAL '1 {unit}'", text)
                    self.assertEqual(bucket["alias"], "time" if sp == "grafana_epoch" else unit)
                    if sp == "timescale_epoch":
                        self.assertIn("::int)", text)
                    if by_host:
                        self.assertEqual(key_form(inner["select_list"][1:2]), ["hostname"])
                    name_keys = [unit, "hostname"] if by_host else [unit]
                    keys = [1, 2][:len(name_keys)] if positional else name_keys
                    self.assertEqual(key_form(inner["group_expressions"]), keys)
                    order, dirs, limit = modifiers(outer)
                    self.assertEqual(order, keys)
                    self.assertEqual(dirs[0], want_order_dir)
                    self.assertEqual(limit, want_limit)
                    aggs = [e for e in inner["select_list"][1 + by_host:]]
                    fn = "avg" if by_host else "max"
                    self.assertEqual([function_names(a)[0] for a in aggs], [fn] * len(aggs))
                    self.assertEqual(re.findall(rf"\b{fn}\((\w+)\)", text), qs.fields)
                    for h in p.hosts:
                        self.assertIn(f"hostname = '{h}'", text)

    def test_sample_by(self):
        for qt in BUCKETED:
            qs, p = tq.spec(qt), self.params(qt)
            with self.subTest(qt=qt):
                text = tq.standard_sql(qt, p, "sample_by")
                width = "1h" if qs.shape in ("double-groupby", "cpu-max-all") else "1m"
                alias = "hour" if width == "1h" else "minute"
                m = re.fullmatch(rf"SELECT time AS {alias}(, hostname)?, (.*) FROM cpu WHERE (.*) "
                                 rf"SAMPLE BY {width} ORDER BY {alias}(, hostname)?( ASC| DESC LIMIT 5)?", text)
                self.assertIsNotNone(m, text)
                self.assertEqual(bool(m[1]), qs.shape == "double-groupby")
                self.assertEqual(bool(m[4]), qs.shape == "double-groupby")
                self.assertNotIn("GROUP BY", text)  # Tempora refuses GROUP BY with SAMPLE BY
                # without the clause, the rest is plain SQL over the raw rows
                plain = parse(text.replace(f" SAMPLE BY {width}", ""))
                self.assertEqual(plain["group_expressions"], [])
                self.assertEqual(plain["select_list"][0]["column_names"], ["time"])
                self.assertEqual(tq.standard_sql(qt, p).split(" WHERE ")[1].split(" GROUP BY")[0], m[3],
                                 "the same WHERE as the default text")

    def test_types_without_a_bucket_are_the_same_text_in_every_spelling(self):
        for qt, qs in tq.QUERY_SPECS.items():
            if qs.shape in tq.BUCKETED_SHAPES:
                continue
            p = self.params(qt)
            with self.subTest(qt=qt):
                self.assertEqual({tq.standard_sql(qt, p, sp) for sp in tq.SPELLINGS}, {tq.standard_sql(qt, p)})

    def test_every_spelling_differs_from_the_others_on_bucketed_types(self):
        for qt in BUCKETED:
            p = self.params(qt)
            texts = [tq.standard_sql(qt, p, sp) for sp in tq.SPELLINGS]
            self.assertEqual(len(set(texts)), len(texts), qt)

    def test_unknown_spelling_is_refused_by_name(self):
        with self.assertRaisesRegex(ValueError, "unknown spelling 'date_bucket'"):
            tq.standard_sql("cpu-max-all-1", self.params("cpu-max-all-1"), "date_bucket")

    def test_which_systems_take_which_spellings(self):
        self.assertEqual(tq.resolve_spellings("tempora", "all"), list(tq.SPELLINGS))
        self.assertEqual(tq.resolve_spellings("tempora-http", "sample_by,cte"), ["sample_by", "cte"])
        self.assertNotIn("sample_by", tq.resolve_spellings("duckdb", "all"))
        self.assertNotIn("timescale_epoch", tq.resolve_spellings("duckdb", "all"))
        for system in ("questdb", "victoriametrics", "influxdb", "chdb"):
            self.assertEqual(tq.resolve_spellings(system, "date_bin"), ["native"])
        with self.assertRaisesRegex(ValueError, "duckdb does not take the spelling 'date_bin'"):
            tq.resolve_spellings("duckdb", "date_bin")
        with self.assertRaisesRegex(ValueError, "unknown spelling 'nope'"):
            tq.resolve_spellings("questdb", "nope")

    def test_print_sql_prints_one_text_per_type_in_the_spelling(self):
        out = io.StringIO()
        from contextlib import redirect_stdout
        with redirect_stdout(out):
            self.assertEqual(tq.main(["--system", "tempora", "--print-sql", "--spelling", "grafana_epoch"]), 0)
        texts = [t for t in out.getvalue().split("\n") if t and not t.startswith("--")]
        self.assertEqual(len(texts), 13)
        self.assertEqual(sum("floor(extract(epoch from time)" in t for t in texts), len(BUCKETED))
        out = io.StringIO()
        with redirect_stdout(out):  # --bucket: the older name
            tq.main(["--system", "duckdb", "--print-sql", "--bucket", "time_bucket", "--query-type", "cpu-max-all-1"])
        self.assertIn("time_bucket(INTERVAL '1 hour', time)", out.getvalue())


class NormaliseTest(unittest.TestCase):
    """An epoch-seconds bucket (Grafana's spelling) digests as the timestamp it stands for."""

    def test_epoch_rows_digest_as_timestamp_rows(self):
        t = datetime(2016, 1, 1, 5, 3, tzinfo=timezone.utc)
        epoch = t.timestamp()  # 1451624580.0
        want = tq.digest_rows([(t, "host_1", 12.5)])
        for v in (epoch, int(epoch), Decimal("1451624580"), Decimal("1451624580.000000")):
            with self.subTest(v=repr(v)):
                rows = tq.normalise_rows("double-groupby-1", [(v, "host_1", 12.5)], "grafana_epoch")
                self.assertEqual(tq.digest_rows(rows), want)
                self.assertNotEqual(tq.digest_rows([(v, "host_1", 12.5)]), want, "only after normalising")
        naive = datetime(2016, 1, 1, 5, 3)  # to_timestamp's `timestamp`: no zone, read as UTC
        self.assertEqual(tq.digest_rows([(naive, "host_1", 12.5)]), want)

    def test_only_epoch_spellings_and_bucketed_types_change(self):
        rows = [(60.0, 1.0)]
        self.assertIs(tq.normalise_rows("single-groupby-1-1-1", rows, "date_trunc"), rows)
        self.assertIs(tq.normalise_rows("high-cpu-1", rows, "grafana_epoch"), rows)
        self.assertIs(tq.normalise_rows("lastpoint", rows, "grafana_epoch"), rows)
        self.assertEqual(tq.normalise_rows("single-groupby-1-1-1", rows, "grafana_epoch"),
                         [(datetime(1970, 1, 1, 0, 1, tzinfo=timezone.utc), 1.0)])
        self.assertEqual(tq.normalise_rows("cpu-max-all-1", [(None, 1)], "grafana_epoch"), [(None, 1)])

    def test_http_timestamps_with_and_without_a_zone(self):
        self.assertEqual(tq._http_ts("2016-01-01T05:03:00Z"), datetime(2016, 1, 1, 5, 3, tzinfo=timezone.utc))
        self.assertEqual(tq._http_ts("2016-01-01T05:03:00.250000"), datetime(2016, 1, 1, 5, 3, 0, 250000))
        self.assertEqual(tq._http_ts("2016-01-01T05:03:00+00:00"), datetime(2016, 1, 1, 5, 3, tzinfo=timezone.utc))
        for v in ("host_2016-01-01T05:03:00", "2016-01-01T05:03:00Zz", "2016-01-01", 1451624580.0):
            self.assertEqual(tq._http_ts(v), v)


def query_rec(system, qt, mean, spelling=None, digest="aaaaaaaaaaaa", **kw):
    r = {"system": system, "query_type": qt, "runs": 5, "mean_ms": mean, "median_ms": mean, "p99_ms": mean * 2,
         "rows_total": 5, "rows_min": 1, "rows_max": 1, "digest": digest, **kw}
    if spelling:
        r["spelling"] = spelling
    return r


class SpellingRecordsTest(unittest.TestCase):
    """Results with several spellings: the side-by-side table keeps the default spelling, the
    per-spelling table gives each spelling's ratio to the fastest of its type."""

    RECORDS = [
        query_rec("tempora", "cpu-max-all-1", 2.0, "date_trunc"),
        query_rec("tempora", "cpu-max-all-1", 3.0, "date_bin"),
        query_rec("tempora", "cpu-max-all-1", 1.0, "sample_by"),
        query_rec("tempora", "lastpoint", 4.0, "date_trunc"),
        query_rec("tempora", "lastpoint", 4.4, "date_bin"),
        query_rec("tempora", "lastpoint", 4.2, "sample_by", error="Boom"),
        query_rec("questdb", "cpu-max-all-1", 5.0, "native"),
        query_rec("duckdb", "cpu-max-all-1", 7.0, bucket="time_bucket"),  # an older line
        query_rec("postgresql", "cpu-max-all-1", 9.0),                     # older still
    ]

    def test_spelling_of_old_and_new_records(self):
        self.assertEqual([tq.spelling_of(r) for r in self.RECORDS],
                         ["date_trunc", "date_bin", "sample_by", "date_trunc", "date_bin", "sample_by",
                          "native", "time_bucket", "date_trunc"])

    def test_pick_keeps_the_default_spelling_unless_there_is_none(self):
        picked = tq.pick_records(self.RECORDS)
        self.assertEqual(picked[("tempora", "cpu-max-all-1")]["mean_ms"], 2.0)
        self.assertEqual(picked[("duckdb", "cpu-max-all-1")]["mean_ms"], 7.0)  # only time_bucket
        by = tq.pick_records(self.RECORDS, by_spelling=True)
        self.assertEqual(by[("tempora", "cpu-max-all-1", "sample_by")]["mean_ms"], 1.0)
        self.assertEqual(len(by), len(self.RECORDS))

    def test_ratios_to_the_fastest_spelling(self):
        m = tq.spelling_matrix(self.RECORDS)
        self.assertEqual(list(m), ["tempora"])  # the only system with several spellings
        self.assertEqual(list(m["tempora"]["cpu-max-all-1"]), ["date_trunc", "date_bin", "sample_by"])
        self.assertEqual(tq.spelling_ratios(m["tempora"]["cpu-max-all-1"]),
                         {"date_trunc": 2.0, "date_bin": 3.0, "sample_by": 1.0})
        self.assertEqual(tq.spelling_ratios(m["tempora"]["lastpoint"]), {"date_trunc": 1.0, "date_bin": 1.1})
        out = io.StringIO()
        tq.print_spelling_tables(self.RECORDS, out)
        text = out.getvalue()
        self.assertRegex(text, r"cpu-max-all-1 +\| 2 \(2\.00!\) +\| 3 \(3\.00!\) +\| 1 \(1\.00\) +\| 3\.00x  \| same")
        self.assertIn("2 of 6 (type, spelling) pairs above 1.2x", text)
        self.assertIn("ERROR tempora lastpoint sample_by: Boom", text)

    def test_table_from_compares_the_stat_asked_for(self):
        import tempfile
        recs = [query_rec("tempora", "cpu-max-all-1", 2.0, "date_trunc"),
                {**query_rec("tempora", "cpu-max-all-1", 2.0, "cte"), "median_ms": 3.0}]
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as f:
            f.write("".join(json.dumps(r) + "\n" for r in recs))
            f.flush()
            for stat, want in (("mean", r"2 \(1\.00\)"), ("median", r"3 \(1\.50!\)")):
                # print_table writes to the sys.stdout of import time: run the script
                import subprocess
                p = subprocess.run([sys.executable, os.path.join(HERE, "tsbs_queries.py"), "--table-from", f.name,
                                    "--spelling-stat", stat], capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertRegex(p.stdout, rf"tempora: {stat} ms per spelling")
                self.assertRegex(p.stdout, rf"cpu-max-all-1 +\| [^|]+\| {want}")

    def test_different_rows_across_spellings(self):
        recs = [query_rec("tempora", "cpu-max-all-1", 1.0, "date_trunc"),
                query_rec("tempora", "cpu-max-all-1", 1.0, "grafana_epoch"),
                query_rec("tempora-http", "cpu-max-all-1", 1.0, "grafana_epoch")]
        self.assertEqual(tq.different_rows(tq.pick_records(recs, by_spelling=True)), [])
        recs.append(query_rec("tempora", "cpu-max-all-1", 1.0, "cte", digest="bbbbbbbbbbbb"))
        (msg,) = tq.different_rows(tq.pick_records(recs, by_spelling=True))
        self.assertIn("'tempora cte': 'bbbbbbbbbbbb'", msg)
        self.assertIn("DIFFER", tq.spelling_rows_agree({r["spelling"]: r for r in recs[:1] + recs[3:]}))


class HttpClientTest(unittest.TestCase):
    def test_a_refused_request_does_not_poison_the_next(self):
        import socket
        with socket.socket() as sock:  # a port nothing listens on
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        client = tq.TemporaHttpClient("127.0.0.1", port, "benchmark", "date_trunc")
        p = tq.generate_params("cpu-max-all-1", 1, 123, 100, START_NS, END_NS)[0][0]
        for _ in range(2):  # the second used to fail with CannotSendRequest
            with self.assertRaises(ConnectionRefusedError):
                client.run("cpu-max-all-1", p)


class StandardSqlRowsTest(unittest.TestCase):
    """The standard text, run by DuckDB, returns the reference's rows for every type."""

    @classmethod
    def setUpClass(cls):
        import duckdb
        cls.rows = rows_table()
        cls.con = duckdb.connect()
        cls.con.execute("SET TimeZone = 'UTC'")
        import pandas
        cls.con.register("raw", pandas.DataFrame(cls.rows, columns=["t"] + tq.ROW_COLUMNS[1:]))
        cls.con.execute(f"CREATE TABLE cpu AS SELECT make_timestamp(t // 1000)::TIMESTAMPTZ AS time, "
                        f"{', '.join(tq.TAGS + tq.FIELDS)} FROM raw")

    def test_every_type_matches_the_reference(self):
        for qt in tq.QUERY_TYPES:
            params, _ = tq.generate_params(qt, 3, 123, HOSTS, START_NS, END_NS)
            for i, p in enumerate(params):
                with self.subTest(qt=qt, run=i):
                    got = self.con.execute(tq.standard_sql(qt, p)).fetchall()
                    want = reference(qt, p, self.rows)
                    self.assertTrue(want, "the reference finds rows, so an empty answer would fail")
                    self.assertEqual(len(got), len(want))
                    self.assertEqual(tq.digest_rows(got), tq.digest_rows(want))

    def test_every_spelling_duckdb_takes_matches_the_reference(self):
        spellings = tq.SPELLING_SYSTEMS["duckdb"]
        self.assertGreaterEqual(len(spellings), 6)
        for qt in BUCKETED:
            params, _ = tq.generate_params(qt, 2, 123, HOSTS, START_NS, END_NS)
            for i, p in enumerate(params):
                want = tq.digest_rows(reference(qt, p, self.rows))
                for sp in spellings:
                    with self.subTest(qt=qt, run=i, spelling=sp):
                        got = self.con.execute(tq.standard_sql(qt, p, sp)).fetchall()
                        self.assertEqual(tq.digest_rows(tq.normalise_rows(qt, got, sp)), want)


if __name__ == "__main__":
    unittest.main()
