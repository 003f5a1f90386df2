package flowtable

import (
	"maps"
	"slices"
)

// PortVLAN is how NORMAL treats one port's VLANs: OVS's Port tag, trunks
// and vlan_mode (ovs-vswitchd.conf.db(5), "VLAN Configuration").
type PortVLAN struct {
	// Access makes the port an access port of VLAN Tag: it takes
	// untagged (or priority-tagged) frames into VLAN Tag and sends
	// frames of VLAN Tag untagged. Otherwise the port is a trunk.
	Access bool
	Tag    uint16
	// Trunks are the VLANs a trunk carries (frames of VLAN 0, untagged,
	// included only when 0 is listed); empty: every VLAN.
	Trunks []uint16
}

// carries tells whether the port is in VLAN vlan.
func (v PortVLAN) carries(vlan uint16) bool {
	if v.Access {
		return v.Tag == vlan
	}
	return len(v.Trunks) == 0 || slices.Contains(v.Trunks, vlan)
}

// SetPortVLANs replaces the VLAN roles of the bridge's ports for NORMAL;
// ports not listed are trunks of every VLAN (OVS's default).
func (p *Pipeline) SetPortVLANs(m map[uint32]PortVLAN) {
	if len(m) == 0 {
		p.vlans.Store(nil)
	} else {
		c := maps.Clone(m)
		p.vlans.Store(&c)
	}
	p.BumpGeneration() // cached NORMAL decisions depend on them
}

// portVLAN returns port's VLAN role (a trunk of every VLAN by default).
func (x *xlate) portVLAN(port uint32) PortVLAN {
	if m := x.p.vlans.Load(); m != nil {
		return (*m)[port]
	}
	return PortVLAN{}
}

// reservedMulticast tells a destination NORMAL never forwards: the IEEE
// 802.1D reserved group addresses 01:80:c2:00:00:00 to 0f (STP, pause,
// LACP, LLDP, 802.1X, ...), which OVS drops unless other_config
// forward-bpdu is set.
func reservedMulticast(dst [6]byte) bool {
	return dst[0] == 0x01 && dst[1] == 0x80 && dst[2] == 0xc2 && dst[3] == 0 && dst[4] == 0 && dst[5] <= 0x0f
}

// normalInput works out the VLAN of a frame NORMAL received, or false
// when the input port's VLAN settings refuse it.
func (x *xlate) normalInput(in uint32, vid uint16) (uint16, bool) {
	pv := x.portVLAN(in)
	switch {
	case pv.Access && vid != 0:
		x.note("NORMAL: dropping VLAN %d tagged packet received on port %d configured as VLAN %d access port", vid, in, pv.Tag)
		return 0, false
	case pv.Access:
		return pv.Tag, true
	case !pv.carries(vid):
		x.note("NORMAL: dropping VLAN %d packet received on port %d not configured for trunking VLAN %d", vid, in, vid)
		return 0, false
	}
	return vid, true
}

// normalOutput sends a frame of VLAN vlan (received with VLAN id vid, 0
// untagged) to port as the port's role wants it: untagged on an access
// port, tagged with vlan on a trunk (untagged for VLAN 0). The frame is
// put back as it was for the next output.
func (x *xlate) normalOutput(port uint32, vlan, vid uint16) {
	want := vlan
	if x.portVLAN(port).Access {
		want = 0
	}
	switch {
	case want == vid:
		x.emit(port)
	case want == 0:
		x.do(&PopVLAN{})
		x.emit(port)
		x.do(&PushVLAN{EthType: 0x8100})
		x.setVID(vid)
	case vid == 0:
		x.do(&PushVLAN{EthType: 0x8100})
		x.setVID(want)
		x.emit(port)
		x.do(&PopVLAN{})
	default:
		x.setVID(want)
		x.emit(port)
		x.setVID(vid)
	}
}

// setVID sets the VLAN id of a tagged frame.
func (x *xlate) setVID(vid uint16) {
	v := VlanCFI | vid
	x.do(&SetField{Field: FieldVlanVID, Value: []byte{byte(v >> 8), byte(v)}, Mask: []byte{0x1f, 0xff}})
}
