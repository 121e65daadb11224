# beliefgate developer targets. `make demo` and `make test` are all a newcomer needs.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-core
BENCH_STAMP := $(VENV)/.installed-bench
export SDL_AUDIODRIVER ?= dummy
export PYGAME_HIDE_SUPPORT_PROMPT := 1

.PHONY: demo test test-slow test-all bench install clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[test,serve,sensitivity,data,dist]"
	touch $(STAMP)

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e ".[test,serve,sensitivity,data,dist,bench]"
	touch $(BENCH_STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/beliefgate demo

test: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m "slow"

test-all: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(BENCH_STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
