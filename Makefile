# aeron-latency: `make probe` runs the main job, `make test` runs every test.
# Both run an idempotent bootstrap first (scripts/bootstrap.sh) that installs what a fresh
# Debian/Ubuntu machine lacks: capnproto, libclang-dev, uuid-dev, libbsd-dev, and CMake >= 3.30
# (from PyPI into .tools/ when the system's is older), passed to the build as CMAKE; and, for
# `latency-probe stages`, a Java 17 runtime and Aeron's aeron-all jar (into .tools/; optional).
# `make fuzz` (not part of `make test`) runs each cargo-fuzz target in fuzz/ for FUZZ_SECONDS on
# the nightly toolchain, installing cargo-fuzz first if it is missing (docs/reliability.md).

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
# Where the bootstrap installed Java (17 or newer) and the aeron-all jar, the stages tests must run,
# not skip.
# Expanded when the test recipe runs, i.e. after the bootstrap.
REQUIRE_JAVA ?= $(shell java -version 2>&1 | grep -qE 'version "(1[7-9]|[2-9][0-9])' && [ -f .tools/aeron-all-1.51.0.jar ] && echo 1 || echo 0)
# Where the bootstrap installed them, the tap's tests must read its logs with HdrHistogram's
# HistogramLogProcessor (Java and the HdrHistogram jar) and its Prometheus textfile with the
# Prometheus client's parser (.tools/venv), not skip.
REQUIRE_HDR_JAVA ?= $(shell java -version 2>&1 | grep -qE 'version "(1[7-9]|[2-9][0-9])' && [ -f .tools/HdrHistogram-2.2.2.jar ] && echo 1 || echo 0)
REQUIRE_PROMETHEUS ?= $(shell .tools/venv/bin/python -c 'import prometheus_client' 2>/dev/null && echo 1 || echo 0)

# `make fuzz` settings: seconds per target (libFuzzer -max_total_time), which targets
# (fuzz/fuzz_targets/*.rs), and the toolchain cargo-fuzz needs (libFuzzer and ASan need nightly).
# E.g. make fuzz FUZZ_SECONDS=60 FUZZ_TARGETS=wire_decode
FUZZ_SECONDS ?= 600
FUZZ_TARGETS ?= wire_decode wire_round_trip report_json term_reader
FUZZ_TOOLCHAIN ?= +nightly
# The oldest Rust `messaging` builds with: Cargo.toml's rust-version, read from there so the two
# cannot disagree. `make test` checks the library with it (installed first: a minute, once).
MSRV := $(shell sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)

.PHONY: bootstrap build probe jitter-overhead attach-check soak test lint bench poll-instructions fuzz fmt clean conformance loom miri calibrate

bootstrap:
	@scripts/bootstrap.sh

build: bootstrap
	$(WITH_CMAKE) $(CARGO) build --release -p latency-probe

probe: build
	@mkdir -p $(RESULTS)
	./target/release/latency-probe --duration $(DURATION) --rate $(RATE) --msg-size $(MSG_SIZE) --json $(RESULTS)/probe.json
	@echo "JSON report: $(RESULTS)/probe.json"

# p50 with and without the jitter diagnostics, alternating runs (docs/jitter.md).
jitter-overhead: build
	scripts/jitter-overhead.py

# Soak (not part of `make test`; docs/reliability.md): first messaging's fast path, 10^8
# messages through each publication read at once by our subscriber and the Aeron C client's
# (crates/messaging/examples/soak.rs), then the probe: 10^8 messages through IPC at the highest
# rate this machine sustains. Each checks none was lost, duplicated, reordered or corrupt.
# E.g. make soak MESSAGING_SOAK_ARGS="--messages 1000000" SOAK_ARGS="--messages 10000000 --rate 1000000"
soak: build
	$(WITH_CMAKE) $(CARGO) run --release -p messaging --features embedded-driver --example soak -- $(MESSAGING_SOAK_ARGS)
	scripts/soak.py $(SOAK_ARGS)

