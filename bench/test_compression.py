#!/usr/bin/env python3
"""Tests of the pure parts of bench/compression.py: line-protocol escaping and formatting, the
mapping of a frame (names, repeated times, order, field kinds), the records and the table.

    python3 -m unittest bench/test_compression.py      # from the repository root
    python3 bench/test_compression.py

No server and no data-set package is needed; the mapping tests need pandas.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compression as c  # noqa: E402
import report  # noqa: E402

import pandas as pd  # noqa: E402  (scripts/test-deps.sh installs it)


class EscapeTest(unittest.TestCase):
    def test_measurement_escapes_comma_space_backslash_not_equals(self):
        self.assertEqual(c.escape_measurement("cpu load,x=1"), "cpu\\ load\\,x=1")
        self.assertEqual(c.escape_measurement("a\\b"), "a\\\\b")

    def test_key_escapes_comma_equals_space(self):
        self.assertEqual(c.escape_key("a=b c,d"), "a\\=b\\ c\\,d")
        self.assertEqual(c.escape_key("plain_key"), "plain_key")

    def test_newline_is_refused(self):
        for f in (c.escape_key, c.escape_measurement):
            with self.assertRaises(ValueError):
                f("a\nb")


class FormatValueTest(unittest.TestCase):
    def test_floats_round_trip_and_nulls(self):
        self.assertEqual(c.format_value(22.59, "float"), "22.59")
        self.assertEqual(c.format_value(258, "float"), "258.0")
        self.assertEqual(float(c.format_value(4.186662803811, "float")), 4.186662803811)
        self.assertEqual(c.format_value(1e-05, "float"), "1e-05")
        self.assertIsNone(c.format_value(float("nan"), "float"))
        self.assertIsNone(c.format_value(None, "float"))
        with self.assertRaises(ValueError):
            c.format_value(math.inf, "float")

    def test_integers_booleans_strings(self):
        self.assertEqual(c.format_value(-1116, "integer"), "-1116i")
        self.assertEqual(c.format_value(True, "boolean"), "true")
        self.assertEqual(c.format_value('say "hi" \\ ok', "string"), '"say \\"hi\\" \\\\ ok"')
        with self.assertRaises(ValueError):
            c.format_value(1, "decimal")

    def test_pandas_nulls_and_numpy_scalars(self):
        self.assertIsNone(c.format_value(pd.NA, "integer"))
        ints = pd.Series([5, None], dtype="Int64").tolist()
        self.assertEqual([c.format_value(v, "integer") for v in ints], ["5i", None])
        self.assertEqual(c.format_value(pd.Series([7]).iloc[0], "integer"), "7i")


class LineProtocolTest(unittest.TestCase):
    def test_lines_with_tags_sorted_and_nulls_left_out(self):
        lines = c.line_protocol(
            "flights", {"origin": ["LAS", "A B"], "destination": ["PHL", None]},
            {"delay": [33, None], "x y": [1.5, 2.0]}, {"delay": "integer", "x y": "float"}, [978307260, 978307261])
        self.assertEqual(lines, ["flights,destination=PHL,origin=LAS delay=33i,x\\ y=1.5 978307260",
                                 "flights,origin=A\\ B x\\ y=2.0 978307261"])

    def test_no_tags(self):
        lines = c.line_protocol("glucose", {}, {"isig": [float("nan")], "glucose": [258]},
                                {"isig": "float", "glucose": "integer"}, [1269424260])
        self.assertEqual(lines, ["glucose glucose=258i 1269424260"])

    def test_row_without_fields_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "row 2"):
            c.line_protocol("t", {}, {"v": [1.0, None]}, {"v": "float"}, [1, 2])


class NamesTest(unittest.TestCase):
    def test_sanitize(self):
        self.assertEqual(c.sanitize("Alb uncert (code)"), "alb_uncert_code")
        self.assertEqual(c.sanitize("Zenith lum (cd/m^2)"), "zenith_lum_cd_m_2")
        self.assertEqual(c.sanitize("Adj Close"), "adj_close")
        self.assertEqual(c.sanitize("2x"), "c_2x")

    def test_unique_names_avoid_collisions_and_time(self):
        self.assertEqual(c.unique_names(["A b", "a-b", "Time", "a_b"]), ["a_b", "a_b_2", "time_2", "a_b_3"])


class PrepareTest(unittest.TestCase):
    def frame(self):
        return pd.DataFrame({
            "date": pd.to_datetime(["2001-01-01 00:01", "2001-01-01 00:01", "2001-01-01 00:00",
                                    "2001-01-01 00:01", "2001-01-01 00:01"]),
            "Origin": ["LAS", "LAS", "LAS", "ATL", "LAS"],
            "Delay": [33, 19, -5, 14, 7],
            "Dist (mi)": [2176.0, 2176.0, 2176.0, None, 2176.0],
        })

    def test_mapping_moves_repeats_sorts_and_types(self):
        out, kinds, shifted = c.prepare(self.frame(), "date", ["Origin"], ["Delay", "Dist (mi)"])
        self.assertEqual(list(out.columns), ["time", "origin", "delay", "dist_mi"])
        self.assertEqual(kinds, {"delay": "integer", "dist_mi": "float"})
        self.assertEqual(shifted, 2)  # the 2nd and 3rd LAS rows at 00:01
        self.assertEqual(str(out["time"].dt.tz), "UTC")
        got = [(o, t.strftime("%H:%M:%S"), d) for o, t, d in zip(out["origin"], out["time"], out["delay"])]
        self.assertEqual(got, [("ATL", "00:01:00", 14), ("LAS", "00:00:00", -5), ("LAS", "00:01:00", 33),
                               ("LAS", "00:01:01", 19), ("LAS", "00:01:02", 7)])
        self.assertFalse(out.duplicated(["origin", "time"]).any())
        self.assertEqual(c.count_values(out, list(kinds)), 9)  # 5 x 2 less one null

    def test_shift_that_hits_another_row_stops(self):
        f = pd.DataFrame({"t": pd.to_datetime(["2001-01-01 00:00:00", "2001-01-01 00:00:00",
                                               "2001-01-01 00:00:01"]), "v": [1.0, 2.0, 3.0]})
        with self.assertRaises(c.BenchError):
            c.prepare(f, "t", [], ["v"])

    def test_nullable_integers_stay_integers(self):
        f = pd.DataFrame({"t": pd.to_datetime(["2001-01-01", "2001-01-02"]), "s": [703165, 703165],
                          "n": pd.Series([1, None], dtype="Int64")})
        out, kinds, _ = c.prepare(f, "t", ["s"], ["n"])
        self.assertEqual(kinds, {"n": "integer"})
        self.assertEqual(out["s"].tolist(), ["703165", "703165"])
        ns = c.time_ns(out["time"])
        self.assertEqual(ns.tolist(), [978307200 * 10**9, 978393600 * 10**9])
        lines = c.line_protocol("t", {"s": out["s"].tolist()[:1]}, {"n": out["n"].tolist()[:1]}, kinds,
                                (ns // 10**9).tolist()[:1])
        self.assertEqual(lines, ["t,s=703165 n=1i 978307200"])
        with self.assertRaises(ValueError):  # the second row has no field
            c.line_protocol("t", {"s": out["s"].tolist()}, {"n": out["n"].tolist()}, kinds, (ns // 10**9).tolist())

    def test_text_column_is_not_a_field(self):
        with self.assertRaises(ValueError):
            c.field_kind(pd.Series(["a"]).dtype)


class PrecisionTest(unittest.TestCase):
    def test_coarsest_exact_precision(self):
        self.assertEqual(c.precision_for([60 * 10**9, 3 * 10**9]), ("s", 10**9))
        self.assertEqual(c.precision_for([10**9, 5 * 10**6]), ("ms", 10**6))
        self.assertEqual(c.precision_for([10**9, 7]), ("ns", 1))


class RecordTest(unittest.TestCase):
    def test_record_fields_and_report_accepts_it(self):
        r = c.make_record("bokeh glucose", "tempora", 504803, 103501, 52281, 315938, files=200, wal_bytes=None)
        self.assertEqual(r["kind"], "compression")
        self.assertAlmostEqual(r["bytes_per_value"], 504803 / 103501, places=5)
        self.assertEqual((r["bytes"], r["values"], r["rows"], r["source_bytes"], r["files"]),
                         (504803, 103501, 52281, 315938, 200))
        self.assertNotIn("wal_bytes", r)  # None is left out
        parsed = report.parse_line(json.dumps(r), "x:1")
        self.assertEqual(parsed["system"], "tempora")

    def test_no_values_is_an_error(self):
        with self.assertRaises(ValueError):
            c.make_record("d", "csv", 10, 0, 0, 0)

    def test_table_ratio_is_peer_over_tempora(self):
        recs = [c.make_record("d", "tempora", 200, 100, 10, 50), c.make_record("d", "parquet-zstd", 300, 100, 10, 50),
                c.make_record("e", "csv", 10, 10, 1, 1)]
        lines = c.format_table(recs).splitlines()
        self.assertIn("baseline", lines[2])
        self.assertTrue(lines[3].rstrip().endswith("1.50"), lines[3])
        self.assertTrue(lines[4].rstrip().endswith("-"), lines[4])


class FilesTest(unittest.TestCase):
    def test_categories_crowded_regions_and_footer(self):
        with tempfile.TemporaryDirectory() as d:
            def put(rel, data=b"x"):
                p = os.path.join(d, rel)
                os.makedirs(os.path.dirname(p), exist_ok=True)
                with open(p, "wb") as f:
                    f.write(data)
            put("databases.json")
            put("db/wal/0/1.wal")
            put("db/manifest/1.edit")
            put("db/data/t0/p1/b0/1.parquet", b"PAR1" + b"d" * 10 + (6).to_bytes(4, "little") + b"PAR1")
            put("db/data/t0/p1/b0/1.tidx")
            put("tempora.pid")
            files = c.tempora_files(d)
            self.assertEqual({k: len(v) for k, v in files.items()},
                             {"data": 1, "index": 1, "manifest": 1, "catalog": 1, "wal": 1, "other": 1})
            self.assertEqual(c.parquet_footer_bytes(files["data"][0]), 14)
            self.assertEqual(c.crowded_regions(d), 0)
            put("db/data/t0/p1/b0/2.parquet")
            self.assertEqual(c.crowded_regions(d), 1)


class ErrorsTest(unittest.TestCase):
    def test_missing_package_names_data_set_and_install_command(self):
        with self.assertRaisesRegex(c.BenchError, r"'glucose'.*pip install no_such_pkg_xyz"):
            c.need("no_such_pkg_xyz", "glucose", "python3 -m pip install no_such_pkg_xyz")

    def test_missing_vega_datasets_says_npm_install(self):
        with tempfile.TemporaryDirectory() as d:
            args = argparse.Namespace(vega_datasets=d, work_dir=d)
            old = os.getcwd()
            os.chdir(d)
            try:
                with self.assertRaisesRegex(c.BenchError, r"'flights'.*npm install --prefix .* vega-datasets@"):
                    c.vega_dir(args)
            finally:
                os.chdir(old)

    def test_unknown_data_set_is_refused(self):
        with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()) as err:
            c.parse_args(["--datasets", "tmy3,nope", "--systems", "csv"])
        self.assertIn("unknown data set nope", err.getvalue())
        a = c.parse_args(["--datasets", "glucose", "--systems", "csv,csv.gz"])
        self.assertEqual((a.datasets, a.systems), (["glucose"], ["csv", "csv.gz"]))


if __name__ == "__main__":
    unittest.main()
