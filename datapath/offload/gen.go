package offload

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -target bpfel -type flow_key -type flow_action -type tc_scratch offload bpf/offload.c -- -I/usr/include/x86_64-linux-gnu -O2 -Wall
