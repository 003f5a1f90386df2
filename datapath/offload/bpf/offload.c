// SPDX-License-Identifier: GPL-2.0
// govs kernel fast path: forwards packets of established connections the
// Go datapath has already decided, by exact match. Everything else, and
// one packet per entry and second (so conntrack sees the connection is
// alive), goes on to the AF_PACKET socket (or, for a Geneve datagram, to
// the kernel's UDP stack and govs's tunnel socket) as if there were no
// program.
#include <linux/bpf.h>
#include <linux/if_packet.h>
#include <linux/pkt_cls.h>
#include <stddef.h>
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
#define ACT_ENCAP 8   // put the frame in Geneve (outer headers from encap_*)
#define ACT_DECAP 16  // the key is a Geneve datagram's: forward its inner frame
#define ACT_PEER 32   // tc path: the output is a veth, bpf_redirect_peer to its pod end
// VLAN: the frame enters with at most one tag (the key's vlan_tci) and
// leaves with the one the entry says. ACT_POP_VLAN|ACT_PUSH_VLAN replaces
// the tag (TPID and TCI); ACT_SET_VLAN writes the TCI of the tag it has.
#define ACT_PUSH_VLAN 64 // add the tag vlan_tpid/vlan_tci
#define ACT_POP_VLAN 128 // remove the tag
#define ACT_SET_VLAN 256 // rewrite the tag's TCI to vlan_tci
#define ACT_ENCAP_CSUM 512 // with ACT_ENCAP: the outer UDP checksum (csum=true)

// The longest UDP datagram the XDP program checksums (the encapsulation
// MTU of a csum=true entry is at most this; longer datagrams received
// go up the stack).
#define CSUM_MAX 9216

#define VLAN_HLEN 4
#define VLAN_CFI 0x1000 // in a key's vlan_tci: the frame is tagged (as govs's key)

// Geneve (RFC 8926) as govs's tunnel port speaks it.
#define GENEVE_PORT 6081
#define GENEVE_HDR_LEN 8
#define GENEVE_PROTO_TEB 0x6558
// The most option bytes an entry matches or sends (OVN's one option is 8,
// Antrea sends none); longer ones stay in userspace.
#define TUN_OPTS_MAX 32
#define OUTER_LEN (sizeof(struct ethhdr) + sizeof(struct iphdr) + sizeof(struct udphdr))

// flow_key is the exact match: the ingress interface, the Ethernet
// addresses, the VLAN tag and the IPv4 5-tuple with the TTL (dec_ttl
// makes the TTL part of a megaflow). For a Geneve datagram (ACT_DECAP entries) these are the
// inner frame's, ifindex is the underlay interface, and the tun_* fields
// hold the outer addresses and the whole Geneve header; they are zero for
// every other packet.
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
	__u16 vlan_tci;    // host order, the TCI | VLAN_CFI of a tagged frame; 0 untagged
	__u32 tun_src;     // outer IPv4 addresses, network order
	__u32 tun_dst;
	__u32 tun_vni;     // Geneve bytes 4-7 (VNI, reserved) as on the wire
	__u8 tun_flags;    // Geneve byte 1 (O and C bits, reserved)
	__u8 tun_opt_len;  // option bytes
	__u8 outer_dst[6]; // the outer destination MAC (the underlay's own)
	__u32 tun_opts[TUN_OPTS_MAX / 4];
};

struct flow_action {
	__u32 out_ifindex;
	__u32 flags;
	__u8 eth_dst[6];
	__u8 eth_src[6];
	__u16 vlan_tpid; // network order, with ACT_PUSH_VLAN
	__u16 vlan_tci;  // network order, with ACT_PUSH_VLAN or ACT_SET_VLAN
	__u32 nat_saddr; // network order, with ACT_NAT
	__u32 nat_daddr;
	__u16 nat_sport; // network order
	__u16 nat_dport;
	__u32 pad2;
	__u64 gen;       // valid while it equals generation[0]
	__u64 packets;   // forwarded by the program
	__u64 bytes;     // of the frames as the bridge ports see them (inner)
	__u64 last_used; // bpf_ktime_get_coarse_ns (CLOCK_MONOTONIC_COARSE)
	__u64 last_pass; // last packet handed to userspace as a keepalive
	// With ACT_ENCAP: the outer headers as govs's tunnel port would have
	// the kernel send them: the Ethernet addresses of the route's next
	// hop (out_ifindex), recorded at install and refreshed with every
	// keepalive, the IPv4/UDP fields and the Geneve header with options.
	// (bpf_fib_lookup would need IP forwarding on the underlay device.)
	__u32 encap_saddr; // network order
	__u32 encap_daddr;
	__u16 encap_sport; // network order
	__u16 encap_dport;
	__u16 encap_mtu;    // underlay IP MTU, host order
	__u8 encap_ttl;
	__u8 encap_hdr_len; // Geneve header with options, bytes
	__u8 encap_dmac[6];
	__u8 encap_smac[6];
	__u32 encap_hdr[(GENEVE_HDR_LEN + TUN_OPTS_MAX) / 4];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct flow_key);
	__type(value, struct flow_action);
} flows SEC(".maps");

// generation[0] is the pipeline generation entries must carry: bumping it
// disables every entry at once, before userspace gets to delete them.
// generation[1] non-zero holds the links (Kernel.Hold): no keepalive
// goes to userspace, whichever program runs.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
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

// ip_csum is the checksum of a 20-byte IPv4 header (its check field 0).
static __always_inline __u16 ip_csum(struct iphdr *ip)
{
	__u16 *w = (__u16 *)ip;
	__u32 s = 0;
#pragma unroll
	for (int i = 0; i < 10; i++)
		s += w[i];
	return (__u16)~csum_fold(s);
}

// csum_span returns the one's complement sum, folded to 16 bits and in
// memory order, of the bytes from p to end, or -1 when they are more than
// CSUM_MAX.
static __always_inline int csum_span(void *p, void *end)
{
	__u64 s = 0;
	for (int i = 0; i < CSUM_MAX / 4; i++) {
		if (p + 4 > end)
			break;
		s += *(__u32 *)p;
		p += 4;
	}
	if (p + 4 <= end)
		return -1;
	if (p + 2 <= end) {
		s += *(__u16 *)p;
		p += 2;
	}
	if (p + 1 <= end)
		s += *(__u8 *)p; // the odd byte, padded with zero (memory order)
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffffffff) + (s >> 32);
	return csum_fold((__u32)s);
}

