# govs: a pure-Go userspace OpenFlow switch.
#
#   make demo   trace the seed packet walk (frontend -> service) through worker 1's pipeline
#   make test   install what the tests need (Debian packages, Go modules), then run every test
#   make bench      run the in-memory micro-benchmarks
#   make bench-net  pod-to-pod network benchmark (root): direct veth, Linux bridge, Open vSwitch, govs

GO        ?= go
GOFLAGS   ?=
BIN       := bin
DEB_PKGS  := openvswitch-switch openvswitch-common iproute2 iptables nftables conntrack \
             ethtool tshark iperf3 netsniff-ng python3-scapy python3-os-ken tcpdump \
             netcat-openbsd arping iputils-ping util-linux procps
TEST_TIMEOUT ?= 60m

.PHONY: all build demo test deps deps-apt deps-go vet bench bench-net conformance clean

all: build

build:
	$(GO) build $(GOFLAGS) -o $(BIN)/ ./cmd/...

demo: build
	$(BIN)/govs trace --demo

# deps-apt installs only the Debian packages that are missing, so a second run is quick.
deps-apt:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "run as root to install:$$missing" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

deps-go:
	$(GO) mod download

deps: deps-apt deps-go

vet:
	$(GO) vet ./...

# The concurrent packages also run under the race detector.
RACE_PKGS := ./conntrack/ ./datapath/flowcache/ ./datapath/ ./ofproto/ ./ofproto/ofclient/
test: deps vet
	$(GO) test $(GOFLAGS) -count=1 -timeout $(TEST_TIMEOUT) ./...
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(RACE_PKGS)

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
