# The two commands of the README: `make demo` and `make test`. Each program keeps its own targets in
# mk/<program>.mk; this file wires them together.
SHELL := /bin/bash
export PATH := $(HOME)/.cargo/bin:$(PATH)
CARGO ?= cargo
# Test-only fault injection (the crash test); the same features for every debug build, so tests,
# lint and the browser suites share one build.
TEST_FEATURES := --features cranwhales/fault-injection

.PHONY: demo test deps prereqs test-data test-scripts web lint docs test-rust build release
.DEFAULT_GOAL := help

help:
	@echo "make demo   - build everything and serve cranwhales on http://127.0.0.1:8080 (bundled data; PORT=, ADDR=)"
	@echo "make test   - install what is needed, then run every test (Rust, browser, R)"
	@echo "make bench-ingest | bench-serve | bench-surge | bench-manifold - side-by-side benchmarks"
	@echo "make image  - the surge container image with buildah, without Docker Hub (root; IMAGE_TAG=)"
	@echo "make case-study - the original R app vs manifold vs ours under surge (needs CRANWHALES_R_DIR)"

# System packages, npm modules and toolchain components; each step skips what is already there.
deps:
	scripts/install-deps.sh

# What `make demo` needs (Rust, Node, a C compiler): says exactly what is missing.
prereqs:
	@scripts/check-prereqs.sh

# Real test data (CRAN logs, shinyloadtest files): ../shared/data when it is there, else downloaded
# once into a cache and checked against the SHA-256 sums in data/test-data.tsv. Tests read the root
# from CRANWHALES_TEST_DATA.
ifndef CRANWHALES_TEST_DATA
CRANWHALES_TEST_DATA := $(shell python3 scripts/test-data.py --locate)
endif
export CRANWHALES_TEST_DATA
test-data:
	@scripts/test-data.py >/dev/null

# The test-data fetcher against a real HTTP server on loopback.
test-scripts:
	python3 -m unittest discover -s scripts -p 'test_*.py'

# The web UI and the report runtime, built into web/dist* and embedded in the binaries.
web: web/node_modules
	cd web && npm run build

web/node_modules: web/package.json web/package-lock.json
	cd web && npm ci --no-audit --no-fund
	@touch $@

# Debug binaries exactly as `cargo test --workspace` builds them (same features, dev-dependencies
# included), so the suites after test-rust reuse its build instead of compiling everything again.
build: web
	$(CARGO) test --workspace --no-run $(TEST_FEATURES)

release: web
	$(CARGO) build --workspace --release --bins

lint: web
	scripts/check-modules.py
	python3 scripts/docs.py --check
	python3 scripts/doc-run.py --static
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets $(TEST_FEATURES) -- -D warnings
	cd web && npx tsc --noEmit

# Regenerate the docs' generated parts: each program's flag reference (from its clap definitions)
# and every page's table of contents.
docs:
	UPDATE_DOCS=1 $(CARGO) test -p cranwhales -p surge -p manifold --bins $(TEST_FEATURES) flag_reference
	python3 scripts/docs.py --write

test-rust: web
	$(CARGO) test --workspace --no-fail-fast $(TEST_FEATURES)

# Every shell block of README.md and docs/ run as written (scripts/doc-run.py), against the bundled
# data, docs/examples and servers on loopback; a block that cannot run here says why in the page.
.PHONY: test-docs
TEST_TARGETS += test-docs
test-docs: build
	python3 scripts/doc-run.py

include mk/cranwhales.mk
include mk/surge.mk
include mk/manifold.mk

# The original experiment end to end: the R app rstudio/cranwhales (a clone in CRANWHALES_R_DIR) in its
# versions, behind manifold, and ours, replayed by surge; one report, RESULTS.md, PASS/MISS lines.
# A benchmark, not part of `make test`. Subsets: CONFIGS=r-sync,ours USERS=10 BIG_USERS=0 make case-study
.PHONY: case-study
case-study: deps test-data
	bench/case-study.sh

# Everything: lint, unit + integration tests, then each program's browser / R tests.
test: deps test-data lint test-scripts test-rust $(TEST_TARGETS)
	@echo "make test: all suites passed"