// xdp_csum is csum_span of the frame's bytes from offset off (at most 64)
// to its end. A global function: the verifier walks its loop once, not
// for each of its callers' states.
__attribute__((noinline)) int xdp_csum(struct xdp_md *ctx, __u32 off)
{
	if (!ctx || off > 64)
		return -1;
	void *data = (void *)(long)ctx->data;
	return csum_span(data + off, (void *)(long)ctx->data_end);
}

// skb_csum is xdp_csum for the tc programs, over the skb's linear data
// (the caller pulls it in).
__attribute__((noinline)) int skb_csum(struct __sk_buff *skb, __u32 off)
{
	if (!skb || off > 64)
		return -1;
	void *data = (void *)(long)skb->data;
	return csum_span(data + off, (void *)(long)skb->data_end);
}

// udp_pseudo is the one's complement sum of the IPv4 pseudo-header of a
// UDP datagram (memory order, unfolded).
static __always_inline __u64 udp_pseudo(struct iphdr *ip, struct udphdr *uh)
{
	return (__u64)ip->saddr + ip->daddr + bpf_htons(IPPROTO_UDP) + uh->len;
}

// parse fills k's inner part from the frame at eth and returns the offset
// of its IPv4 header (behind one 802.1Q tag when tag_ok: govs's key holds
// one; the tc path has the kernel's untagging done and reads the tag from
// the skb; 802.1ad frames stay in userspace, see tag_ok_proto), 0 for what the program never
// forwards (not IPv4 TCP/UDP, IPv4 options, fragments, a TCP SYN, FIN or
// RST: the conntrack state machine sees these).
static __always_inline __u32 parse(struct ethhdr *eth, void *end, struct flow_key *k, int tag_ok)
{
	if ((void *)(eth + 1) > end)
		return 0;
	__u32 l3 = sizeof(*eth);
	__u16 proto = eth->h_proto;
	k->vlan_tci = 0;
	if (tag_ok && proto == bpf_htons(ETH_P_8021Q)) {
		__be16 *tag = (void *)(eth + 1);
		if ((void *)(tag + 2) > end)
			return 0;
		k->vlan_tci = bpf_ntohs(tag[0]) | VLAN_CFI;
		proto = tag[1];
		l3 += VLAN_HLEN;
	}
	if (proto != bpf_htons(ETH_P_IP))
		return 0;
	struct iphdr *ip = (void *)eth + l3;
	if ((void *)(ip + 1) > end || ip->ihl != 5 || (ip->frag_off & bpf_htons(0x3fff)))
		return 0;
	if (ip->protocol == IPPROTO_TCP) {
		struct tcphdr *th = (void *)(ip + 1);
		if ((void *)(th + 1) > end || th->syn || th->fin || th->rst)
			return 0;
		k->sport = th->source;
		k->dport = th->dest;
	} else if (ip->protocol == IPPROTO_UDP) {
		struct udphdr *uh = (void *)(ip + 1);
		if ((void *)(uh + 1) > end)
			return 0;
		k->sport = uh->source;
		k->dport = uh->dest;
	} else {
		return 0;
	}
	k->saddr = ip->saddr;
	k->daddr = ip->daddr;
	k->proto = ip->protocol;
	k->ttl = ip->ttl;
	__builtin_memcpy(k->eth_dst, eth->h_dest, 6);
	__builtin_memcpy(k->eth_src, eth->h_source, 6);
	return l3;
}

// parse_geneve fills k's tunnel part from a Geneve datagram and returns
// the offset of its inner frame, or 0 when the datagram is not one the
// program decapsulates: the kernel would drop or treat it otherwise (bad
// outer checksum or lengths; the caller verifies a UDP checksum), or
// govs's tunnel port would (version, payload type, options beyond
// TUN_OPTS_MAX). Then the datagram goes up the kernel's stack as usual.
// The headers are read up to end; len is the whole frame's length (the
// tc program reads the headers into a buffer).
static __always_inline __u32 parse_geneve(struct ethhdr *eth, void *end, __u32 len, struct flow_key *k)
{
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *uh = (void *)(ip + 1);
	__u8 *gh = (void *)(uh + 1);
	if ((void *)(gh + GENEVE_HDR_LEN) > end || ip->protocol != IPPROTO_UDP ||
	    uh->dest != bpf_htons(GENEVE_PORT))
		return 0;
	if (ip_csum(ip) != 0 || bpf_ntohs(ip->tot_len) != len - sizeof(*eth) ||
	    bpf_ntohs(uh->len) != len - sizeof(*eth) - sizeof(*ip))
		return 0; // the kernel drops a bad header, trims padding
	if ((gh[0] >> 6) != 0 || gh[2] != (GENEVE_PROTO_TEB >> 8) || gh[3] != (GENEVE_PROTO_TEB & 0xff))
		return 0;
	__u32 opt_len = (gh[0] & 0x3f) * 4;
	if (opt_len > TUN_OPTS_MAX)
		return 0;
	__u32 *opts = (void *)(gh + GENEVE_HDR_LEN);
#pragma unroll
	for (int i = 0; i < TUN_OPTS_MAX / 4; i++) {
		if (i * 4 >= opt_len)
			break;
		if ((void *)(opts + i + 1) > end)
			return 0;
		k->tun_opts[i] = opts[i];
	}
	k->tun_src = ip->saddr;
	k->tun_dst = ip->daddr;
	k->tun_vni = *(__u32 *)(gh + 4);
	k->tun_flags = gh[1];
	k->tun_opt_len = opt_len;
	__builtin_memcpy(k->outer_dst, eth->h_dest, 6);
	return OUTER_LEN + GENEVE_HDR_LEN + opt_len;
}

