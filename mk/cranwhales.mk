# cranwhales: extra test suites (beyond cargo test) and benchmarks. Append suites to TEST_TARGETS.
TEST_TARGETS +=

demo: release
	./target/release/cranwhales serve --addr 127.0.0.1:8080
