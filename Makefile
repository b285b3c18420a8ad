# aeron-latency: `make probe` runs the main job, `make test` runs every test.
# Both run an idempotent bootstrap first (scripts/bootstrap.sh) that installs what a fresh
# Debian/Ubuntu machine lacks: capnproto, libclang-dev, uuid-dev, libbsd-dev, and CMake >= 3.30
# (from PyPI into .tools/ when the system's is older), passed to the build as CMAKE.

SHELL := /bin/bash
CARGO ?= cargo
# Evaluated when a recipe runs, i.e. after the bootstrap installed it.
WITH_CMAKE = CMAKE="$$(scripts/bootstrap.sh --print-cmake)"

# `make probe` settings (override on the command line: make probe DURATION=30 RATE=100000)
DURATION ?= 10
RATE ?= 10000
MSG_SIZE ?= 128
RESULTS ?= results
# As root the jitter tests must exercise perf, not skip it (set REQUIRE_PERF=0 to allow skipping).
REQUIRE_PERF ?= $(shell [ "$$(id -u)" = 0 ] && echo 1 || echo 0)

.PHONY: bootstrap build probe jitter-overhead test lint bench fmt clean

bootstrap:
	@scripts/bootstrap.sh

build: bootstrap
	$(WITH_CMAKE) $(CARGO) build --release -p latency-probe

probe: build
	@mkdir -p $(RESULTS)
	./target/release/latency-probe --duration $(DURATION) --rate $(RATE) --msg-size $(MSG_SIZE) --json $(RESULTS)/probe.json
	@echo "JSON report: $(RESULTS)/probe.json"

# p50 with and without the jitter diagnostics, alternating runs (README "Reading the jitter report").
jitter-overhead: build
	scripts/jitter-overhead.py

test: bootstrap
	$(CARGO) fmt --all -- --check
	$(WITH_CMAKE) $(CARGO) clippy --workspace --all-targets -- -D warnings
	$(WITH_CMAKE) LATENCY_PROBE_REQUIRE_PERF=$(REQUIRE_PERF) $(CARGO) test --workspace
	$(WITH_CMAKE) $(CARGO) bench --workspace --no-run

bench: bootstrap
	$(WITH_CMAKE) $(CARGO) bench --workspace

fmt:
	$(CARGO) fmt --all

clean:
	$(CARGO) clean