// rewrite applies the entry's writes to the frame at eth, which parse
// accepted with its IPv4 header at l3 (the bounds are checked again for
// the verifier). The VLAN tag's changes come after (vlan_xdp), so the
// offsets here are the frame's as received.
static __always_inline int rewrite(struct ethhdr *eth, void *end, struct flow_action *a, __u32 l3)
{
	if (l3 != sizeof(*eth) && l3 != sizeof(*eth) + VLAN_HLEN)
		return 0;
	struct iphdr *ip = (void *)eth + l3;
	if ((void *)(ip + 1) > end)
		return 0;
	if (a->flags & ACT_DEC_TTL) {
		// RFC 1624 update of the checksum, as the kernel's ip_decrease_ttl.
		__u32 check = ip->check;
		check += bpf_htons(0x0100);
		ip->check = (__u16)(check + (check >= 0xFFFF));
		ip->ttl--;
	}
	if (a->flags & ACT_NAT) {
		// The addresses are in the IPv4 header checksum and, with the
		// ports, in the TCP/UDP one (pseudo-header).
		__u32 addrs = csum_diff4(ip->saddr, a->nat_saddr) + csum_diff4(ip->daddr, a->nat_daddr);
		ip->check = csum_apply(ip->check, addrs);
		ip->saddr = a->nat_saddr;
		ip->daddr = a->nat_daddr;
		if (ip->protocol == IPPROTO_TCP) {
			struct tcphdr *th = (void *)(ip + 1);
			if ((void *)(th + 1) > end)
				return 0;
			__u32 d = addrs + csum_diff2(th->source, a->nat_sport) + csum_diff2(th->dest, a->nat_dport);
			th->check = csum_apply(th->check, d);
			th->source = a->nat_sport;
			th->dest = a->nat_dport;
		} else {
			struct udphdr *uh = (void *)(ip + 1);
			if ((void *)(uh + 1) > end)
				return 0;
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
	return 1;
}

// encap writes the outer Ethernet, IPv4, UDP and Geneve headers in front
// of an inner frame of inner_len bytes at data (room made already), as
// govs's tunnel port sends them: DF, ID 0 (an atomic datagram, as the
// kernel's raw socket leaves it), no UDP checksum (csum=false).
static __always_inline int encap(void *data, void *end, struct flow_action *a, __u32 inner_len)
{
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *uh = (void *)(ip + 1);
	__u32 *gh = (void *)(uh + 1);
	if ((void *)(gh + 1) > end)
		return 0;
	__builtin_memcpy(eth->h_dest, a->encap_dmac, 6);
	__builtin_memcpy(eth->h_source, a->encap_smac, 6);
	eth->h_proto = bpf_htons(ETH_P_IP);
	__u16 udp_len = sizeof(*uh) + a->encap_hdr_len + inner_len;
	ip->version = 4;
	ip->ihl = 5;
	ip->tos = 0;
	ip->tot_len = bpf_htons(sizeof(*ip) + udp_len);
	ip->id = 0;
	ip->frag_off = bpf_htons(0x4000);
	ip->ttl = a->encap_ttl;
	ip->protocol = IPPROTO_UDP;
	ip->check = 0;
	ip->saddr = a->encap_saddr;
	ip->daddr = a->encap_daddr;
	ip->check = ip_csum(ip);
	uh->source = a->encap_sport;
	uh->dest = a->encap_dport;
	uh->len = bpf_htons(udp_len);
	uh->check = 0;
#pragma unroll
	for (int i = 0; i < (GENEVE_HDR_LEN + TUN_OPTS_MAX) / 4; i++) {
		if (i * 4 >= a->encap_hdr_len)
			break;
		if ((void *)(gh + i + 1) > end)
			return 0;
		gh[i] = a->encap_hdr[i];
	}
	return 1;
}

// vlan_xdp applies the entry's VLAN change to the frame at the context's
// data (rewritten already), whose IPv4 header is at l3: a pop moves the
// Ethernet addresses over the tag, a push opens room in front of them.
// The L3 and L4 headers and their checksums do not change. Returns 0 when
// the frame could not be changed (it is then lost: the caller aborts).
static __always_inline int vlan_xdp(struct xdp_md *ctx, struct flow_action *a, __u32 l3)
{
	__u32 ops = a->flags & (ACT_PUSH_VLAN | ACT_POP_VLAN | ACT_SET_VLAN);
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u8 macs[2 * ETH_ALEN]; // copied through the stack: the moves overlap
	if (!ops)
		return 1;
	if (ops & (ACT_POP_VLAN | ACT_SET_VLAN)) {
		// Tagged as the key says: the tag is in place.
		__be16 *tag = data + 2 * ETH_ALEN;
		if (l3 != sizeof(struct ethhdr) + VLAN_HLEN || (void *)(tag + 3) > end)
			return 0;
		if (ops == ACT_SET_VLAN) {
			tag[1] = a->vlan_tci;
			return 1;
		}
		if (ops & ACT_PUSH_VLAN) { // a replaced tag
			tag[0] = a->vlan_tpid;
			tag[1] = a->vlan_tci;
			return 1;
		}
		__builtin_memcpy(macs, data, 2 * ETH_ALEN);
		__builtin_memcpy(data + VLAN_HLEN, macs, 2 * ETH_ALEN);
		return !bpf_xdp_adjust_head(ctx, VLAN_HLEN);
	}
	if (l3 != sizeof(struct ethhdr)) // untagged, as the key says
		return 0;
	if (bpf_xdp_adjust_head(ctx, -VLAN_HLEN))
		return 0;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	__be16 *tag = data + 2 * ETH_ALEN;
	if ((void *)(tag + 3) > end)
		return 0;
	__builtin_memcpy(macs, data + VLAN_HLEN, 2 * ETH_ALEN);
	__builtin_memcpy(data, macs, 2 * ETH_ALEN);
	tag[0] = a->vlan_tpid;
	tag[1] = a->vlan_tci;
	return 1;
}

// take returns the entry whose action the kernel applies to the packet
// with key k now, or NULL when the packet goes on to userspace: no entry,
// a stale generation, the entry's keepalive due (one packet a second
// passes, unless the links are held: no process would take it), or a TTL
// dec_ttl must drop (userspace drops it as dec_ttl does).
static __always_inline struct flow_action *take(struct flow_key *k, __u64 now)
{
	__u32 zero = 0, one = 1;
	__u64 *gen = bpf_map_lookup_elem(&generation, &zero);
	__u64 *held = bpf_map_lookup_elem(&generation, &one);
	struct flow_action *a = bpf_map_lookup_elem(&flows, k);
	if (!gen || !held || !a || a->gen != *gen)
		return 0;
	if (!*held && now - a->last_pass >= pass_interval_ns) {
		a->last_pass = now;
		return 0;
	}
	if ((a->flags & ACT_DEC_TTL) && k->ttl <= 1)
		return 0;
	return a;
}

// count adds a forwarded packet of len bytes to the entry.
static __always_inline void count(struct flow_action *a, __u64 len, __u64 now)
{
	__sync_fetch_and_add(&a->packets, 1);
	__sync_fetch_and_add(&a->bytes, len);
	a->last_used = now;
}

SEC("xdp")
int govs_offload(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct flow_key k = {};
	__u32 off = 0; // of the inner frame in a Geneve datagram

	__u32 l3 = parse(eth, end, &k, 1);
	if (!l3)
		return XDP_PASS;
	if (k.proto == IPPROTO_UDP && k.dport == bpf_htons(GENEVE_PORT) && !k.vlan_tci) {
		off = parse_geneve(eth, end, end - data, &k);
		if (!off)
			return XDP_PASS;
		if (data + off > end)
			return XDP_PASS;
		struct iphdr *oip = (void *)(eth + 1);
		struct udphdr *ouh = (void *)(oip + 1);
		if ((void *)(ouh + 1) > end)
			return XDP_PASS;
		if (ouh->check) {
			// A checksummed datagram (a csum=true sender): what the
			// kernel's UDP stack would verify, over what parse_geneve
			// found to end at the frame's end.
			__u64 pseudo = udp_pseudo(oip, ouh);
			int sum = xdp_csum(ctx, OUTER_LEN - sizeof(struct udphdr));
			if (sum < 0)
				return XDP_PASS;
			pseudo += sum;
			pseudo = (pseudo & 0xffffffff) + (pseudo >> 32);
			if (csum_fold((__u32)pseudo) != 0xffff)
				return XDP_PASS;
		}
		l3 = parse(data + off, end, &k, 1); // the inner fields replace the outer ones
		if (!l3)
			return XDP_PASS;
	}
	k.ifindex = ctx->ingress_ifindex;

	__u64 now = bpf_ktime_get_coarse_ns();
	struct flow_action *a = take(&k, now);
	if (!a)
		return XDP_PASS;
	__u32 inner_len = end - data - off;
	__u32 out = a->out_ifindex;
	if (a->flags & ACT_ENCAP) {
		__u32 hdr_len = a->encap_hdr_len;
		if (hdr_len > GENEVE_HDR_LEN + TUN_OPTS_MAX)
			return XDP_PASS;
		__u32 outer = sizeof(struct iphdr) + sizeof(struct udphdr) + hdr_len + inner_len;
		if (outer > a->encap_mtu)
			return XDP_PASS; // userspace drops and counts it (TxMTUDrops)
		if (bpf_xdp_adjust_head(ctx, -(int)(OUTER_LEN + hdr_len)))
			return XDP_PASS;
		off = OUTER_LEN + hdr_len; // the inner frame is now there
	} else if (off) {
		if (bpf_xdp_adjust_head(ctx, off))
			return XDP_PASS;
		off = 0;
	}
	// From here on the packet has changed: it is forwarded or lost.
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	if (off > OUTER_LEN + GENEVE_HDR_LEN + TUN_OPTS_MAX || data + off > end)
		return XDP_ABORTED;
	if (!rewrite(data + off, end, a, l3))
		return XDP_ABORTED;
	if ((a->flags & ACT_ENCAP) && !encap(data, end, a, inner_len))
		return XDP_ABORTED;
	if ((a->flags & (ACT_ENCAP | ACT_ENCAP_CSUM)) == (ACT_ENCAP | ACT_ENCAP_CSUM)) {
		// After every write of the datagram: the sum covers the inner
		// frame as it leaves.
		struct iphdr *eip = data + sizeof(struct ethhdr);
		struct udphdr *euh = (void *)(eip + 1);
		if ((void *)(euh + 1) > end)
			return XDP_ABORTED;
		__u64 sum = udp_pseudo(eip, euh);
		int payload = xdp_csum(ctx, OUTER_LEN - sizeof(struct udphdr));
		if (payload < 0)
			return XDP_ABORTED; // longer than CSUM_MAX: install refuses such MTUs
		data = (void *)(long)ctx->data;
		end = (void *)(long)ctx->data_end;
		eip = data + sizeof(struct ethhdr);
		euh = (void *)(eip + 1);
		if ((void *)(euh + 1) > end)
			return XDP_ABORTED;
		sum += payload;
		sum = (sum & 0xffffffff) + (sum >> 32);
		__u16 c = ~csum_fold((__u32)sum);
		euh->check = c ? c : 0xffff; // 0 means none
	}
	// Not with tunnels (userspace keeps those): the frame is at data.
	if (!off && !vlan_xdp(ctx, a, l3))
		return XDP_ABORTED;
	count(a, inner_len, now);
	return bpf_redirect(out, 0);
}

// The tc path (docs/offload.md, "XDP and TCX"): ports whose frames carry
// offload metadata (TSO/GSO super-segments, partial checksums) keep their
// skbs whole, which generic XDP would linearise and strip of that
// metadata. The port's AF_PACKET socket is not a tap (a ptype_all tap
// would see, and pay for, every frame before tc ingress): it is bound to
// UPCALL_ETH_P and gets only what govs_offload_tc sends up (upcall). The
// program decides alone, once per frame: forwarded, or sent up.
//
// The upcall header (datapath/port/upcall.go has the same values): a frame
// sent up is [dst][src][UPCALL_ETH_P][X][the frame from its own ethertype
// on]. X tells what became of the tag the kernel held outside the frame,
// which the receive path would drop before a protocol-bound socket sees
// the frame: UPCALL_NO_TAG (no tag), UPCALL_TAG_FOLLOWS (the tag follows
// as TPID and TCI: 802.1ad, or 802.1Q with VID 4095), else the TCI of an
// 802.1Q tag. VID 4095 is reserved by 802.1Q, so the codes are never TCIs.
#define UPCALL_ETH_P 0x88b5 // IEEE 802 Local Experimental Ethertype 1
#define UPCALL_NO_TAG 0x0fff
#define UPCALL_TAG_FOLLOWS 0x1fff
#define VLAN_VID_MASK 0x0fff
// skb->mark of a frame sent up, so that its second pass through the
// program is told from a frame a pod sent with UPCALL_ETH_P (a frame from
// another namespace arrives with the mark cleared, skb_scrub_packet).
#define UPCALL_MARK 0x676f7673 // "govs"

// The tc program's working space (the stack is too small for the key
// and the helpers' buffers), and its per-CPU counters.
struct tc_scratch {
	__u64 upcalls;       // frames sent up by this CPU
	__u64 upcall_errors; // frames lost on the way up (a helper failed)
	struct flow_key key;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tc_scratch);
} scratch SEC(".maps");


// What the tc path reads of a frame: Ethernet, IPv4 without options and
// the TCP header (a UDP frame needs 42 of these bytes).
#define TC_HDR_LEN (sizeof(struct ethhdr) + sizeof(struct iphdr) + sizeof(struct tcphdr))
#define UDP_HDR_END (sizeof(struct ethhdr) + sizeof(struct iphdr) + sizeof(struct udphdr))

// key_of fills k from the frame's headers between eth and end (a copy on
// the stack, or the packet itself), with the tag the kernel holds aside
// and the ingress interface, and *l4_len with the TCP or UDP header's
// length; 0: not forwarded.
static __always_inline int key_of(struct __sk_buff *skb, void *eth, void *end, struct flow_key *k, __u32 *l4_len)
{
	// The kernel took the outer tag out of the frame before tc
	// (skb_vlan_untag): a tag still in it is a second one.
	if (!parse(eth, end, k, 0))
		return 0;
	if (skb->vlan_present) {
		// 802.1Q only, as XDP's parse: an 802.1ad tag goes to userspace,
		// whose packet socket refuses a full-size frame with one
		// (EMSGSIZE: only 802.1Q gets the 4 extra bytes), where the
		// kernel would forward it.
		if (skb->vlan_proto != bpf_htons(ETH_P_8021Q))
			return 0;
		k->vlan_tci = (__u16)skb->vlan_tci | VLAN_CFI;
	}
	*l4_len = sizeof(struct udphdr);
	if (k->proto == IPPROTO_TCP)
		*l4_len = ((struct tcphdr *)(eth + sizeof(struct ethhdr) + sizeof(struct iphdr)))->doff * 4;
	k->ifindex = skb->ifindex;
	return 1;
}

// skb_key_at fills k (key_of) from the headers of the frame at off in
// the skb, copied out with bpf_skb_load_bytes (a super-segment's headers
// need not be in the linear part).
static __always_inline int skb_key_at(struct __sk_buff *skb, __u32 off, struct flow_key *k, __u32 *l4_len)
{
	// Two bytes in, so that the IPv4 and TCP headers are 4-byte aligned
	// on the stack as the verifier wants.
	// Left uninitialised: parse reads no byte past the n loaded.
	__u64 raw[(TC_HDR_LEN + 2 + 7) / 8];
	__u8 *buf = (__u8 *)raw + 2;
	__u32 n = TC_HDR_LEN;
	if (skb->len < off + TC_HDR_LEN)
		n = UDP_HDR_END;
	if (skb->len < off + n || bpf_skb_load_bytes(skb, off, buf, n))
		return 0;
	return key_of(skb, buf, buf + n, k, l4_len);
}

// skb_key is skb_key_at for the frame itself, read in place when its
// headers are in the skb's linear part (a frame a pod's stack built:
// almost always), which saves copying them out.
static __always_inline int skb_key(struct __sk_buff *skb, struct flow_key *k, __u32 *l4_len)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	if (data + TC_HDR_LEN > end)
		return skb_key_at(skb, 0, k, l4_len);
	return key_of(skb, data, end, k, l4_len);
}

