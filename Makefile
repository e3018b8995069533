# lgreco: the two commands a user needs are `make demo` and `make test`.
# Both install missing Debian packages (scripts/install-deps.sh), configure, build (Release) and run.
PY      ?= /usr/bin/python3
BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
LGRECO  := $(abspath $(BUILD))/tools/lgreco

.PHONY: all deps configure build build-tool test test-cpp test-python test-sanitize fuzz demo bench notebooks gpu-check clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	@echo "configured $(BUILD) (Release)"

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# Only the lgreco binary and the Python native module (no test executables): what the demo needs.
build-tool: configure
	@cmake --build $(BUILD) -j $(JOBS) --target lgreco_demo_targets

test: build
	@$(MAKE) --no-print-directory test-cpp test-python

test-cpp:
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# pytest-xdist (Debian python3-pytest-xdist) runs the Python tests on $(JOBS) workers, a test
# file per worker at a time (--dist loadscope: module fixtures are built once); without it, serially.
# pytest-timeout (python3-pytest-timeout): a test still running after 15 min (the slowest takes
# ~1 min) fails with its stack instead of hanging the run.
PYTEST_JOBS = $(shell $(PY) -c 'import xdist' 2>/dev/null && echo "-n $(JOBS) --dist loadscope") \
              $(shell $(PY) -c 'import pytest_timeout' 2>/dev/null && echo "--timeout 900")

test-python:
	LGRECO_BIN=$(LGRECO) PYTHONPATH=$(abspath python) $(PY) -m pytest -q $(PYTEST_JOBS) tests/python

# C++ tree (CUDA off) with AddressSanitizer + UndefinedBehaviorSanitizer in its own build folder,
# then every CTest test there and the bad-input corpus against its lgreco binary; any sanitizer
# report fails the run (cmake/LgrecoSanitize.cmake). -O1 -g1 keeps the build affordable in CI
# (docs/performance.md has its time). No Python native module in that tree (it would replace the
# normal build's module in python/lgreco/).
SAN_BUILD ?= build-sanitize
SAN_LGRECO := $(abspath $(SAN_BUILD))/tools/lgreco
SAN_ENV := ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1 \
           UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
test-sanitize: deps
	@cmake -S . -B $(SAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
	  -DLGRECO_CUDA=OFF -DLGRECO_PYTHON=OFF -DLGRECO_SANITIZE=address,undefined $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(SAN_BUILD) -j $(JOBS)
	@# The leave-one-system-out test repeats the corpus fit once per system; the [holdout] shard runs
	@# that same code sanitized once, so the sanitized job leaves the 21 repetitions to `make test`.
	ctest --test-dir $(SAN_BUILD) --output-on-failure -j $(JOBS) -E '_loso$$'
	$(SAN_ENV) LGRECO_BIN=$(SAN_LGRECO) PYTHONPATH=$(abspath python) $(PY) -m pytest -q -p no:cacheprovider $(PYTEST_JOBS) \
	  tests/python/test_bad_input.py tests/python/test_trace_bad_input.py

# The input readers' libFuzzer targets (fuzz/), built with Clang, ASan and UBSan in their own folder,
# each run FUZZ_SECONDS from its seeds (scripts/fuzz.sh says what it does with a failing input);
# FUZZ_TARGETS="corpus values" runs only those (default: every target of fuzz/CMakeLists.txt).
# Not part of `make test`, which replays the stored seeds and reproducers of every target instead.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
fuzz:
	@bash scripts/install-deps.sh --fuzz
	@cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DLGRECO_CUDA=OFF -DLGRECO_PYTHON=OFF \
	  -DLGRECO_MPI=OFF -DLGRECO_BUILD_TESTS=OFF -DLGRECO_SANITIZE=address,undefined -DLGRECO_FUZZ=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target lgreco_fuzz
	$(SAN_ENV) bash scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

demo: build-tool
	@bash scripts/demo.sh $(LGRECO)

bench: deps
	@cmake -S . -B $(BUILD)-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DLGRECO_BUILD_BENCH=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD)-bench -j $(JOBS)
	@echo "benchmarks built in $(BUILD)-bench/bench (see docs/performance.md for the commands)"

notebooks: build
	@bash scripts/render-notebooks.sh $(LGRECO)

gpu-check:
	@bash scripts/gpu-check.sh $(or $(OUT),gpu-results)

clean:
	rm -rf $(BUILD) $(BUILD)-bench $(SAN_BUILD) $(FUZZ_BUILD)
