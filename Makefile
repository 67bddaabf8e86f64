# Two entry points: `make demo` and `make test`. Each creates .venv if missing.
# torch is pinned here (the CPU wheel this machine has); the package itself
# asks only for a range, for real users.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
TORCH  := torch==2.13.0
READY  := $(VENV)/.dyndbg-installed

.PHONY: demo test bench

$(READY): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check $(TORCH)
	$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[test]'
	touch $@

demo: $(READY)
	$(BIN)/python -m dyndbg samples/graph_break.py

test: $(READY)
	$(BIN)/python -m pytest -q -n 2 tests