# latency-probe attach on the order gateway example (docs/probe.md, attach): a hog, a channel
# hand-off, a stall in its handler and nothing planted, 3 runs each, then attach's cost on the gateway's p50 in
# alternating rounds. E.g. make attach-check ATTACH_CHECK_ARGS="--runs 1 --cost-rounds 10"
attach-check: build
	$(WITH_CMAKE) $(CARGO) build --release --example order_gateway
	scripts/attach-check.py $(ATTACH_CHECK_ARGS)

# Calibration of `latency-probe ab` (not part of `make test`; docs/ab.md):
# 20 A/A and 20 A/B experiments (B with a planted +100 ns per message), alternating, each
# within 2 minutes; prints the false-alarm and detection rates and writes results/calibrate.json.
# E.g. make calibrate CALIBRATE_ARGS="--experiments 5 --plant-ns 200"
calibrate: build
	scripts/calibrate.py $(CALIBRATE_ARGS)

# A clean `make test` needs about 6 GiB for target/ (scripts/check-disk.sh says so up front).
test: bootstrap
	@scripts/check-disk.sh 6
	$(CARGO) fmt --all -- --check
	$(WITH_CMAKE) $(CARGO) clippy --workspace --all-targets -- -D warnings
	$(WITH_CMAKE) RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps
	@rustup run $(MSRV) rustc --version >/dev/null 2>&1 || rustup toolchain install $(MSRV) --profile minimal
	$(WITH_CMAKE) $(CARGO) +$(MSRV) check -p messaging --features tap --lib --target-dir target/msrv
	$(WITH_CMAKE) LATENCY_PROBE_REQUIRE_PERF=$(REQUIRE_PERF) LATENCY_PROBE_REQUIRE_JAVA=$(REQUIRE_JAVA) \
		TAP_REQUIRE_HDR_JAVA=$(REQUIRE_HDR_JAVA) TAP_REQUIRE_PROMETHEUS=$(REQUIRE_PROMETHEUS) $(CARGO) test --workspace
	# Paced, so the restart lands mid-stream (unpaced on 2 cores it often came after the last tick).
	$(WITH_CMAKE) $(CARGO) run -q --example order_gateway -- --ticks 20000 --restart-at 10000 --rate 100000
	# The same with --venue (the feed and the exchange as one thread), and its tap's four counts
	# checked against the ticks (the example exits 1 when they differ).
	$(WITH_CMAKE) $(CARGO) run -q --example order_gateway -- --venue --ticks 20000 --restart-at 10000 --rate 100000
	d=$$(mktemp -d) && $(WITH_CMAKE) $(CARGO) run -q --example order_gateway -- --venue --tap $$d/tap --ticks 5000 \
		&& rm -rf $$d
	# latency-probe attach names the causes planted in that example, 3 runs each of 5 cases,
	# each named in 2 of them at least on these debug builds (~3 min; make attach-check: 3 of 3).
	scripts/attach-check.py --self-test
	LATENCY_PROBE_REQUIRE_PERF=$(REQUIRE_PERF) scripts/attach-check.py --debug --cost-rounds 0 --need 2
	$(WITH_CMAKE) $(CARGO) bench --workspace --no-run
	# The tap's page-fault tests in a release build too: there a zeroed default fill becomes a
	# zeroed, untouched allocation, which a debug build writes element by element.
	$(WITH_CMAKE) scripts/expect-tests.sh 2 $(CARGO) test -p messaging --features tap --lib --release -- \
		tap::tally::tests::recording_into_a_new_tally tap::slowest::tests::values_entering
	# The bench's iceoryx2 rows (feature iceoryx2, run by `make bench`): checked, not run.
	$(WITH_CMAKE) $(CARGO) clippy -p latency-probe --benches --features iceoryx2 -- -D warnings
	# The fuzz targets too (built, not run: `make fuzz` runs them), sharing the build above.
	$(WITH_CMAKE) $(CARGO) check --manifest-path fuzz/Cargo.toml --all-targets --target-dir target
	# Every case once, tiny; its figures as JSON lines (BENCH_FIGURES), which scripts/bench-builds.py
	# compares across builds, checked with that script's own test (a fake bench, planted changes).
	$(WITH_CMAKE) BENCH_PAIRED=1 BENCH_FIGURES=$(CURDIR)/target/bench-figures.jsonl $(CARGO) test -p latency-probe --bench roundtrip
	scripts/bench-builds.py --self-test --figures target/bench-figures.jsonl

