# govs: a pure-Go userspace OpenFlow switch.
#
#   make demo   run seed worker 1 live: govs-vswitchd, pods in namespaces, real traffic (root; else the offline trace)
#   make test   install what the tests need (Debian packages, Go modules), then run every test
#   make bench      run the in-memory micro-benchmarks
#   make bench-net  pod-to-pod network benchmark (root): direct veth, Linux bridge, Open vSwitch, govs

GO        ?= go
GOFLAGS   ?=
BIN       := bin
DEB_PKGS  := openvswitch-switch openvswitch-common iproute2 iptables nftables conntrack \
             ethtool tshark iperf3 netsniff-ng python3-scapy python3-os-ken tcpdump \
             netcat-openbsd arping iputils-ping util-linux procps \
             ovn-central ovn-host
TEST_TIMEOUT ?= 60m

.PHONY: all build demo test test-ofnet deps deps-apt deps-go vet bench bench-net conformance clean install fuzz fuzz-ci

all: build

build:
	$(GO) build $(GOFLAGS) -o $(BIN)/ ./cmd/...

demo: build
	$(BIN)/govs demo

# deps-apt installs only the Debian packages that are missing, so a second run is quick;
# it waits up to 10 minutes for the locks another apt-get holds instead of failing
# (apt-get update ignores DPkg::Lock::Timeout, hence the loop).
deps-apt:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "run as root to install:$$missing" >&2; exit 1; fi; \
	  for i in $$(seq 60); do \
	    out=$$(apt-get update -qq 2>&1) && break; \
	    case "$$out" in *"Could not get lock"*) echo "deps-apt: waiting for another apt-get" >&2; sleep 10;; *) echo "$$out" >&2; exit 1;; esac; \
	  done; \
	  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

deps-go:
	$(GO) mod download

deps: deps-apt deps-go

vet:
	$(GO) vet ./...

# The concurrent packages also run under the race detector.
RACE_PKGS := ./conntrack/ ./datapath/flowcache/ ./datapath/ ./ofproto/ ./ofproto/ofclient/ ./internal/unixctl/
test: deps vet
	$(GO) test $(GOFLAGS) -count=1 -timeout $(TEST_TIMEOUT) ./...
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(RACE_PKGS)
	$(MAKE) fuzz-ci
	$(MAKE) test-ofnet

# Antrea's agent (antrea.io/ofnet, its own module so govs's go.mod does not
# grow) against govs and Open vSwitch: same session, same outcome (root).
test-ofnet:
	cd internal/ofnete2e && $(GO) vet ./... && $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

# Fuzz campaigns over every `func Fuzz` target (internal/fuzzcampaign): fuzz-ci
# gives each a few seconds (part of make test); `make fuzz FUZZTIME=10m` is the
# long local run. A crasher is kept in the package's testdata/fuzz/<Target>/.
FUZZTIME    ?= 10m
FUZZTIME_CI ?= 3s
fuzz-ci:
	$(GO) run ./internal/fuzzcampaign -fuzztime $(FUZZTIME_CI)
fuzz:
	$(GO) run ./internal/fuzzcampaign -fuzztime $(FUZZTIME) -parallel 1

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

BENCH_ARGS ?= --reps 3 --duration 5s --out bench-results.json
bench-net: deps build
	$(BIN)/govs bench $(BENCH_ARGS)

# conformance runs the os-ken OpenFlow 1.3 switch test suite (root) against govs and Open
# vSwitch and writes per-case results to docs/conformance/; CONFORMANCE_ARGS selects files
# (e.g. "match/00_IN_PORT.json group") and can name a --baseline to report regressions against.
CONFORMANCE_CASES ?= ../shared/conformance/osken-of13
CONFORMANCE_ARGS  ?= action match group
conformance: deps build
	$(BIN)/govs conformance --cases $(CONFORMANCE_CASES) --out docs/conformance/$$(date -u +%F)-$$(git rev-parse --short HEAD).tsv $(CONFORMANCE_ARGS)

clean:
	rm -rf $(BIN)

# install puts govs and govs-vswitchd in $(PREFIX)/bin and $(PREFIX)/sbin, and
# ovs-vswitchd as a symlink to govs-vswitchd: ovs-ctl and Antrea's scripts run
# the daemon by that name and check /proc/PID/comm (docs: README "Drop-in").
PREFIX ?= /usr/local
install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/sbin
	install -m 755 $(BIN)/govs $(DESTDIR)$(PREFIX)/bin/govs
	install -m 755 $(BIN)/govs-vswitchd $(DESTDIR)$(PREFIX)/sbin/govs-vswitchd
	ln -sf govs-vswitchd $(DESTDIR)$(PREFIX)/sbin/ovs-vswitchd

# soak: the reliability soak (internal/e2e TestSoak: flow-mods at 1,000/s, port churn,
# TCP through ct) for SOAK by hand, trend table in soak.tsv; make test runs it bounded (~20 s).
SOAK ?= 30m
.PHONY: soak
soak:
	$(GO) test -count=1 -run '^TestSoak$$' -v -timeout 60m ./internal/e2e/ -soak $(SOAK) -soak.out $(CURDIR)/soak.tsv
