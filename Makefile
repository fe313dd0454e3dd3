# PTXBench Portal. `make run` and `make test` work on a fresh Debian/Ubuntu machine with Python 3.11+.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
# Python writes the bytecode of what it imports, once, even where the environment says not to (some machines set
# PYTHONDONTWRITEBYTECODE=1): the install compiles only what the sandboxed processes import, which run with it set
# and cannot write (scripts/compile_sandbox_bytecode.py); every other module is compiled by its first importer.
export PYTHONDONTWRITEBYTECODE :=
PY := $(VENV)/bin/python
# uv when it can be had (parallel, with pip's own configuration), else pip: scripts/install_python.sh
INSTALL := bash scripts/install_python.sh $(VENV)
RUFF := $(VENV)/bin/ruff
# pytest-xdist workers for `make test` and `make test-fast` (docs/testing.md): three on the 2-core CI machine, where
# two leave about a tenth of the cores idle while tests wait on sandboxed processes, time-outs and the browser.
TEST_WORKERS ?= 3
PYTEST_PARALLEL := -n $(TEST_WORKERS) --dist worksteal

.PHONY: run demo test test-fast test-gpu lint format migrations-check venv deps-run deps-test system-run system-test clean

$(VENV)/bin/python:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required"'
	$(PYTHON) -m venv --without-pip $(VENV)  # scripts/install_python.sh brings uv, or pip where it must

venv: $(VENV)/bin/python

# Triton and the CPU build of PyTorch (its ahead-of-time compile traces on meta tensors) so that the local
# CPU-stage workers score Triton uploads as well as CUDA ones: about 1.7 GB installed (triton ~1.0 GB, torch ~0.7 GB).
deps-run: venv
	$(INSTALL) 'torch==2.13.0' -e '.[compile,triton]'

# The CPU build of PyTorch (2.13.0 lies on local disk on our machines; an unpinned torch pulls CUDA wheels).
deps-test: venv
	$(INSTALL) 'torch==2.13.0' -e '.[compile,dev,triton]' -e ./client

# Redis, and bubblewrap: the sandbox the local workers run candidate code and the compiler in.
system-run:
	@bash scripts/ensure_debian_packages.sh redis-server=redis-server bwrap=bubblewrap

# Redis for the tests' own server; Debian's Chromium for the browser tests (Playwright drives it, no downloads);
# bubblewrap, the sandbox every candidate and compiler runs in.
system-test:
	@bash scripts/ensure_debian_packages.sh redis-server=redis-server chromium=chromium bwrap=bubblewrap

## Set everything up and serve the portal on http://127.0.0.1:8000 (Ctrl-C stops it).
run: deps-run system-run
	@bash scripts/run_portal.sh

## The synthetic demo rows (docs: README "Demo data") in the portal's database under PORTAL_DATA_DIR (default ./data),
## migrated first; DEBUG=1 as under `make run`, so no SECRET_KEY is needed (the same stored dev secret is used).
demo: deps-run
	DEBUG=$${DEBUG:-1} $(PY) manage.py migrate --noinput -v 0
	DEBUG=$${DEBUG:-1} $(PY) manage.py seed_leaderboard --demo

## Set everything up and run the whole CPU test suite (lint, type check of evaluator/, migrations check, pytest with a real Redis).
test: deps-test system-test
	$(RUFF) check .
	$(RUFF) format --check .
	$(PY) -m mypy
	DEBUG=1 $(PY) manage.py makemigrations --check --dry-run
	$(PY) -m pytest -m "not gpu" -q $(PYTEST_PARALLEL)

## The same without the heavy tests (`slow`: nvcc and Triton sweeps; `browser`: Chromium): for the edit-test loop; `make test` runs them.
test-fast: deps-test system-test
	$(RUFF) check .
	$(RUFF) format --check .
	$(PY) -m mypy
	DEBUG=1 $(PY) manage.py makemigrations --check --dry-run
	$(PY) -m pytest -m "not gpu and not slow and not browser" -q $(PYTEST_PARALLEL)

## On a GPU host (H100/H200, carry .gpu-bundle/ from scripts/fetch_gpu_bundle.sh): GPU tests, the adversarial
## corpus twice, the evaluator benchmark; a compact table on stdout, logs under $$OUT (default ./gpu-out).
test-gpu:
	bash scripts/gpu_tests.sh all

lint: venv
	$(RUFF) check . && $(RUFF) format --check .

format: venv
	$(RUFF) format . && $(RUFF) check --fix .

migrations-check: venv
	DEBUG=1 $(PY) manage.py makemigrations --check --dry-run

clean:
	rm -rf staticfiles .pytest_cache .ruff_cache
