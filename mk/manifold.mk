# manifold: extra test suites (beyond cargo test) and benchmarks. Append suites to TEST_TARGETS.
TEST_TARGETS +=
