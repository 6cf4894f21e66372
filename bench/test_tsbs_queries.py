#!/usr/bin/env python3
"""Tests of bench/tsbs_queries.py: the thirteen query types' parameters, their texts in every
dialect, and the rows of the standard SQL checked against a plain-Python reference on DuckDB.

    python3 -m unittest bench/test_tsbs_queries.py      # from the repository root

The cross-system check (the same rows from Tempora and DuckDB) is the quick benchmark's
(bench/quick.sh); this file checks that the standard text asks what each TSBS type asks, by
computing the answer a second way.
"""
from __future__ import annotations

import os
import random
import re
import sys
import unittest
from datetime import datetime, timezone

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


if __name__ == "__main__":
    unittest.main()
