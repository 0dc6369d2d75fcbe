# Two entry points: `make run` (the main job on the shipped example data) and `make test`.
# Both create .venv on first use. torch is pinned to the CPU wheel here; in your own
# environment install rewardrouter next to the torch build you already have.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUNTIME := $(VENV)/.runtime
STAMP := $(VENV)/.installed
TORCH_SPEC ?= torch==2.13.0
# Released trainer packages the integration tests drive, installed without their dependency
# pins (which would replace torch and transformers); what their tested code imports is the
# `frameworks` extra. A constraints file keeps every install on $(TORCH_SPEC).
FRAMEWORKS := verl==0.9.1 openrlhf==0.11.2 tensordict==0.10.0
# BFCL's checker, executor and test data, which the tool-call tests grade beside
# `tool_call_format` and `tool_success`, without its dependencies (every model vendor's client):
# what its AST checker and the executor's math and file-system tools import is here already.
BFCL := bfcl-eval==2026.3.23

.PHONY: run test test-quick lint schema bench clean bubblewrap

# The code sandbox's walls: bubblewrap (Debian's `bubblewrap`). Installed here when this user
# may (root with apt-get); otherwise the line says how, and `kind: code` refuses to compile
# until it is there (or `isolation: best_effort` is set).
bubblewrap:
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		{ apt-get install -y -qq bubblewrap >/dev/null 2>&1 || \
		  { apt-get update -qq >/dev/null && apt-get install -y -qq bubblewrap >/dev/null; }; }; } || \
		echo "note: bubblewrap is not installed; the code sandbox needs it (apt-get install bubblewrap)"
	@command -v bwrap >/dev/null && echo "code sandbox: $$(bwrap --version)" || true

# What `make run` needs: rewardrouter, its runtime dependencies and IFEval's checks (the
# shipped example data has an instruction-following route), nothing else. The checks are four
# modules of lm-eval that need none of lm-eval's own dependencies (datasets, pandas, pyarrow,
# scikit-learn): lm-eval comes without them, and the `ifeval-lean` extra brings what the
# checks import; `make test` adds them (the full lm-eval is the tests' reference). --no-compile:
# Python caches the bytecode of the modules a run imports, not of every installed one.
LM_EVAL_SPEC := lm-eval>=0.4.13
RUNTIME_PIP := $(BIN)/pip install --quiet --no-compile
$(RUNTIME): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(RUNTIME_PIP) --upgrade pip
	$(RUNTIME_PIP) "$(TORCH_SPEC)"
	echo "$(TORCH_SPEC)" > $(VENV)/constraints.txt
	$(RUNTIME_PIP) -c $(VENV)/constraints.txt -e ".[ifeval-lean]"
	$(RUNTIME_PIP) --no-deps "$(LM_EVAL_SPEC)"
	touch $(RUNTIME)

# What `make test` and `make lint` add: test and lint tools, and the trainers' packages; then
# the bytecode of what $(RUNTIME) installed without it, so that the suite's many interpreters
# do not each compile torch and sympy (with PYTHONDONTWRITEBYTECODE set, none would cache it).
# As with pip's own compiling, a file that this Python cannot compile (torch's samples written
# for newer Pythons) is skipped.
$(STAMP): $(RUNTIME)
	$(BIN)/pip install --quiet -c $(VENV)/constraints.txt -e ".[dev,frameworks,docs,verifiers]"
	$(BIN)/pip install --quiet --no-deps $(FRAMEWORKS) $(BFCL)
	$(BIN)/python -m compileall -qq -j 0 $(VENV)/lib || true
	touch $(STAMP)

run: $(RUNTIME) bubblewrap
	$(BIN)/rewardrouter router=mixed

# Two workers, each test file on one of them (a file's servers and clusters are its own), and the
# 10 slowest tests at the end. Bytecode is written even where PYTHONDONTWRITEBYTECODE is set: the
# suite starts hundreds of interpreters (workers, commands, servers, Ray actors) that would each
# compile rewardrouter, and each pytest worker would rewrite every test module again.
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -n 2 --dist loadfile --durations=10

# Every test, the files with slow tests first (tests/conftest.py orders them; xdist keeps that
# order).
test: $(STAMP) bubblewrap
	$(PYTEST) --no-loadscope-reorder

# While working: the files without slow tests (no Ray, verl, served commands, sandbox runs or
# trainer steps); `make test` runs everything and is what CI runs.
test-quick: $(STAMP) bubblewrap
	$(PYTEST) -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check rewardrouter tests benchmarks
	$(BIN)/ruff format --check rewardrouter tests benchmarks
	$(BIN)/mypy

# The manual (docs/ and mkdocs.yml) as a site in site/; a warning (a broken link, anchor or API
# reference) fails the build. It needs the runtime (the API reference imports the package) and
# the `docs` extra, not the test tools and trainers' packages of $(STAMP).
DOCS_STAMP := $(VENV)/.docs
$(DOCS_STAMP): $(RUNTIME)
	$(RUNTIME_PIP) -c $(VENV)/constraints.txt -e ".[ifeval-lean,docs]"
	touch $(DOCS_STAMP)

.PHONY: docs
docs: $(DOCS_STAMP)
	$(BIN)/mkdocs build --strict

schema: $(STAMP)
	$(BIN)/python -m rewardrouter.schema --write

clean:
	rm -rf $(VENV) build dist *.egg-info outputs multirun site
