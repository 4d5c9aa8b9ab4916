# cranwhales: extra test suites (beyond cargo test) and benchmarks. Append suites to TEST_TARGETS.
TEST_TARGETS += test-cranwhales-browser

# `make demo PORT=9000` or `make demo ADDR=0.0.0.0:8080` moves it; Ctrl-C stops it.
PORT ?= 8080
ADDR ?= 127.0.0.1:$(PORT)
demo: prereqs release
	@echo "demo: serving on http://$(ADDR)/ (Ctrl-C stops it)"
	./target/release/cranwhales serve --addr $(ADDR)

# Browser suite: the debug binary (temp store, local source server) driven by headless Chromium.
.PHONY: test-cranwhales-browser bench-serve
test-cranwhales-browser: build
	node --test web/e2e/cranwhales.test.mjs web/e2e/cranwhales-insight.test.mjs web/e2e/cranwhales-context.test.mjs web/e2e/cranwhales-look.test.mjs web/e2e/cranwhales-follow.test.mjs

# wrk vs nginx serving the same bytes, plus a single-flight check (release build).
bench-serve: deps test-data release
	bench/serve.sh
	bench/serve_history.sh

# Ingest of a stitched >= 10M-row day vs libdeflate/gzip decompression, Polars and DuckDB, then the
# 78-day backfill line (--jobs 2 vs --jobs 1 vs Polars), then the store line (bytes per day and per
# row, whole-history projection). PART=day, PART=backfill or PART=store runs one of them.
.PHONY: bench-ingest
bench-ingest: deps test-data
	bench/ingest.sh