// encap_fits tells whether the tc program can put the frame in Geneve
// for entry a (else it goes to userspace, which segments, encapsulates
// and drops what exceeds the MTU as before): every packet the underlay
// sends, each segment of a super-segment (GSO) or the frame itself,
// fits the underlay MTU with the outer headers, the outer IPv4 length
// fits its 16 bits, and a super-segment is TCP (bpf_skb_adjust_room
// refuses UDP GSO unless its segment size is fixed, and a UDP segment
// would be cut differently from the tunnel port's).
static __always_inline int encap_fits(struct __sk_buff *skb, struct flow_action *a, __u32 l4_len)
{
	__u32 outer = sizeof(struct iphdr) + sizeof(struct udphdr) + a->encap_hdr_len;
	if (a->encap_hdr_len > GENEVE_HDR_LEN + TUN_OPTS_MAX || outer + skb->len > 0xffff)
		return 0;
	if (!skb->gso_size)
		return outer + skb->len <= a->encap_mtu;
	__u32 seg = sizeof(struct ethhdr) + sizeof(struct iphdr) + l4_len + skb->gso_size;
	return l4_len != sizeof(struct udphdr) && outer + seg <= a->encap_mtu;
}

// csum_fits tells whether the tc program can checksum the datagram it
// puts the frame in (csum=true, see skb_encap): a frame, not a
// super-segment (each of its segments needs its own checksum, which
// bpf_skb_adjust_room cannot ask the kernel for), whose IPv4 packet
// ends the frame (no Ethernet padding), with a TCP or UDP checksum (not
// a UDP one of 0), and no tag the kernel would push into its data (a
// second tag on a tagged frame). The rest goes to userspace.
static __always_inline int csum_fits(struct __sk_buff *skb, struct flow_key *k, struct flow_action *a)
{
	__u16 tot_len, check = 1;
	if (skb->gso_size)
		return 0;
	if ((a->flags & (ACT_PUSH_VLAN | ACT_POP_VLAN)) == ACT_PUSH_VLAN && k->vlan_tci)
		return 0;
	if (bpf_skb_load_bytes(skb, sizeof(struct ethhdr) + offsetof(struct iphdr, tot_len), &tot_len, 2) ||
	    skb->len != sizeof(struct ethhdr) + bpf_ntohs(tot_len))
		return 0;
	if (k->proto == IPPROTO_UDP &&
	    bpf_skb_load_bytes(skb, sizeof(struct ethhdr) + sizeof(struct iphdr) + offsetof(struct udphdr, check), &check, 2))
		return 0;
	return check != 0;
}

