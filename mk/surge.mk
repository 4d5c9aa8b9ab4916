# surge: extra test suites (beyond cargo test) and benchmarks. Append suites to TEST_TARGETS.
TEST_TARGETS +=

# surge report in headless Chromium: real fixture runs, no console errors, no request leaving the
# file, counts checked, screenshots in artifacts/surge-report/.
.PHONY: test-surge-report bench-report
TEST_TARGETS += test-surge-report
test-surge-report: build
	node web/e2e/surge-report.mjs

# Synthetic 1,000 sessions x 100 events: time and size of `surge report` (release build).
bench-report: deps web
	bench/report.sh

# surge replay --dashboard in headless Chromium during a real run: two successive live states
# differ (sessions, charts redrawn), the ended run links to its final report; screenshots in
# artifacts/surge-dashboard/.
.PHONY: test-surge-dashboard
TEST_TARGETS += test-surge-dashboard
test-surge-dashboard: build
	node web/e2e/surge-dashboard.mjs

# surge capacity --dashboard in headless Chromium during a real search (1, 2, 4 users, 3 s steps):
# two successive live states are successive steps, the ended search links to its final report
# with the capacity view; screenshots in artifacts/surge-capacity-dashboard/.
.PHONY: test-surge-capacity-dashboard
TEST_TARGETS += test-surge-capacity-dashboard
test-surge-capacity-dashboard: build
	node web/e2e/surge-capacity-dashboard.mjs

# surge explain on a real R Shiny app behind manifold (crates/surge/tests/it/r_explain.rs): the
# first plot ranked costliest, its time alone within 20% of what R logged for it.
.PHONY: test-surge-explain-r
TEST_TARGETS += test-surge-explain-r
test-surge-explain-r: build
	$(CARGO) test --workspace $(TEST_FEATURES) --test it -- r_explain:: --ignored --nocapture

# deploy/ checked offline: the Containerfile (COPY sources, stages, the Makefile's commands) and the
# Kubernetes manifests (API schemas via kubernetes-validate in .venv, cross-references); the Job
# scripts run as pods would, with the real surge against a Shiny app on loopback, then merged.
.PHONY: test-surge-deploy
TEST_TARGETS += test-surge-deploy
test-surge-deploy: build
	.venv/bin/python deploy/check.py

# The surge container image (deploy/surge/Containerfile) built with buildah from base images made
# here (debootstrap, npm registry, this host's Rust): no Docker Hub, no daemon. Root; minutes, so
# not in `make test`. IMAGE_TAG= names it (default localhost/surge).
.PHONY: image
image:
	deploy/build-image.sh $(IMAGE_TAG)

.PHONY: bench-surge
# surge vs wrk vs oha on nginx (pinned CPUs); one --rate plan as 2 segments vs 1 process (PART=segments);
# a 10,000-user replay's memory per session.
bench-surge: deps test-data web
	bench/surge.sh

# How many processes the original R app needs: surge capacity on R sync behind manifold at 1, 2, 4
# workers (first-plot p95 < LIMIT, default 2s), the scaling table and --audience's workers. Needs
# CRANWHALES_R_DIR (a clone of rstudio/cranwhales); a benchmark, not part of `make test`.
.PHONY: capacity-scaling
capacity-scaling: deps test-data web
	bench/capacity-scaling.sh
