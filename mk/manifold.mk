# manifold: extra test suites (beyond cargo test) and benchmarks. Append suites to TEST_TARGETS.
TEST_TARGETS +=

# Real HAProxy (deploy/haproxy/haproxy.cfg) in front of two manifold hosts with R Shiny workers,
# loaded by surge replay: stickiness, then one host stopped mid-run (crates/manifold/tests/it/haproxy.rs).
.PHONY: test-manifold-haproxy
TEST_TARGETS += test-manifold-haproxy
test-manifold-haproxy: build
	$(CARGO) test --workspace $(TEST_FEATURES) --test it -- haproxy:: --ignored --nocapture

# Reload under load: surge replays the real R Shiny app through manifold for MANIFOLD_RELOAD_SECS
# (default 60) while the app changes v1 -> v2 and manifold gets SIGHUP (crates/manifold/tests/it/r_reload.rs).
.PHONY: test-manifold-reload
TEST_TARGETS += test-manifold-reload
test-manifold-reload: build
	$(CARGO) test --workspace $(TEST_FEATURES) --test it -- r_reload:: --ignored --nocapture

# Chaos: surge replays the real Shiny app through manifold (4 R workers) for MANIFOLD_CHAOS_SECS
# (default 60; the issue's run is 300) while workers are SIGKILLed, one hung and a reload happens
# (crates/manifold/tests/it/r_chaos.rs).
.PHONY: test-manifold-chaos
TEST_TARGETS += test-manifold-chaos
test-manifold-chaos: build
	$(CARGO) test --workspace $(TEST_FEATURES) --test it -- r_chaos:: --ignored --nocapture

# --preload with the real Shiny app: surge replays it through manifold with and without
# --preload for MANIFOLD_PRELOAD_SECS (default 20) each; 0 failed sessions both ways
# (crates/manifold/tests/it/r_preload.rs).
.PHONY: test-manifold-preload
TEST_TARGETS += test-manifold-preload
test-manifold-preload: build
	$(CARGO) test --workspace $(TEST_FEATURES) --test it -- r_preload:: --ignored --nocapture

.PHONY: bench-manifold
# Side-by-side benchmark: one plumber vs manifold vs valve vs faucet; installs oha/valve/faucet if missing.
bench-manifold: deps
	bench/manifold.sh