// decide is the tc path's one lookup: the entry that forwards the frame
// (counted), its key in v, or 0 (the frame goes up). Decapsulation is
// govs_underlay_tc's.
static __always_inline struct flow_action *decide(struct __sk_buff *skb, struct tc_scratch *v)
{
	__u32 l4_len = 0;
	if (!skb_key(skb, &v->key, &l4_len))
		return 0;
	__u64 now = bpf_ktime_get_coarse_ns();
	struct flow_action *a = take(&v->key, now);
	if (!a || (a->flags & ACT_DECAP))
		return 0;
	if ((a->flags & ACT_ENCAP) && !encap_fits(skb, a, l4_len))
		return 0;
	if ((a->flags & (ACT_ENCAP | ACT_ENCAP_CSUM)) == (ACT_ENCAP | ACT_ENCAP_CSUM) && !csum_fits(skb, &v->key, a))
		return 0;
	// Counted as the port saw it, with its tag (the skb holds it aside).
	count(a, skb->len + (v->key.vlan_tci ? VLAN_HLEN : 0), now);
	return a;
}

// upcall sends the frame up to the port's socket (the header above): the
// tag held aside goes into the header, the header after the MACs, and the
// frame to the ingress of its own interface, where eth_type_trans makes
// UPCALL_ETH_P its protocol. That second pass skips the taps' and tc's
// work (govs_offload_tc passes it at once) and reaches only the sockets
// bound to UPCALL_ETH_P: no IP stack, no other handler. A redirect to
// ingress does not check the MTU (__bpf_rx_skb), so a full-size frame
// with its header goes up whole.
static __always_inline int upcall(struct __sk_buff *skb, struct tc_scratch *v)
{
	struct ethhdr eth;
	__u16 tci = (__u16)skb->vlan_tci;
	// The tag, if any, is left on the skb: the second pass clears it
	// before the socket (bpf_skb_vlan_pop would also move a second tag
	// out of the frame into its place).
	int follows = skb->vlan_present &&
		      (skb->vlan_proto != bpf_htons(ETH_P_8021Q) || (tci & VLAN_VID_MASK) == VLAN_VID_MASK);
	__u16 x = skb->vlan_present ? tci : UPCALL_NO_TAG;
	if (bpf_skb_load_bytes(skb, 0, &eth, sizeof(eth)))
		goto lost;
	// IPv4 and IPv6 get the room after the Ethernet header
	// (bpf_skb_adjust_room moves the MACs), which copies the skb's head
	// only if that is shared: a TCP segment is a clone whose header is
	// its own. bpf_skb_change_head, which the others need (adjust_room
	// takes IP only), copies the head of every clone.
	int ip = skb->protocol == bpf_htons(ETH_P_IP) || skb->protocol == bpf_htons(ETH_P_IPV6);
	if (follows) {
		__u16 hdr[5] = {bpf_htons(UPCALL_ETH_P), bpf_htons(UPCALL_TAG_FOLLOWS), (__u16)skb->vlan_proto,
				bpf_htons(tci), eth.h_proto};
		if (ip ? bpf_skb_adjust_room(skb, 8, BPF_ADJ_ROOM_MAC, BPF_F_ADJ_ROOM_FIXED_GSO)
		       : bpf_skb_change_head(skb, 8, 0))
			goto lost;
		if (bpf_skb_store_bytes(skb, 12, hdr, sizeof(hdr), 0))
			goto lost;
	} else {
		__u16 hdr[3] = {bpf_htons(UPCALL_ETH_P), bpf_htons(x), eth.h_proto};
		if (ip ? bpf_skb_adjust_room(skb, 4, BPF_ADJ_ROOM_MAC, BPF_F_ADJ_ROOM_FIXED_GSO)
		       : bpf_skb_change_head(skb, 4, 0))
			goto lost;
		if (bpf_skb_store_bytes(skb, 12, hdr, sizeof(hdr), 0))
			goto lost;
	}
	if (!ip && bpf_skb_store_bytes(skb, 0, &eth, 12, 0))
		goto lost;
	skb->mark = UPCALL_MARK;
	v->upcalls++;
	return bpf_redirect(skb->ifindex, BPF_F_INGRESS);
lost:
	v->upcall_errors++;
	return TC_ACT_SHOT;
}

