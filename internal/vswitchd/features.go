package vswitchd

import "strings"

// DatapathFeature is one capability of the datapath as Open vSwitch
// reports it twice: in the Datapath table's capabilities column (Key,
// written when ovs-vswitchd first sees a Datapath row of a type it runs,
// ofproto-dpif.c get_datapath_cap) and in `ovs-appctl
// dpif/show-dp-features` (Label; "" when OVS does not print it there).
// Controllers read the column to decide what to ask for (ovn-controller:
// ct_zero_snat, ct_flush, max_hash_alg, check_pkt_len), so each value
// says what govs does, not what OVS would.
type DatapathFeature struct {
	Key, Label string
	// Value is the capabilities value: "true"/"false" or a number.
	Value string
	// Show, when set, is what dpif/show-dp-features prints instead of
	// Value as Yes/No (OVS prints the sample nesting depth there but a
	// boolean in the column).
	Show string
}

// DatapathFeatures are govs's capabilities, in the order
// dpif/show-dp-features prints them (Open vSwitch 3.1's order), with the
// capabilities-only keys last.
var DatapathFeatures = []DatapathFeature{
	{Key: "masked_set_action", Label: "Masked set action", Value: "true"},
	{Key: "tnl_push_pop", Label: "Tunnel push pop", Value: "true"},
	{Key: "ufid", Label: "Ufid", Value: "false"}, // no datapath flow ids
	// output(max_len) truncation is not implemented.
	{Key: "trunc", Label: "Truncate action", Value: "false"},
	{Key: "clone", Label: "Clone action", Value: "true"},
	// No sample action.
	{Key: "sample_nesting", Label: "Sample nesting", Value: "false", Show: "0"},
	{Key: "ct_eventmask", Label: "Conntrack eventmask", Value: "false"},
	{Key: "ct_clear", Label: "Conntrack clear", Value: "true"},
	// Select groups hash the 5-tuple; there is no dp_hash algorithm
	// (OVS: 1, the symmetric L4 hash).
	{Key: "max_hash_alg", Label: "Max dp_hash algorithm", Value: "0"},
	{Key: "check_pkt_len", Label: "Check pkt length action", Value: "true"},
	// No Datapath.ct_zones timeout policies.
	{Key: "ct_timeout", Label: "Conntrack timeout policy", Value: "false"},
	{Key: "explicit_drop_action", Label: "Explicit Drop action", Value: "false"},
	{Key: "lb_output_action", Label: "Optimized Balance TCP mode", Value: "false"},
	// nat(src=0.0.0.0) keeps the address and changes the port only on a
	// collision (conntrack TestZeroSNAT).
	{Key: "ct_zero_snat", Label: "Conntrack all-zero IP SNAT", Value: "true"},
	{Key: "add_mpls", Label: "MPLS Label add", Value: "false"},
	{Key: "max_vlan_headers", Label: "Max VLAN headers", Value: "1"},
	// The flow key holds the top label stack entry only (OVS: 3).
	{Key: "max_mpls_depth", Label: "Max MPLS depth", Value: "1"},
	{Key: "recirc", Label: "Recirc", Value: "true"},
	{Key: "ct_state", Label: "CT state", Value: "true"},
	{Key: "ct_zone", Label: "CT zone", Value: "true"},
	{Key: "ct_mark", Label: "CT mark", Value: "true"},
	{Key: "ct_label", Label: "CT label", Value: "true"},
	{Key: "ct_state_nat", Label: "CT state NAT", Value: "true"},
	{Key: "ct_orig_tuple", Label: "CT orig tuple", Value: "true"},
	{Key: "ct_orig_tuple6", Label: "CT orig tuple for IPv6", Value: "true"},
	{Key: "nd_ext", Label: "IPv6 ND Extension", Value: "false"},
	// NXT_CT_FLUSH (flush by tuple) is not implemented; NXT_CT_FLUSH_ZONE is.
	{Key: "ct_flush", Value: "false"},
}

// DatapathCapabilities is the Datapath.capabilities map govs writes.
func DatapathCapabilities() map[string]string {
	m := make(map[string]string, len(DatapathFeatures))
	for _, f := range DatapathFeatures {
		m[f.Key] = f.Value
	}
	return m
}

// ShowDPFeatures is the text of dpif/show-dp-features.
func ShowDPFeatures() string {
	var b strings.Builder
	for _, f := range DatapathFeatures {
		if f.Label == "" {
			continue
		}
		v := f.Show
		switch {
		case v != "":
		case f.Value == "true":
			v = "Yes"
		case f.Value == "false":
			v = "No"
		default:
			v = f.Value
		}
		b.WriteString(f.Label + ": " + v + "\n")
	}
	return b.String()
}
