// SPDX-License-Identifier: GPL-2.0
// govs kernel fast path: forwards packets of established connections the
// Go datapath has already decided, by exact match. Everything else, and
// one packet per entry and second (so conntrack sees the connection is
// alive), goes on to the AF_PACKET socket as if there were no program.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

// Action flags.
#define ACT_SET_ETH 1 // write eth_dst/eth_src
#define ACT_DEC_TTL 2 // decrement the IPv4 TTL (and fix the checksum)
#define ACT_NAT 4     // rewrite the 5-tuple to nat_* (conntrack's NAT of the connection)

// flow_key is the exact match: the ingress interface, the Ethernet
// addresses and the IPv4 5-tuple with the TTL (dec_ttl makes the TTL part
// of a megaflow).
struct flow_key {
	__u32 ifindex;
	__u32 saddr; // network order
	__u32 daddr;
	__u16 sport; // network order
	__u16 dport;
	__u8 eth_dst[6];
	__u8 eth_src[6];
	__u8 proto;
	__u8 ttl;
	__u16 pad;
};

struct flow_action {
	__u32 out_ifindex;
	__u32 flags;
	__u8 eth_dst[6];
	__u8 eth_src[6];
	__u32 pad;
	__u32 nat_saddr; // network order, with ACT_NAT
	__u32 nat_daddr;
	__u16 nat_sport; // network order
	__u16 nat_dport;
	__u32 pad2;
	__u64 gen;       // valid while it equals generation[0]
	__u64 packets;   // forwarded by the program
	__u64 bytes;
	__u64 last_used; // bpf_ktime_get_ns (CLOCK_MONOTONIC)
	__u64 last_pass; // last packet handed to userspace as a keepalive
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct flow_key);
	__type(value, struct flow_action);
} flows SEC(".maps");

// generation[0] is the pipeline generation entries must carry: bumping it
// disables every entry at once, before userspace gets to delete them.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} generation SEC(".maps");

// Keepalive: at most this long between two packets of an entry that go
// through userspace (conntrack timeouts, ct counters, revalidation).
volatile const __u64 pass_interval_ns = 1000000000ULL;

// Incremental checksum updates (RFC 1624: HC' = ~(~HC + ~m + m')). The
// one's complement sum does not depend on byte order, so the network-order
// words are summed as they are in memory.
static __always_inline __u16 csum_fold(__u32 c)
{
	c = (c & 0xffff) + (c >> 16);
	c = (c & 0xffff) + (c >> 16);
	return (__u16)c;
}

static __always_inline __u32 csum_diff4(__u32 from, __u32 to)
{
	return (__u16)~from + (__u16)~(from >> 16) + (to & 0xffff) + (to >> 16);
}

static __always_inline __u32 csum_diff2(__u16 from, __u16 to)
{
	return (__u16)~from + (__u32)to;
}

static __always_inline __u16 csum_apply(__u16 check, __u32 diff)
{
	return (__u16)~csum_fold((__u16)~check + diff);
}

SEC("xdp")
int govs_offload(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct flow_key k = {};

	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->ihl != 5 || (ip->frag_off & bpf_htons(0x3fff)))
		return XDP_PASS; // options, fragments: userspace
	if (ip->protocol == IPPROTO_TCP) {
		struct tcphdr *th = (void *)(ip + 1);
		if ((void *)(th + 1) > end || th->syn || th->fin || th->rst)
			return XDP_PASS; // the conntrack state machine sees these
		k.sport = th->source;
		k.dport = th->dest;
	} else if (ip->protocol == IPPROTO_UDP) {
		struct udphdr *uh = (void *)(ip + 1);
		if ((void *)(uh + 1) > end)
			return XDP_PASS;
		k.sport = uh->source;
		k.dport = uh->dest;
	} else {
		return XDP_PASS;
	}
	k.ifindex = ctx->ingress_ifindex;
	k.saddr = ip->saddr;
	k.daddr = ip->daddr;
	k.proto = ip->protocol;
	k.ttl = ip->ttl;
	__builtin_memcpy(k.eth_dst, eth->h_dest, 6);
	__builtin_memcpy(k.eth_src, eth->h_source, 6);

	__u32 zero = 0;
	__u64 *gen = bpf_map_lookup_elem(&generation, &zero);
	struct flow_action *a = bpf_map_lookup_elem(&flows, &k);
	if (!gen || !a || a->gen != *gen)
		return XDP_PASS;
	__u64 now = bpf_ktime_get_ns();
	if (now - a->last_pass >= pass_interval_ns) {
		a->last_pass = now;
		return XDP_PASS;
	}
	if (a->flags & ACT_DEC_TTL) {
		if (ip->ttl <= 1)
			return XDP_PASS; // userspace drops it as dec_ttl does
		// RFC 1624 update of the checksum, as the kernel's ip_decrease_ttl.
		__u32 check = ip->check;
		check += bpf_htons(0x0100);
		ip->check = (__u16)(check + (check >= 0xFFFF));
		ip->ttl--;
	}
	if (a->flags & ACT_NAT) {
		// The addresses are in the IPv4 header checksum and, with the
		// ports, in the TCP/UDP one (pseudo-header). Bounds were checked
		// when the key was read.
		__u32 addrs = csum_diff4(ip->saddr, a->nat_saddr) + csum_diff4(ip->daddr, a->nat_daddr);
		ip->check = csum_apply(ip->check, addrs);
		ip->saddr = a->nat_saddr;
		ip->daddr = a->nat_daddr;
		if (ip->protocol == IPPROTO_TCP) {
			struct tcphdr *th = (void *)(ip + 1);
			if ((void *)(th + 1) > end)
				return XDP_PASS;
			__u32 d = addrs + csum_diff2(th->source, a->nat_sport) + csum_diff2(th->dest, a->nat_dport);
			th->check = csum_apply(th->check, d);
			th->source = a->nat_sport;
			th->dest = a->nat_dport;
		} else {
			struct udphdr *uh = (void *)(ip + 1);
			if ((void *)(uh + 1) > end)
				return XDP_PASS;
			if (uh->check) { // 0: the sender computed none
				__u32 d = addrs + csum_diff2(uh->source, a->nat_sport) + csum_diff2(uh->dest, a->nat_dport);
				__u16 c = csum_apply(uh->check, d);
				uh->check = c ? c : 0xffff;
			}
			uh->source = a->nat_sport;
			uh->dest = a->nat_dport;
		}
	}
	if (a->flags & ACT_SET_ETH) {
		__builtin_memcpy(eth->h_dest, a->eth_dst, 6);
		__builtin_memcpy(eth->h_source, a->eth_src, 6);
	}
	__sync_fetch_and_add(&a->packets, 1);
	__sync_fetch_and_add(&a->bytes, (__u64)(end - data));
	a->last_used = now;
	return bpf_redirect(a->out_ifindex, 0);
}

char _license[] SEC("license") = "GPL";