#define IP_CSUM_OFF (sizeof(struct ethhdr) + offsetof(struct iphdr, check))
#define IP_TTL_OFF (sizeof(struct ethhdr) + offsetof(struct iphdr, ttl))
#define IP_SRC_OFF (sizeof(struct ethhdr) + offsetof(struct iphdr, saddr))
#define L4_OFF (sizeof(struct ethhdr) + sizeof(struct iphdr))

// skb_rewrite applies the entry's writes with the skb helpers, which
// keep the checksum state right: with CHECKSUM_PARTIAL the TCP/UDP check
// holds the pseudo-header sum only, and BPF_F_PSEUDO_HDR updates exactly
// that (a port is then left to the checksum the device or stack finishes).
static __always_inline int skb_rewrite(struct __sk_buff *skb, struct flow_key *k, struct flow_action *a)
{
	if (a->flags & ACT_DEC_TTL) {
		__u16 old = bpf_htons((__u16)k->ttl << 8 | k->proto);
		__u16 new = bpf_htons((__u16)(k->ttl - 1) << 8 | k->proto);
		__u8 ttl = k->ttl - 1;
		if (bpf_l3_csum_replace(skb, IP_CSUM_OFF, old, new, 2) ||
		    bpf_skb_store_bytes(skb, IP_TTL_OFF, &ttl, 1, 0))
			return 0;
	}
	if (a->flags & ACT_NAT) {
		__u32 l4_csum = L4_OFF + (k->proto == IPPROTO_TCP ? offsetof(struct tcphdr, check) : offsetof(struct udphdr, check));
		__u64 l4f = k->proto == IPPROTO_UDP ? BPF_F_MARK_MANGLED_0 : 0;
		if (bpf_l3_csum_replace(skb, IP_CSUM_OFF, k->saddr, a->nat_saddr, 4) ||
		    bpf_l3_csum_replace(skb, IP_CSUM_OFF, k->daddr, a->nat_daddr, 4) ||
		    bpf_l4_csum_replace(skb, l4_csum, k->saddr, a->nat_saddr, l4f | BPF_F_PSEUDO_HDR | 4) ||
		    bpf_l4_csum_replace(skb, l4_csum, k->daddr, a->nat_daddr, l4f | BPF_F_PSEUDO_HDR | 4) ||
		    bpf_l4_csum_replace(skb, l4_csum, k->sport, a->nat_sport, l4f | 2) ||
		    bpf_l4_csum_replace(skb, l4_csum, k->dport, a->nat_dport, l4f | 2))
			return 0;
		__u32 addrs[2] = {a->nat_saddr, a->nat_daddr};
		__u16 ports[2] = {a->nat_sport, a->nat_dport};
		if (bpf_skb_store_bytes(skb, IP_SRC_OFF, addrs, 8, 0) ||
		    bpf_skb_store_bytes(skb, L4_OFF, ports, 4, 0))
			return 0;
	}
	if (a->flags & ACT_SET_ETH) {
		__u8 macs[12];
		__builtin_memcpy(macs, a->eth_dst, 6);
		__builtin_memcpy(macs + 6, a->eth_src, 6);
		if (bpf_skb_store_bytes(skb, 0, macs, 12, 0))
			return 0;
	}
	return 1;
}

