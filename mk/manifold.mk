# manifold: extra test suites (beyond cargo test) and benchmarks. Append suites to TEST_TARGETS.
TEST_TARGETS +=

.PHONY: bench-manifold
# Side-by-side benchmark: one plumber vs manifold vs valve vs faucet; installs oha/valve/faucet if missing.
bench-manifold:
	bench/manifold.sh
