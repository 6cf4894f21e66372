#!/usr/bin/env python3
"""Samples a server's resident memory until told to stop, then appends one "memory" record.

    python3 bench/rss_sampler.py --pid PID --system NAME --phase load|query|idle --out RESULTS.jsonl \\
        [--interval 0.5] [--ready FIFO]

Every --interval seconds (first sample at once) it measures the process PID and all its
descendants (the process tree, read from /proc/*/stat), and on SIGTERM or SIGINT (after one
last sample), or when PID has exited, it appends one line in the schema of bench/report.py's
docstring:

    {"kind": "memory", "system": NAME, "phase": PHASE, "samples": [{"t_s": 0.0, "rss_bytes": N}, ...],
     "measure": "VmRSS" | "Pss", "pid": PID, "interval_s": 0.5, "processes_max": K}

What is measured: a tree of one process (Tempora, QuestDB, VictoriaMetrics, InfluxDB) is its
VmRSS (/proc/PID/status). A tree of several (PostgreSQL: the postmaster, its background
processes and one backend per connection, parallel workers) is the sum of their Pss
(/proc/PID/smaps_rollup): summing VmRSS there would count the shared buffers once per process
that touched them, while Pss splits each shared page among the processes mapping it, so the
sum is the tree's real share of memory. A record whose tree had several processes at any
sample says "measure": "Pss" (also for samples when only one was alive). A process that goes
away between listing and reading is skipped.

--ready FIFO: after the signal handlers are installed, write one line to this named pipe, so a
shell can wait for the sampler to be ready to be stopped (a SIGTERM that arrives before Python
has installed its handler would kill it without a record):

    mkfifo f; python3 bench/rss_sampler.py ... --ready f & pid=$!; read -r _ <> f; rm f
    ...; kill -TERM $pid; wait $pid
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proctree import descendants, stat_table  # noqa: E402  (same directory)


class Stop(Exception):
    pass


def _raise_stop(signum, frame):
    raise Stop()


def process_tree(root: int) -> list[int]:
    """root and every descendant that is alive now (root first)."""
    return descendants(stat_table(), [root])


def _kib_field(path: str, name: str) -> int | None:
    """The value of a 'Name:   123 kB' line of a /proc file, in bytes."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(name + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return 0


def tree_memory(root: int) -> tuple[int, int, bool] | None:
    """(bytes, processes, root alive) for root's tree; None when root is gone."""
    if not os.path.exists(f"/proc/{root}"):
        return None
    pids = process_tree(root)
    if len(pids) == 1:
        v = _kib_field(f"/proc/{root}/status", "VmRSS")
        return (v, 1, True) if v is not None else None
    total, n = 0, 0
    for pid in pids:
        v = _kib_field(f"/proc/{pid}/smaps_rollup", "Pss")
        if v is None:
            v = _kib_field(f"/proc/{pid}/status", "VmRSS")  # kernels without smaps_rollup
        if v is not None:
            total += v
            n += 1
    return total, n, True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pid", type=int, required=True, help="the server's process (root of the tree)")
    ap.add_argument("--system", required=True)
    ap.add_argument("--phase", required=True, help='"load", "query" or "idle"')
    ap.add_argument("--out", required=True, help="JSON-lines file to append the record to")
    ap.add_argument("--interval", type=float, default=0.5, help="seconds between samples")
    ap.add_argument("--ready", help="named pipe to write one line to once the handlers are installed")
    args = ap.parse_args(argv)

    signal.signal(signal.SIGTERM, _raise_stop)
    signal.signal(signal.SIGINT, _raise_stop)
    samples, multi, nmax = [], False, 0
    t0 = time.monotonic()
    next_t = t0
    try:
        if args.ready:
            with open(args.ready, "w") as f:
                f.write("ready\n")
        while True:
            m = tree_memory(args.pid)
            if m is None:
                break  # the server has exited
            rss, n, _ = m
            multi |= n > 1
            nmax = max(nmax, n)
            samples.append({"t_s": round(time.monotonic() - t0, 3), "rss_bytes": rss})
            next_t += args.interval
            time.sleep(max(0.0, next_t - time.monotonic()))
    except Stop:
        pass
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Stopped: one last sample, the memory at the end of the phase (a phase shorter than the
    # interval still gets two), unless the last one is just as recent.
    t_end = round(time.monotonic() - t0, 3)
    if not samples or t_end - samples[-1]["t_s"] >= 0.05:
        m = tree_memory(args.pid)
        if m is not None:
            samples.append({"t_s": t_end, "rss_bytes": m[0]})
            multi |= m[1] > 1
            nmax = max(nmax, m[1])
    if not samples:
        print(f"rss_sampler: no sample of pid {args.pid}; no record written", file=sys.stderr)
        return 0
    rec = {"kind": "memory", "system": args.system, "phase": args.phase, "samples": samples,
           "measure": "Pss" if multi else "VmRSS", "pid": args.pid, "interval_s": args.interval,
           "processes_max": nmax}
    with open(args.out, "a") as f:
        f.write(json.dumps(rec) + "\n")
    peak = max(s["rss_bytes"] for s in samples)
    print(f"[rss_sampler] {args.system} {args.phase}: {len(samples)} samples, peak {peak / 2**20:.0f} MiB",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