// skb_vlan applies the entry's VLAN change. The tc path's skb holds its
// tag aside (hardware-accelerated form, vlan_tci): popping and pushing
// it moves no data, so the L3/L4 offsets and checksums skb_rewrite used
// stay valid, and the output device or the kernel puts the tag in the
// frame (validate_xmit_vlan) where it must.
static __always_inline int skb_vlan(struct __sk_buff *skb, struct flow_action *a)
{
	__u32 ops = a->flags & (ACT_PUSH_VLAN | ACT_POP_VLAN | ACT_SET_VLAN);
	if (!ops)
		return 1;
	__be16 proto = a->vlan_tpid;
	if (ops == ACT_SET_VLAN)
		proto = skb->vlan_proto; // the tag's own, kept
	if (bpf_skb_vlan_pop(skb))
		return 0;
	if (ops == ACT_POP_VLAN)
		return 1;
	return !bpf_skb_vlan_push(skb, proto, bpf_ntohs(a->vlan_tci));
}

// encap_csum writes the outer UDP checksum into the headers encap wrote
// in buf, for the frame (csum_fits) whose Ethernet and IPv4 headers are
// at inner (as it leaves: rewritten). It sums the headers and, for the
// inner TCP or UDP segment, what its checksum makes that segment sum to
// once complete: the complement of its pseudo-header's sum (the kernel's
// local checksum offload, lco_csum). That holds whether the segment's
// checksum is complete or left to the device (CHECKSUM_PARTIAL, a pod
// keeping its offloads: the check field holds the pseudo-header sum
// until the underlay finishes it, after this), and needs no pass over
// the payload. Only a segment with a wrong checksum gets a different
// outer one than userspace's sum over the bytes (the receiver drops it
// at the outer UDP instead of the inner TCP/UDP).
static __always_inline void encap_csum(__u8 *buf, __u8 *inner, struct flow_key *k, struct flow_action *a)
{
	struct iphdr *ip = (void *)(buf + sizeof(struct ethhdr));
	struct udphdr *uh = (void *)(ip + 1);
	__u32 *w = (void *)uh; // the UDP and Geneve headers: 4-byte words
	__u16 *iw = (__u16 *)inner;
	struct iphdr *iip = (void *)(inner + ETH_HLEN);
	__u64 s = udp_pseudo(ip, uh);
#pragma unroll
	for (int i = 0; i < (sizeof(struct udphdr) + GENEVE_HDR_LEN + TUN_OPTS_MAX) / 4; i++) {
		if (i * 4 >= sizeof(struct udphdr) + a->encap_hdr_len)
			break;
		s += w[i];
	}
#pragma unroll
	for (int i = 0; i < (ETH_HLEN + sizeof(struct iphdr)) / 2; i++)
		s += iw[i];
	__u64 l4 = (__u64)iip->saddr + iip->daddr + bpf_htons(k->proto) +
		   bpf_htons(bpf_ntohs(iip->tot_len) - sizeof(struct iphdr));
	l4 = (l4 & 0xffffffff) + (l4 >> 32);
	s += (__u16)~csum_fold((__u32)l4);
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffffffff) + (s >> 32);
	__u16 c = ~csum_fold((__u32)s);
	uh->check = c ? c : 0xffff; // 0 means none
}

// skb_encap puts the (rewritten) frame in Geneve with the outer headers
// the XDP path writes (encap). bpf_skb_adjust_room opens the room after
// the Ethernet header and marks the skb as a UDP tunnel with an
// Ethernet inner frame (encapsulation, inner headers, inner protocol
// ETH_P_TEB; a super-segment gets SKB_GSO_UDP_TUNNEL, its segment size
// kept: FIXED_GSO, encap_fits checked it), so the underlay's driver or
// the kernel's software GSO (__skb_udp_tunnel_segment) cuts it into
// datagrams, fixing each outer IPv4 length, ID and checksum and UDP
// length and finishing the inner checksums. The helper never sets
// SKB_GSO_UDP_TUNNEL_CSUM, so a super-segment's outer UDP checksum stays
// 0: csum=true entries take frames only (csum_fits), whose checksum
// encap_csum computes. The frame's own Ethernet header is then copied in
// as the inner one.
static __always_inline int skb_encap(struct __sk_buff *skb, struct flow_key *k, struct flow_action *a)
{
	__u32 hdr_len = a->encap_hdr_len;
	__u32 inner_len = skb->len;
	// The inner Ethernet and IPv4 headers, two bytes in (4-byte aligned
	// IPv4 words).
	__u64 inner_raw[(2 + ETH_HLEN + sizeof(struct iphdr) + 7) / 8] = {};
	__u8 *inner_eth = (__u8 *)inner_raw + 2;
	// Two bytes in, as in skb_key: the outer IPv4 header 4-byte aligned.
	__u64 raw[(2 + OUTER_LEN + GENEVE_HDR_LEN + TUN_OPTS_MAX + 7) / 8] = {};
	__u8 *buf = (__u8 *)raw + 2;
	if (hdr_len < GENEVE_HDR_LEN || hdr_len > GENEVE_HDR_LEN + TUN_OPTS_MAX)
		return 0;
	if (bpf_skb_load_bytes(skb, 0, inner_eth, ETH_HLEN + sizeof(struct iphdr)))
		return 0;
	__u64 flags = BPF_F_ADJ_ROOM_FIXED_GSO | BPF_F_ADJ_ROOM_ENCAP_L3_IPV4 | BPF_F_ADJ_ROOM_ENCAP_L4_UDP |
		      BPF_F_ADJ_ROOM_ENCAP_L2_ETH | BPF_F_ADJ_ROOM_ENCAP_L2(ETH_HLEN);
	if (bpf_skb_adjust_room(skb, OUTER_LEN - ETH_HLEN + hdr_len + ETH_HLEN, BPF_ADJ_ROOM_MAC, flags))
		return 0;
	if (!encap(buf, buf + OUTER_LEN + GENEVE_HDR_LEN + TUN_OPTS_MAX, a, inner_len))
		return 0;
	if (a->flags & ACT_ENCAP_CSUM)
		encap_csum(buf, inner_eth, k, a);
	return !bpf_skb_store_bytes(skb, 0, buf, OUTER_LEN + hdr_len, 0) &&
	       !bpf_skb_store_bytes(skb, OUTER_LEN + hdr_len, inner_eth, ETH_HLEN, 0);
}

