# zkrecipes — make deps | make test | make demo
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/.bin
STATICCHECK_VERSION := v0.8.2
# Debian packages the integration tests and the demo start or load.
DEBS := zookeeper redis-server redis-sentinel memcached libcurator-recipes-java libcurator-discovery-java python3-kazoo openjdk-17-jdk-headless \
	postgresql mariadb-server pgbouncer zsh
# What the demo starts: a ZooKeeper, which runs on a JDK.
DEMO_DEBS := zookeeper openjdk-17-jdk-headless
TEST_TIMEOUT ?= 45m
# Test packages run at once: most of the suite waits on session timeouts,
# TTLs and servers starting, not on the CPU (about half a core on average
# at go test's default of one package per core here), so four at a time
# halve the wall time of a 2-core machine.
TEST_P ?= 4
# The modules of the repository: the library, the heavy test tooling
# (Docker path, the demo, benchmark peers) that its users must not inherit,
# and the adapters that link a driver (contrib/). Each module that builds on
# the root finds it through its own go.work (docs/releasing.md).
MODULES := . integration contrib/otelrecipes
# The version the modules will be released with next, as a set: every
# module that requires the root requires it at this version (checked by
# `make modules`; docs/releasing.md).
RELEASE := v0.1.0
# each runs a command in every module, stopping at the first failure.
each = for m in $(MODULES); do (cd $$m && $(1)) || exit 1; done

.PHONY: deps deps-demo test demo lint fmt-check vet staticcheck layers modules unit bench

# debs installs the Debian packages of $(1) that are missing.
debs = missing=""; \
	for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  $$sudo apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# Modules are fetched as the builds need them (go list -deps), not with
# `go mod download`: in a module that builds through its go.work, that
# downloads every module of the workspace's graph, some of which the
# proxy does not serve (valkey-go/valkeycompat v1.0.79) and no build needs.
deps:
	@$(call debs,$(DEBS))
	@$(call each,$(GO) list -test -deps ./... >/dev/null)
	@[ -x $(BIN)/staticcheck ] || GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	@$(call each,$(GO) vet ./...)

staticcheck:
	@$(call each,$(BIN)/staticcheck ./...)

# No import arrow from a lower layer to a higher one: the layers and the
# rules are the table in internal/testkit/layers/table.go (docs/design.md
# draws them).
layers:
	@$(GO) run ./internal/testkit/layers -go $(GO) $(MODULES)

# The go.mod files stay releasable as a set: no replace, no patch-level go
# line, the root required at $(RELEASE) (internal/testkit/modcheck).
modules:
	@$(GO) run ./internal/testkit/modcheck -go $(GO) -release $(RELEASE) $(MODULES)

lint: fmt-check vet staticcheck layers modules

# The whole suite of every module, integration tests required (a missing
# server fails them).
test: deps lint
	@$(call each,ZKR_REQUIRE_INTEGRATION=1 $(GO) test -race -count=1 -p $(TEST_P) -timeout $(TEST_TIMEOUT) ./...)

# Unit tests only: integration tests skip when no server can be had.
unit:
	@$(call each,$(GO) test -race -count=1 -short ./...)

# The benchmarks docs/benchmarks.md quotes, against a ZooKeeper started with
# the JVM's full JIT (ZKR_BENCH_JVM). Run on a quiet machine.
BENCH := ZKR_BENCH_JVM=1 ZKR_REQUIRE_INTEGRATION=1 $(GO) test -run '^$$' -timeout 30m
bench: deps
	$(BENCH) -bench 'SideBySide' -benchtime 20x ./mutex/
	$(BENCH) -bench 'ClientCost' -benchtime 20x ./mutex/
	$(BENCH) -bench 'Relay|Chain' -benchtime 20x ./mutex/
	$(BENCH) -bench 'Uncontended' -benchmem -benchtime 2000x ./mutex/
	$(BENCH) -bench 'Contended' -benchtime 1000x ./mutex/
	$(BENCH) -bench 'Herd' -benchtime 1000x ./exclusive/
	$(BENCH) -bench 'Readers' -benchtime 4000x ./rwlock/
	$(BENCH) -bench 'Failover|Margin' -benchtime 8x ./leader/
	$(BENCH) -bench 'Semaphore' -benchtime 8x ./semaphore/
	cd integration && for b in CompatUncontended:100x CompatContended:10x CompatRedlockUncontended:100x \
		CompatRedlockContended:10x CompatLossSignal:5x CompatPair:2x \
		CompatCluster:15x CompatClusterPublish:1x CompatReplicaAck:15x; do \
		$(BENCH) -bench "^Benchmark$${b%%:*}$$" -benchtime $${b##*:} ./compatbench/ || exit 1; done
	cd integration && for b in SQLUncontended:20x SQLContended:3x SQLTakeover:25x; do \
		$(BENCH) -bench "^Benchmark$${b%%:*}$$" -benchtime $${b##*:} ./sqlbench/ || exit 1; done

# What the demo needs and nothing more: a ZooKeeper and a JDK.
deps-demo:
	@$(call debs,$(DEMO_DEBS))

demo: deps-demo
	cd integration && $(GO) run ./demo
