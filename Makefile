# The suite's named targets (README.md, "Two commands"; .ci/run runs `make ci`). Each is one
# step of what CI runs, so that a failure there is one `make TARGET` here.
#
#   make lint       ruff check and ruff format --check
#   make typecheck  mypy over tiptop/, tests/, build_backend/ and benchmarks/ (pyproject.toml [tool.mypy])
#   make unit       the fast room: fakes, hand-built frames, no processes
#   make system     the real kernel, tiptop in subprocesses, tmux, Prometheus where installed
#   make test       both rooms: the README's test command
#   make slow       the recording fuzz at 10,000 cases (1,000 in `make test`)
#   make mutate     a one-event change to 40 built-in screen columns must each fail a test
#   make cpus       the CPU-dependent tests as on each CPU of tests/data/cpuinfo
#   make ci         lint typecheck test slow mutate cpus
#
# PYTHON is the interpreter of the environment the project is installed in.

PYTHON ?= python3
PYTEST = $(PYTHON) -m pytest -q
SOURCES = tiptop tests benchmarks build_backend

# The tests whose outcome depends on the CPU model (the screens, their variants, --why's
# choice, what --check and the live title say), run again per cpuinfo file: the suite must
# pass on any CPU (tests/support/as_cpu.py).
CPU_TESTS = tests/system/test_why.py tests/system/test_no_pmu_line.py \
	tests/system/test_check_variants.py tests/system/test_cli.py tests/system/test_cli_run.py \
	tests/system/test_live_tmux.py tests/system/test_diagnose.py tests/system/test_selftest.py \
	tests/system/test_startup.py
# Every CPU of tests/data/cpuinfo (its README lists them): Intel 06_A7 without a PMU (this
# project's VM), QEMU's generic EPYC (17_01, no top-down screen), AMD Zen 4 (19_11), Arm
# Neoverse N2 (41_D49), and the Intel, Ampere and HiSilicon models of the built-in screens.
CPUS = $(filter-out README.md,$(notdir $(wildcard tests/data/cpuinfo/*)))

.PHONY: lint typecheck unit system test slow mutate cpus ci $(CPUS)

lint:
	$(PYTHON) -m ruff check $(SOURCES)
	$(PYTHON) -m ruff format --check $(SOURCES)

typecheck:
	$(PYTHON) -m mypy

unit:
	$(PYTEST) tests/unit

system:
	$(PYTEST) tests/system

test:
	$(PYTEST)

slow:
	TIPTOP_FUZZ_CASES=10000 $(PYTEST) tests/system/test_recording_fuzz.py

# 40 columns drawn with a fixed seed; `$(PYTHON) -m tests.mutate_columns` alone runs every one.
mutate:
	$(PYTHON) -m tests.mutate_columns --sample 40

cpus: $(CPUS)

$(CPUS):
	TIPTOP_TEST_CPUINFO=tests/data/cpuinfo/$@ $(PYTEST) $(CPU_TESTS)

ci: lint typecheck test slow mutate cpus
