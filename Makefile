# One entry point for a fresh machine: `make run` sets up .venv and runs the main job; `make test` runs the suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup setup-compiled run lint test test-compiled test-pipeline-clusters test-fast interop-java bench sim-sweep \
	report-check standalone-check clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,compression,pipeline,interop]'
	touch $(STAMP)

# The compiled build (issue 34, README "The compiled build"): a second venv, .venv-compiled, where mypyc compiles the
# typed hot modules listed in src/pykraft/cli/build_info.py to C extensions (a non-editable install: rerun after
# changing the source; the stamp depends on every file under src/). Needs a C compiler; `make setup` and `make test`
# stay the pure build and never compile anything.
CVENV := .venv-compiled
CPY := $(CVENV)/bin/python
CSTAMP := $(CVENV)/.installed
MYPY_PIN := $(shell grep -o '"mypy==[^"]*"' pyproject.toml | tr -d '"')

setup-compiled: $(CSTAMP)

$(CSTAMP): pyproject.toml setup.py $(shell find src -name '*.py')
	@command -v $${CC:-cc} >/dev/null 2>&1 || { echo "make setup-compiled: no C compiler ($${CC:-cc}) on PATH: mypyc needs one (the pure build is make setup)"; exit 1; }
	$(PYTHON) -m venv $(CVENV)
	$(CPY) -m pip install --quiet --upgrade pip
	$(CPY) -m pip install --quiet '$(MYPY_PIN)' 'setuptools>=68' wheel
	$(CPY) -m pip install --quiet '.[dev,compression,pipeline,interop,bench]'
	rm -rf build  # setuptools would reuse extensions of modules since taken off the list
	PYKRAFT_MYPYC=1 $(CPY) -m pip install --quiet --no-deps --force-reinstall --no-build-isolation .
	@cd /tmp && $(abspath $(CPY)) -c "from pykraft.cli.build_info import build_name, build_line; print(build_line()); \
	  raise SystemExit(build_name() != 'compiled')" || { echo "make setup-compiled: FAILED: no compiled module installed"; exit 1; }
	@cd /tmp && $(abspath $(CPY)) -c "import importlib; from pykraft.cli.build_info import COMPILED_MODULES; \
	  [importlib.import_module(name) for name in COMPILED_MODULES]; import pykraft.node.serve, pykraft.node.roles.broker_host" \
	  || { echo "make setup-compiled: FAILED: a compiled module does not import (traceback above)"; exit 1; }
	touch $(CSTAMP)

# The CPU-bound tiers (those `make test` runs on both cores) against the compiled build: interpreted and compiled
# behaviour must not differ. The process tiers (e2e, Spark, Java) run the same modules in server processes; run them
# with `$(CPY) -m pytest` one file at a time when needed.
test-compiled: $(CSTAMP)
	$(CVENV)/bin/pykraft --version
	$(CPY) -m pytest -q -n 2 -p no:cacheprovider -m "not ($(PROCESS_TIERS)) and not ($(OWN_TARGETS))"

# The main job: a local 3-controller quorum (real server processes on 127.0.0.1) and an observer, formatted and
# started through the CLI, a stream of records written through the leader, the quorum status printed as it runs,
# then a clean stop. Ctrl-C stops it early, cleanly. Then the Spark pipeline analyzes the nodes' directories
# (tables, image, audits) and prints the audit verdicts and where the report is.
run: $(STAMP)
	$(VENV)/bin/pykraft quickstart --dir .run/quickstart --reset --observers 1 --duration 20
	$(VENV)/bin/pykraft analyze .run/quickstart --out .run/analysis

# Ruff then mypy (configuration and the reasons for each rule in pyproject.toml); both always run, and a failure
# ends with one line naming what failed. `make test` runs it first.
LINT_PATHS := src tests benchmarks tools
lint: $(STAMP)
	@status=0; \
	echo "ruff check $(LINT_PATHS)"; $(VENV)/bin/ruff check --output-format concise $(LINT_PATHS) || status=1; \
	echo "mypy (src/pykraft; strict packages: pyproject.toml [[tool.mypy.overrides]])"; $(VENV)/bin/mypy || status=$$((status + 2)); \
	case $$status in 0) ;; 1) echo "make lint: FAILED: ruff findings above";; \
	  2) echo "make lint: FAILED: mypy errors above";; *) echo "make lint: FAILED: ruff findings and mypy errors above";; esac; \
	exit $$status

# The CPU-bound tiers (pure parts, hosts, simulator sweeps, schema fuzzing) on both cores, then the tiers that start
# server processes, the JVM or Spark one test at a time (their liveness waits assume the cores are theirs).
# Kafka's Java client (interop_java, `make interop-java`) and the pipeline over real clusters
# (`make test-pipeline-clusters`) have targets of their own: with them the suite passes 45 minutes on two cores.
PROCESS_TIERS := e2e or spark
OWN_TARGETS := interop_java or standalone or pipeline_clusters
test: $(STAMP) lint
	$(PY) -m pytest -q -n 2 -m "not ($(PROCESS_TIERS)) and not ($(OWN_TARGETS))"
	$(PY) -m pytest -q -m "($(PROCESS_TIERS)) and not ($(OWN_TARGETS))"

# The pipeline over real clusters and simulator exports it starts itself (minutes each on two cores).
test-pipeline-clusters: $(STAMP)
	$(PY) -m pytest -q -m pipeline_clusters

# The fast tier for a quick check of a change (pure core, hosts, sim scenarios): everything but the e2e processes,
# the simulator sweeps, the exhaustive schema fuzzing and Spark (markers: tests/conftest.py, pyproject.toml).
# Two workers (pytest-xdist): the tier is CPU-bound and this machine has two cores.
FAST_TIER := not e2e and not interop_java and not sim_sweep and not exhaustive and not spark and not standalone
test-fast: $(STAMP)
	$(PY) -m pytest -q -n 2 -m "$(FAST_TIER)"

# Kafka's own Java client (kafka-clients 3.9.1) and record parser against real pykraft processes: the judge of
# compatibility (tests/interop/, about 15 minutes, outside `make test`). Needs a JDK 17 (javac, java) on PATH.
interop-java: $(STAMP)
	$(PY) -m pytest -q -m interop_java tests/interop

BENCH_STAMP := $(VENV)/.bench-installed

$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,compression,pipeline,interop,bench]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(PY) benchmarks/codec.py
	$(PY) benchmarks/core.py
	$(PY) benchmarks/storage.py
	$(PY) benchmarks/net.py
	$(PY) benchmarks/quorum.py
	$(PY) benchmarks/fencing.py
	$(PY) benchmarks/paused_leader.py
	$(PY) benchmarks/produce.py
	$(PY) benchmarks/compaction.py
	$(PY) benchmarks/pipeline.py

# The report of the last `make run` opened in headless Chromium (Debian's `chromium` package, not installed by
# setup: apt-get install chromium) with the network cut off: every section, the plots, no console error.
report-check: $(STAMP)
	$(PY) tools/report_check.py .run/analysis/report.html

# `pykraft analyze --master spark://...` on a standalone master + worker started from the pip package gives the
# same summary.json as local mode (minutes of JVM start-up on 2 cores, so not part of `make test`).
standalone-check: $(STAMP)
	$(PY) -m pytest -q -m standalone tests/pipeline/test_standalone.py

# The long simulation sweep (the test suite runs 500 short seeds; this runs 2000 full-length swarm seeds).
sim-sweep: $(STAMP)
	$(VENV)/bin/pykraft sim sweep --seeds 2000 --jobs 2 --scenario swarm

clean:
	rm -rf $(VENV) $(CVENV) .run
