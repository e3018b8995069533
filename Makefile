# lgreco: the two commands a user needs are `make demo` and `make test`.
# Both install missing Debian packages (scripts/install-deps.sh), configure, build (Release) and run.
PY      ?= /usr/bin/python3
BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
LGRECO  := $(abspath $(BUILD))/tools/lgreco

.PHONY: all deps configure build test test-cpp test-python demo bench notebooks gpu-check clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	@echo "configured $(BUILD) (Release)"

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	@$(MAKE) --no-print-directory test-cpp test-python

test-cpp:
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

test-python:
	LGRECO_BIN=$(LGRECO) PYTHONPATH=$(abspath python) $(PY) -m pytest -q tests/python

# The demo needs only the lgreco binary (the Python side runs from python/ without the native module).
demo: configure
	@cmake --build $(BUILD) -j $(JOBS) --target lgreco
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
	rm -rf $(BUILD) $(BUILD)-bench
