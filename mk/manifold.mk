# manifold: extra test suites (beyond cargo test) and benchmarks. Append suites to TEST_TARGETS.
TEST_TARGETS +=

# Real HAProxy (deploy/haproxy/haproxy.cfg) in front of two manifold hosts with R Shiny workers,
# loaded by surge replay: stickiness, then one host stopped mid-run (crates/manifold/tests/haproxy.rs).
.PHONY: test-manifold-haproxy
TEST_TARGETS += test-manifold-haproxy
test-manifold-haproxy: build
	$(CARGO) test --workspace $(TEST_FEATURES) --test haproxy -- --ignored --nocapture

.PHONY: bench-manifold
# Side-by-side benchmark: one plumber vs manifold vs valve vs faucet; installs oha/valve/faucet if missing.
bench-manifold:
	bench/manifold.sh