// skb_decap is the tc path's decapsulation, on a Geneve underlay
// (Kernel.AttachUnderlay): a datagram whose inner frame has an entry
// (ACT_DECAP) loses its outer IPv4, UDP and Geneve headers and inner
// Ethernet header with bpf_skb_adjust_room, gets the inner Ethernet
// header back, the entry's writes, and goes to the output (a veth's pod
// end directly, bpf_redirect_peer). The skb stays as it came (generic
// XDP copies every non-linear skb, as a segment the sender's GSO cut is,
// or one with little headroom) and reaches the pod in the same pass.
// -1: not decapsulated here
// (not a Geneve datagram, no entry, its keepalive, or an entry that
// encapsulates again, tunnel to tunnel: userspace): the frame goes on as
// before, to the UDP stack and govs's tunnel socket. The checks are the
// XDP path's (parse_geneve, parse).
static __always_inline int skb_decap(struct __sk_buff *skb)
{
	// Outer Ethernet, IPv4, UDP and Geneve with options, two bytes in as
	// in skb_key_at.
	__u64 raw[(OUTER_LEN + GENEVE_HDR_LEN + TUN_OPTS_MAX + 2 + 7) / 8] = {};
	__u8 *buf = (__u8 *)raw + 2;
	__u32 n = OUTER_LEN + GENEVE_HDR_LEN + TUN_OPTS_MAX;
	struct flow_key k = {};
	if (skb->gso_size)
		return -1; // a super-datagram (a veth keeping offloads): userspace, as with XDP
	if (skb->len < n) {
		n = OUTER_LEN + GENEVE_HDR_LEN;
		if (skb->len < n)
			return -1;
	}
	if (bpf_skb_load_bytes(skb, 0, buf, n))
		return -1;
	struct ethhdr *eth = (void *)buf;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *uh = (void *)(ip + 1);
	if (eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5 || ip->protocol != IPPROTO_UDP ||
	    uh->dest != bpf_htons(GENEVE_PORT) || (ip->frag_off & bpf_htons(0x3fff)))
		return -1;
	__u32 off = parse_geneve(eth, buf + n, skb->len, &k);
	// A checksummed datagram (a csum=true sender): what the kernel's UDP
	// stack would verify, unless the device did (CHECKSUM_UNNECESSARY).
	if (off && uh->check && bpf_csum_level(skb, BPF_CSUM_LEVEL_QUERY) < 0) {
		__u64 pseudo = udp_pseudo(ip, uh);
		if (bpf_skb_pull_data(skb, skb->len))
			return -1;
		int sum = skb_csum(skb, OUTER_LEN - sizeof(struct udphdr));
		if (sum < 0)
			return -1;
		pseudo += sum;
		pseudo = (pseudo & 0xffffffff) + (pseudo >> 32);
		if (csum_fold((__u32)pseudo) != 0xffff)
			return -1;
	}
	__u32 l4_len = 0;
	if (!off || off > OUTER_LEN + GENEVE_HDR_LEN + TUN_OPTS_MAX || !skb_key_at(skb, off, &k, &l4_len))
		return -1;
	k.ifindex = skb->ifindex;
	__u64 now = bpf_ktime_get_coarse_ns();
	struct flow_action *a = take(&k, now);
	if (!a || !(a->flags & ACT_DECAP) || (a->flags & ACT_ENCAP))
		return -1;
	__u8 inner_eth[ETH_HLEN];
	if (bpf_skb_load_bytes(skb, off, inner_eth, ETH_HLEN))
		return -1;
	__u32 inner_len = skb->len - off;
	// Removes what follows the outer Ethernet header up to the inner
	// IPv4 header: the outer Ethernet header takes the inner one's place.
	if (bpf_skb_adjust_room(skb, -(__s32)off, BPF_ADJ_ROOM_MAC, 0))
		return -1;
	// From here on the packet has changed: it is forwarded or lost.
	if (bpf_skb_store_bytes(skb, 0, inner_eth, ETH_HLEN, 0) || !skb_rewrite(skb, &k, a))
		return TC_ACT_SHOT;
	count(a, inner_len, now);
	if (a->flags & ACT_PEER)
		return bpf_redirect_peer(a->out_ifindex, 0);
	return bpf_redirect(a->out_ifindex, 0);
}

SEC("tc")
int govs_offload_tc(struct __sk_buff *skb)
{
	// A frame upcall sent up, on its second pass: on to the socket.
	if (skb->protocol == bpf_htons(UPCALL_ETH_P) && skb->mark == UPCALL_MARK)
		return TC_ACT_OK;
	__u32 zero = 0;
	struct tc_scratch *v = bpf_map_lookup_elem(&scratch, &zero);
	if (!v)
		return TC_ACT_SHOT; // cannot happen: a one-element array
	// The entry's memory stays valid while the program runs (RCU), even
	// if userspace deletes it meanwhile, as in XDP.
	struct flow_action *a = decide(skb, v);
	if (!a)
		return upcall(skb, v);
	if (!skb_rewrite(skb, &v->key, a) || !skb_vlan(skb, a))
		return TC_ACT_SHOT; // changed half-way: lost, as XDP_ABORTED
	if (a->flags & ACT_ENCAP) {
		if (!skb_encap(skb, &v->key, a))
			return TC_ACT_SHOT;
		// Through the neighbour layer, not bpf_redirect: that marks the
		// skb redirected (__bpf_tx_skb), a mark a veth underlay carries
		// into the other node's namespace, where generic XDP passes
		// redirected skbs without running (skb_is_redirected): the peer
		// would decapsulate in userspace. The neighbour layer writes
		// the same outer Ethernet addresses (the entry was installed
		// once geneve.Resolver found that neighbour on this interface).
		return bpf_redirect_neigh(a->out_ifindex, 0, 0, 0);
	}
	if (a->flags & ACT_PEER)
		return bpf_redirect_peer(a->out_ifindex, 0);
	return bpf_redirect(a->out_ifindex, 0);
}

// govs_underlay_tc is the program on a Geneve underlay (TCX ingress):
// what it does not decapsulate goes on to the kernel's UDP stack and the
// tunnel port's socket, as without it.
SEC("tc")
int govs_underlay_tc(struct __sk_buff *skb)
{
	int r = skb_decap(skb);
	return r >= 0 ? r : TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