# Conformance of messaging's log code (not part of `make test`; docs/reliability.md): Aeron's
# race and edge tests ported (tests/races.rs, tests/conformance.rs) RACE_ROUNDS times, the
# log's stress test (writers and a reader pinned to one core) as many rounds, the loom models
# and Miri. Each step fails unless its tests ran: nothing is reported as a pass by accident.
RACE_ROUNDS ?= 100
MIRI_TOOLCHAIN ?= nightly
conformance: bootstrap loom miri
	$(WITH_CMAKE) MESSAGING_RACE_ROUNDS=$(RACE_ROUNDS) scripts/expect-tests.sh 10 \
		$(CARGO) test -p messaging --features embedded-driver --test races --test conformance
	$(WITH_CMAKE) MESSAGING_STRESS_ROUNDS=$(RACE_ROUNDS) scripts/expect-tests.sh 2 \
		$(CARGO) test -p messaging --features embedded-driver --lib one_core

# The loom models of the log's protocol (src/log/model.rs) and the tap's phaser and handover
# (src/tap/phaser.rs, src/tap/handover.rs), in a target dir of their own
# (the cfg changes every dependency's build). LOOM_MAX_PREEMPTIONS bounds the search (2).
loom: bootstrap
	$(WITH_CMAKE) RUSTFLAGS="--cfg messaging_loom" CARGO_TARGET_DIR=target/loom scripts/expect-tests.sh 5 \
		$(CARGO) test -p messaging --features tap --lib --release -- log::model tap::phaser::model tap::handover::model

# Miri over the appender and term reader tests on heap logs (src/log/tests.rs, src/reader.rs),
# the tap's phaser and handover (src/tap/phaser.rs, src/tap/handover.rs) and a recording poll's
# raw interval pointers across handovers and sessions (src/tap/record.rs, ~90 s),
# installing the nightly toolchain's miri and rust-src when missing.
miri: bootstrap
	@rustup component list --toolchain $(MIRI_TOOLCHAIN) --installed 2>/dev/null | grep -q '^miri' || \
		rustup toolchain install $(MIRI_TOOLCHAIN) --profile minimal --component miri,rust-src
	$(WITH_CMAKE) MIRIFLAGS="-Zmiri-disable-isolation" scripts/expect-tests.sh 14 \
		$(CARGO) +$(MIRI_TOOLCHAIN) miri test -p messaging --features tap --lib -- log:: reader:: tap::phaser tap::handover tap::record

bench: bootstrap
	$(WITH_CMAKE) $(CARGO) bench --workspace --features latency-probe/iceoryx2

# The bench's tap variants counted in instructions a message by valgrind's callgrind (needs
# valgrind; about 1 min once built): the noise-free companion of the tap's ns (docs/benchmarks.md).
poll-instructions: bootstrap
	$(WITH_CMAKE) scripts/poll-instructions.sh

# Seeds (valid samples and reports) are written into fuzz/corpus/<target> first; libFuzzer adds
# what it finds there and writes crashing inputs to fuzz/artifacts/<target> (both git-ignored).
# Every target runs even when one fails; the exit status is non-zero if any found a crash.
fuzz: bootstrap
	@$(CARGO) fuzz --version >/dev/null 2>&1 || { echo "installing cargo-fuzz"; $(CARGO) install cargo-fuzz --locked; }
	$(CARGO) $(FUZZ_TOOLCHAIN) run --quiet --manifest-path fuzz/Cargo.toml --example seed_corpus -- fuzz/corpus
	@status=0; for t in $(FUZZ_TARGETS); do \
		echo "== fuzz $$t for $(FUZZ_SECONDS) s"; \
		$(CARGO) $(FUZZ_TOOLCHAIN) fuzz run $$t fuzz/corpus/$$t -- \
			-max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 || status=1; \
		echo "== $$t: corpus $$(ls fuzz/corpus/$$t | wc -l) files, crashes $$(ls fuzz/artifacts/$$t 2>/dev/null | wc -l) in fuzz/artifacts/$$t"; \
	done; exit $$status

fmt:
	$(CARGO) fmt --all

clean:
	$(CARGO) clean
