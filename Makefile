# One entry point for a fresh machine: `make run` sets up .venv and runs the main job; `make test` runs the suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup run test bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,compression]'
	touch $(STAMP)

# The main job. Until the cluster runs, it writes a sample metadata log (the records a real
# KRaft cluster writes as it starts up) and decodes it with dump-log.
run: $(STAMP)
	$(VENV)/bin/pykraft sample-log --output .run/sample
	$(VENV)/bin/pykraft dump-log .run/sample/__cluster_metadata-0/00000000000000000000.log

test: $(STAMP)
	$(PY) -m pytest -q

BENCH_STAMP := $(VENV)/.bench-installed

$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,compression,bench]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(PY) benchmarks/codec.py
	$(PY) benchmarks/core.py
	$(PY) benchmarks/storage.py

clean:
	rm -rf $(VENV) .run
