module github.com/govs-project/govs

go 1.26.0

require golang.org/x/sys v0.49.0

require (
	github.com/cilium/ebpf v0.22.0
	github.com/gopacket/gopacket v1.7.7
	go.uber.org/zap v1.28.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/ovn-org/libovsdb v0.7.0 // indirect
	go.uber.org/multierr v1.10.0 // indirect
)
