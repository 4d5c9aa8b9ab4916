# cranwhales: extra test suites (beyond cargo test) and benchmarks. Append suites to TEST_TARGETS.
TEST_TARGETS += test-cranwhales-browser

demo: release
	./target/release/cranwhales serve --addr 127.0.0.1:8080

# Browser suite: the debug binary (temp store, local source server) driven by headless Chromium.
.PHONY: test-cranwhales-browser bench-serve
test-cranwhales-browser: build
	node --test web/e2e/cranwhales.test.mjs

# wrk vs nginx serving the same bytes, plus a single-flight check (release build).
bench-serve: release
	bench/serve.sh

# Ingest of a stitched >= 10M-row day vs libdeflate/gzip decompression, Polars and DuckDB.
.PHONY: bench-ingest
bench-ingest:
	bench/ingest.sh
