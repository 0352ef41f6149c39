# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test bench install clean

# the modules setup.py compiles with mypyc (where a C compiler is at hand): a change to one rebuilds them, as the
# compiled module, not its source, is what Python imports
COMPILED := $(shell sed -n 's/^ *"\(src\/[^"]*\.py\)",$$/\1/p' setup.py)

$(STAMP): pyproject.toml setup.py $(COMPILED)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# The demo: two weeks of a Helios-Venus-like workload: its summary, how well the duration estimators predict
# it, four policies at twice the arrival rate with the report of their runs, the characterisation report of
# the trace, then a sweep of five policies with and without CES at two loads and its comparison report.
demo: $(STAMP)
	$(BIN)/dlcluster synth --preset helios-venus --days 14 --seed 1 -o demo-out/venus-14d.parquet
	$(BIN)/dlcluster info demo-out/venus-14d.parquet
	$(BIN)/dlcluster predict eval demo-out/venus-14d.parquet --estimator history
	$(BIN)/dlcluster predict eval demo-out/venus-14d.parquet --estimator lgbm
	$(BIN)/dlcluster simulate demo-out/venus-14d.parquet --policy fifo,sjf,qssf,srtf --estimates lgbm \
		--load 2 -o demo-out/sim
	$(BIN)/dlcluster report demo-out/sim -o demo-out/sim-report
	$(BIN)/dlcluster characterize demo-out/venus-14d.parquet --sim-jobs demo-out/sim/fifo/jobs.parquet \
		-o demo-out/report
	$(BIN)/dlcluster sweep examples/sweeps/demo.toml -o demo-out/sweep
	$(BIN)/dlcluster compare demo-out/sweep -o demo-out/comparison
	@echo "open demo-out/comparison/index.html (the sweep), demo-out/sim-report/index.html (the runs)" \
		"and demo-out/report/index.html (the trace)"

# the type check runs first; the tests run even when it fails, and either failing fails the target. The tests run
# on every core (pytest-xdist), each test file in one worker: a file's module fixtures (a simulated Philly window, a
# fitted model) are then built once.
test: $(STAMP)
	@status=0; \
	echo "$(BIN)/mypy src/dlcluster/cli src/dlcluster/predict src/dlcluster/sim src/dlcluster/services src/dlcluster/sweep"; \
	$(BIN)/mypy src/dlcluster/cli src/dlcluster/predict src/dlcluster/sim src/dlcluster/services src/dlcluster/sweep || status=1; \
	echo "$(BIN)/python -m pytest -n auto --dist loadfile"; \
	$(BIN)/python -m pytest -n auto --dist loadfile || status=1; \
	exit $$status

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) demo-out .pytest_cache .mypy_cache build
	find src -name '*.so' -delete
