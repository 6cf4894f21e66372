#!/usr/bin/env python3
"""Tests of bench/rss_sampler.py against real processes.

    python3 -m unittest bench/test_rss_sampler.py      # from the repository root

Each test starts a stand-in "server" (a Python process that waits on its standard input, with
or without a child of its own), then the sampler as a separate process, as bench/peers/setup.sh
does. Synchronisation is by pipes and process exit, never by sleeping: the server says it is up
on its stdout, the sampler says it is ready through its --ready named pipe.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLER = os.path.join(HERE, "rss_sampler.py")
sys.path.insert(0, HERE)
import report  # noqa: E402  (the schema's checker: a record must pass it)

# Waits on stdin; with a child (which also waits on its stdin) when argv[1] == "tree".
SERVER = r"""
import subprocess, sys
child = None
if sys.argv[1:] == ["tree"]:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
print("up", flush=True)
sys.stdin.read()
if child:
    child.stdin.close()
    child.wait()
"""


class SamplerTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.dir.name, "results.jsonl")
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.dir.cleanup()

    def server(self, tree: bool = False) -> subprocess.Popen:
        p = subprocess.Popen([sys.executable, "-c", SERVER] + (["tree"] if tree else []),
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.procs.append(p)
        self.assertEqual(p.stdout.readline().strip(), "up")
        return p

    def sampler(self, pid: int, phase: str = "load") -> subprocess.Popen:
        fifo = os.path.join(self.dir.name, "ready")
        os.mkfifo(fifo)
        p = subprocess.Popen([sys.executable, SAMPLER, "--pid", str(pid), "--system", "stand-in",
                              "--phase", phase, "--out", self.out, "--ready", fifo])
        self.procs.append(p)
        with open(fifo) as f:  # blocks until the sampler has its handlers in place
            self.assertEqual(f.readline().strip(), "ready")
        os.unlink(fifo)
        return p

    def records(self) -> list[dict]:
        with open(self.out) as f:
            return [json.loads(line) for line in f if line.strip()]

    def check_schema(self):
        results = report.read_results([self.out], warn=lambda msg: self.fail(msg))
        self.assertEqual(len(results.by_kind["memory"]), 1)

    def test_sigterm_writes_one_record(self):
        srv = self.server()
        s = self.sampler(srv.pid)
        s.send_signal(signal.SIGTERM)
        self.assertEqual(s.wait(timeout=30), 0)
        [rec] = self.records()
        self.assertEqual((rec["kind"], rec["system"], rec["phase"]), ("memory", "stand-in", "load"))
        self.assertEqual(rec["measure"], "VmRSS")
        self.assertEqual(rec["pid"], srv.pid)
        self.assertGreaterEqual(len(rec["samples"]), 1)
        for smp in rec["samples"]:
            self.assertGreater(smp["rss_bytes"], 1 << 20)  # a Python process: more than 1 MiB
            self.assertGreaterEqual(smp["t_s"], 0)
        ts = [smp["t_s"] for smp in rec["samples"]]
        self.assertEqual(ts, sorted(ts))
        self.check_schema()
        srv.stdin.close()
        srv.wait(timeout=30)

    def test_sigint_too(self):
        srv = self.server()
        s = self.sampler(srv.pid, phase="query")
        s.send_signal(signal.SIGINT)
        self.assertEqual(s.wait(timeout=30), 0)
        [rec] = self.records()
        self.assertEqual(rec["phase"], "query")
        srv.stdin.close()
        srv.wait(timeout=30)

    def test_process_tree_is_summed_as_pss(self):
        srv = self.server(tree=True)
        s = self.sampler(srv.pid)
        s.send_signal(signal.SIGTERM)
        self.assertEqual(s.wait(timeout=30), 0)
        [rec] = self.records()
        self.assertEqual(rec["measure"], "Pss")
        self.assertEqual(rec["processes_max"], 2)
        self.check_schema()
        srv.stdin.close()
        srv.wait(timeout=30)

    def test_server_exit_ends_sampling_with_a_record(self):
        srv = self.server()
        s = self.sampler(srv.pid)
        srv.stdin.close()  # the stand-in server exits; the sampler sees it at its next sample
        srv.wait(timeout=30)
        self.assertEqual(s.wait(timeout=30), 0)
        [rec] = self.records()
        self.assertGreaterEqual(len(rec["samples"]), 1)

    def test_appends(self):
        srv = self.server()
        for phase in ("load", "query"):
            s = self.sampler(srv.pid, phase=phase)
            s.send_signal(signal.SIGTERM)
            self.assertEqual(s.wait(timeout=30), 0)
        self.assertEqual([r["phase"] for r in self.records()], ["load", "query"])
        srv.stdin.close()
        srv.wait(timeout=30)


if __name__ == "__main__":
    unittest.main()
