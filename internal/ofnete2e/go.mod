// This module is separate from govs's so that ofnet and its dependencies do not
// enter govs's go.mod: it drives govs and Open vSwitch the way Antrea's agent does.
module github.com/govs-project/govs/internal/ofnete2e

go 1.26.0

require (
	antrea.io/libOpenflow v0.15.0
	antrea.io/ofnet v0.14.0
	github.com/govs-project/govs v0.0.0-00010101000000-000000000000
)

require (
	github.com/Microsoft/go-winio v0.6.2 // indirect
	github.com/cenkalti/hub v1.0.2 // indirect
	github.com/cenkalti/rpc2 v1.0.3 // indirect
	github.com/cilium/ebpf v0.22.0 // indirect
	github.com/contiv/libovsdb v0.0.0-20170227191248-d0061a53e358 // indirect
	github.com/go-logr/logr v1.4.2 // indirect
	github.com/orcaman/concurrent-map/v2 v2.0.1 // indirect
	github.com/sirupsen/logrus v1.9.4 // indirect
	golang.org/x/sys v0.49.0 // indirect
	k8s.io/klog/v2 v2.130.1 // indirect
)

// The vanity paths antrea.io/... are not served here; the same code is at github.com/antrea-io.
replace antrea.io/ofnet => github.com/antrea-io/ofnet v0.14.0

replace antrea.io/libOpenflow => github.com/antrea-io/libOpenflow v0.15.0

replace github.com/govs-project/govs => ../..
