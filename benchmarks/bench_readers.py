"""Reader benchmarks (issue 2): a full-size Helios Saturn look-alike and a 117k-job Philly log.

Run: ``.venv/bin/python -m benchmarks.bench_readers``. Generated inputs are cached in
``bench-out/``. Each figure is one fresh process: CPU seconds (user + sys, every thread) of
the read alone (inside the process) and of the whole command first, wall seconds second,
the process's peak RSS, and jobs read per CPU second of the read.
"""

from __future__ import annotations

import json

from benchmarks._measure import (
    WORK,
    Table,
    command_measured,
    dlcluster,
    ensure,
    python_snippet_measured,
)

READ = (
    "import json, time\n"
    "t, c = time.perf_counter(), time.process_time()\n"
    "from dlcluster.io import read_trace\n"
    "tr = read_trace({path!r}, format={fmt!r})\n"
    "print(json.dumps({{'jobs': tr.jobs.height, 'read_cpu_s': time.process_time() - c,\n"
    "                   'read_s': time.perf_counter() - t}}))\n"
)
# the read alone (inside the process), then the whole process; jobs/CPU s is per CPU second of the read
COLUMNS = (("reader", 34), ("jobs", 11, ",d"), ("read CPU s", 12, ".2f"), ("read wall s", 13, ".2f"),
           ("jobs/CPU s", 12, ",.0f"), ("proc CPU s", 12, ".2f"), ("proc wall s", 13, ".2f"), ("peak MiB", 10, ",.0f"),
           ("target (read)", 22))


def bench_read(table: Table, label: str, path: str, fmt: str, target_s: float, target_mib: float | None) -> dict:
    """Time one reader in a fresh process and print a row of figures."""
    m = python_snippet_measured(READ.format(path=path, fmt=fmt))
    res = json.loads(m.out)
    target = f"< {target_s:g} s" + (f", < {target_mib:,.0f} MiB" if target_mib else "")
    table.row(label, res["jobs"], res["read_cpu_s"], res["read_s"], res["jobs"] / res["read_cpu_s"], m.cpu, m.wall,
              m.peak_mib, target)
    return {"label": label, **res, "process_cpu_s": m.cpu, "process_s": m.wall, "peak_mib": m.peak_mib}


def main() -> list[dict]:
    """Generate the inputs once, then measure each reader."""
    saturn = ensure(WORK / "saturn-helios" / "cluster_log.csv",
                    dlcluster("synth", "--preset", "helios-saturn", "--days", "183", "--seed", "7",
                              "--format", "helios", "-o", str(WORK / "saturn-helios"))).parent
    philly = ensure(WORK / "philly-raw" / "cluster_job_log",
                    dlcluster("synth", "--preset", "philly", "--days", "137", "--load", "1.147", "--seed", "7",
                              "--format", "philly", "-o", str(WORK / "philly-raw"))).parent
    table = Table(*COLUMNS)
    results = [
        bench_read(table, "Saturn look-alike cluster_log.csv", str(saturn), "helios", 10, 2048),
        bench_read(table, "Philly cluster_job_log (streamed)", str(philly), "philly", 15, None),
    ]
    m = command_measured(dlcluster("info", str(saturn), "--json"))
    table.row("dlcluster info, Saturn look-alike", None, None, None, None, m.cpu, m.wall, m.peak_mib)
    return results


if __name__ == "__main__":
    main()
