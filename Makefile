# Two entry points: `make demo` and `make test`. Each creates .venv if missing.
# torch is pinned here (the CPU wheel this machine has); the package itself
# asks only for a range, for real users.
#
# PY=3.12 or PY=3.13 (`make test PY=3.12`) runs on that Python instead, in a
# venv kept outside the clone (~/.cache/dyndbg/venv-3.12) so that later runs
# reuse it: torch 2.13.0 for those comes from the package registry, as its
# CUDA build (about 4.8 GB in the venv; it runs on the CPU).
PYTHON ?= python3
PY     ?=
TORCH  := torch==2.13.0
ifeq ($(PY),)
VENV   := .venv
BASE   := $(PYTHON)
else
VENV   := $(HOME)/.cache/dyndbg/venv-$(PY)
BASE    = $(shell .ci/find-python $(PY))
endif
BIN    := $(VENV)/bin

.PHONY: demo test bench venv

venv:
	@test -n "$(BASE)" || { echo "make: no Python $(PY) on this machine"; exit 3; }
	@.ci/make-venv $(VENV) $(BASE) $(TORCH)

demo: venv
	$(BIN)/python -m dyndbg samples/graph_break.py

test: venv
	$(BIN)/python -m pytest -q -n 2 tests

bench: venv
	$(BIN)/python bench/overhead.py
