"""Reader benchmarks (issue 2): a full-size Helios Saturn look-alike and a 117k-job Philly log.

Run: ``.venv/bin/python -m benchmarks.bench_readers``. Generated inputs are cached in
``bench-out/``. Each figure is one fresh process: wall seconds of the read alone (inside
the process) and of the whole command, and the process's peak RSS.
"""

from __future__ import annotations

import json

from benchmarks._measure import (
    WORK,
    command_measured,
    dlcluster,
    ensure,
    python_snippet_measured,
)

READ = (
    "import json, time\n"
    "t = time.perf_counter()\n"
    "from dlcluster.io import read_trace\n"
    "tr = read_trace({path!r}, format={fmt!r})\n"
    "print(json.dumps({{'jobs': tr.jobs.height, 'read_s': time.perf_counter() - t}}))\n"
)


def bench_read(label: str, path: str, fmt: str, target_s: float, target_mib: float | None) -> dict:
    """Time one reader in a fresh process and print a line of figures."""
    wall, rss, out = python_snippet_measured(READ.format(path=path, fmt=fmt))
    res = json.loads(out)
    line = (f"{label}: {res['jobs']:,} jobs, read {res['read_s']:.2f} s (process {wall:.2f} s), "
            f"{res['jobs'] / res['read_s']:,.0f} jobs/s, peak RSS {rss:,.0f} MiB  "
            f"[target < {target_s:g} s" + (f", < {target_mib:,.0f} MiB]" if target_mib else "]"))
    print(line, flush=True)
    return {"label": label, **res, "process_s": wall, "peak_mib": rss}


def main() -> list[dict]:
    """Generate the inputs once, then measure each reader."""
    saturn = ensure(WORK / "saturn-helios" / "cluster_log.csv",
                    dlcluster("synth", "--preset", "helios-saturn", "--days", "183", "--seed", "7",
                              "--format", "helios", "-o", str(WORK / "saturn-helios"))).parent
    philly = ensure(WORK / "philly-raw" / "cluster_job_log",
                    dlcluster("synth", "--preset", "philly", "--days", "137", "--load", "1.147", "--seed", "7",
                              "--format", "philly", "-o", str(WORK / "philly-raw"))).parent
    results = [
        bench_read("Helios Saturn look-alike cluster_log.csv", str(saturn), "helios", 10, 2048),
        bench_read("Philly cluster_job_log (streamed JSON)", str(philly), "philly", 15, None),
    ]
    wall, rss, _ = command_measured(dlcluster("info", str(saturn), "--json"))
    print(f"`dlcluster info` on the Saturn look-alike, whole process: {wall:.2f} s, peak RSS {rss:,.0f} MiB")
    return results


if __name__ == "__main__":
    main()
