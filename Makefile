# Two entry points: `make demo` and `make test`. Each creates .venv if missing
# (the default python3, 3.11 here, with torch 2.13.0, the CPU wheel this
# machine has). torch is pinned here; the package itself asks for a range.
#
# PY=3.12 ... 3.15 and TORCH=2.14.1 or 2.15.0 (`make test PY=3.13 TORCH=2.15.0`)
# run on that pair instead, in a venv named after both and kept outside the
# clone (~/.cache/dyndbg/venv-3.13-torch2.15.0) so that later runs reuse it;
# those torch builds come from the package registry as CUDA builds (about
# 4.8 GB a venv; they run on the CPU). Python 3.14 and 3.15 come from Debian
# sid, which needs a newer glibc than this machine's: they run inside a sid
# root made on first use (.ci/sid-run), their venvs inside it.
# TESTS= narrows the suite (`make test TESTS=tests/test_soak.py`).
PYTHON ?= python3
PY     ?=
# torch 2.15.0 is the first with wheels for Python 3.15.
TORCH  ?= $(if $(filter 3.15,$(PY)),2.15.0,2.13.0)
TESTS  ?= tests

ifeq ($(PY)$(TORCH),2.13.0)
VENV   := .venv
BASE   := $(PYTHON)
IN     :=
else
PY_USED := $(or $(PY),$(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])'))
HOST_PY := $(shell .ci/find-python $(PY_USED))
ifneq ($(HOST_PY),)
VENV   := $(HOME)/.cache/dyndbg/venv-$(PY_USED)-torch$(TORCH)
BASE   := $(HOST_PY)
IN     :=
else ifneq ($(filter 3.14 3.15,$(PY_USED)),)
VENV   := /opt/dyndbg/venv-$(PY_USED)-torch$(TORCH)
BASE   := python$(PY_USED)
IN     := .ci/sid-run
endif
endif
BIN    := $(VENV)/bin

.PHONY: demo test test-fast typecheck bench venv

venv:
	@test -n "$(VENV)" || { echo "make: no Python $(PY) on this machine"; exit 3; }
	@$(IN) .ci/make-venv $(VENV) $(BASE) torch==$(TORCH)

demo: venv
	$(IN) $(BIN)/python -m dyndbg samples/graph_break.py

test: venv
	$(IN) $(BIN)/python -m pytest -q -n 2 $(TESTS)

# The inner loop's tier, under 2 minutes: the pure unit tests and one
# end-to-end test per front end (the CLI, the editor's DAP, the terminal, the
# library's entry points, the stops while dynamo compiles). `make test
# TESTS="-m 'not slow' tests"` leaves out only the slow ones (inductor, the soak, the real model, fuzzing).
FAST_TESTS := tests/*_unit.py \
	tests/test_guards_hold.py::test_a_closure_rebinding_a_guarded_free_variable \
	tests/test_dap.py::test_launch_stops_on_entry_with_the_stack_the_cli_shows \
	tests/test_terminal.py::test_ctrl_c_clears_line_and_prompts_again \
	tests/test_entry_points.py::test_dyndbg_breakpoint_stops_after_the_call_at_the_graph_boundary \
	tests/test_symbolic_trace.py::test_first_compile_restart_graph_break_and_recompile_of_f

test-fast: venv
	$(IN) $(BIN)/python -m pytest -q -n 2 $(FAST_TESTS)

# The type checker, configured in pyproject.toml ([tool.mypy]); CI runs it
# beside the 3.11 pair.
typecheck: venv
	$(IN) $(BIN)/python -m mypy

bench: venv
	$(IN) $(BIN)/python bench/overhead.py
