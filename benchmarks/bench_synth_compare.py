"""``dlcluster synth compare`` on the Philly table against one, four and eight generated traces (the philly preset).

Run from the project root: ``.venv/bin/python -m benchmarks.bench_synth_compare``. Each figure is one fresh process
(CPU seconds = user + sys, ``os.wait4``): the fidelity table and the queueing of FIFO and SJF at loads 2 and 3 on the
Philly VCs, and the offline report. The jobs per CPU second count every trace compared (the real one included);
the generated traces are read, compared and simulated one at a time, so the peak memory grows far less than their
number (the allocators keep some of what each trace used).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from benchmarks._measure import FIGURES, SHARED, WORK, Table, command_measured, dlcluster, ensure, figures

PHILLY = SHARED / "data" / "philly"
SEEDS = tuple(range(1, 9))
COUNTS = (1, 4, 8)
JOBS = 82_247  # the real table's jobs; a generated Philly trace of the same span has about as many


def main() -> None:
    """The command with each count of generated traces."""
    if not (PHILLY / "jobs_processed.csv").exists():
        print("../shared/data/philly is not available: skipped")
        return
    generated = [ensure(WORK / f"philly-seed{s}.parquet",
                        dlcluster("synth", "--preset", "philly", "--seed", str(s), "-o",
                                  str(WORK / f"philly-seed{s}.parquet")))
                 for s in SEEDS]
    print("synth compare: the Philly table against generated traces, queueing at loads 2 and 3, with the report")
    t = Table(("generated traces", 18), *FIGURES)
    for count in COUNTS:
        with tempfile.TemporaryDirectory() as out:
            m = command_measured(dlcluster("synth", "compare", str(PHILLY / "jobs_processed.csv"),
                                           *map(str, generated[:count]), "--cluster", str(PHILLY / "vc_nodes.csv"),
                                           "-o", str(Path(out) / "report")))
        t.row(str(count), *figures(m, JOBS * (1 + count)))


if __name__ == "__main__":
    main()
