# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test bench install clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# The demo: four weeks of a Philly-like workload, its summary, four policies compared at 4x the
# arrival rate, the characterisation report of the trace and of the FIFO run, and the report of the
# simulated runs (their queueing: the generated trace itself never waits).
demo: $(STAMP)
	$(BIN)/dlcluster synth --preset philly --days 28 --seed 1 -o demo-out/philly-28d.parquet
	$(BIN)/dlcluster info demo-out/philly-28d.parquet
	$(BIN)/dlcluster simulate demo-out/philly-28d.parquet --policy fifo,sjf,qssf,srtf --estimates lgbm \
		--load 4 -o demo-out/sim
	$(BIN)/dlcluster characterize demo-out/philly-28d.parquet --sim-jobs demo-out/sim/fifo/jobs.parquet \
		-o demo-out/report
	$(BIN)/dlcluster report demo-out/sim -o demo-out/sim-report
	@echo "open demo-out/report/index.html (the trace) and demo-out/sim-report/index.html (the runs)"

# the type check runs first; the tests run even when it fails, and either failing fails the target
test: $(STAMP)
	@status=0; \
	echo "$(BIN)/mypy src/dlcluster/predict src/dlcluster/sim src/dlcluster/services src/dlcluster/sweep"; \
	$(BIN)/mypy src/dlcluster/predict src/dlcluster/sim src/dlcluster/services src/dlcluster/sweep || status=1; \
	echo "$(BIN)/python -m pytest"; \
	$(BIN)/python -m pytest || status=1; \
	exit $$status

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) demo-out .pytest_cache .mypy_cache
