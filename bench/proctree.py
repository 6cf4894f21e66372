"""Process trees from /proc, for the scripts that measure a server with all its processes
(bench/rss_sampler.py: memory; bench/tsbs_queries.py: CPU time). Linux only."""
from __future__ import annotations

import os


def stat_table() -> dict[int, list[str]]:
    """Every live process: its /proc/PID/stat fields after the command name, so index 0 is the
    state, 1 the parent pid, 11-14 utime, stime, cutime, cstime (proc(5) fields 3 on)."""
    table = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:  # it ended while we looked
            continue
        table[int(d)] = st[st.rfind(")") + 2:].split()
    return table


def descendants(table: dict[int, list[str]], roots: list[int]) -> list[int]:
    """The roots and every process below them in `table`, each once, roots first."""
    children: dict[int, list[int]] = {}
    for pid, fields in table.items():
        children.setdefault(int(fields[1]), []).append(pid)
    out, stack, seen = [], list(reversed(roots)), set()
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        out.append(pid)
        stack.extend(children.get(pid, []))
    return out
