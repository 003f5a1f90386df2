package vswitchd

import (
	"testing"

	"github.com/govs-project/govs/datapath/port/ifioctl"
	"github.com/govs-project/govs/ofproto"
)

// TestPortFeaturesLikeOVS: ETHTOOL_GSET settings become the features
// netdev_linux_read_features and ofport_open give: one speed bit for the
// speeds OpenFlow names (duplex only below 10 Gb/s), none for another or
// an unknown speed, the medium from the port type, speeds in kb/s from
// the current and supported bits.
func TestPortFeaturesLikeOVS(t *testing.T) {
	const (
		sup10HD, sup10FD, sup100FD, sup1GFD = 1 << 0, 1 << 1, 1 << 3, 1 << 5
		supAutoneg, supTP, supFibre         = 1 << 6, 1 << 7, 1 << 10
		sup10GFD, supPause, supAsym         = 1 << 12, 1 << 13, 1 << 14
		sup1GKX, sup10GKR, sup40GCR4        = 1 << 17, 1 << 19, 1 << 24
	)
	for _, tc := range []struct {
		name string
		s    ifioctl.LinkSettings
		want ofproto.PortFeatures
	}{
		{"veth", ifioctl.LinkSettings{Speed: 10000, Duplex: 1, Port: 0},
			ofproto.PortFeatures{Curr: featTenGBFD | featCopper, CurrSpeed: 10000000}},
		{"10 Gb/s half duplex is still 10GB-FD", ifioctl.LinkSettings{Speed: 10000, Duplex: 0, Port: 0},
			ofproto.PortFeatures{Curr: featTenGBFD | featCopper, CurrSpeed: 10000000}},
		{"1 Gb/s half, no autoneg", ifioctl.LinkSettings{Speed: 1000, Duplex: 0, Port: 0},
			ofproto.PortFeatures{Curr: featOneGBHD | featCopper, CurrSpeed: 1000000}},
		{"25 Gb/s: no speed bit", ifioctl.LinkSettings{Speed: 25000, Duplex: 1, Port: 0},
			ofproto.PortFeatures{Curr: featCopper}},
		{"link down NIC: speed unknown", ifioctl.LinkSettings{Speed: ifioctl.SpeedUnknown, Duplex: 0xff, Port: portFibre, Autoneg: 1,
			Supported: sup1GKX | sup10GKR | supFibre | supAutoneg | supPause, Advertising: sup10GKR | supAutoneg | supPause | supAsym},
			ofproto.PortFeatures{Curr: featFiber | featAutoneg,
				Supported:  featOneGBFD | featTenGBFD | featFiber | featAutoneg | featPause,
				Advertised: featTenGBFD | featAutoneg | featPause | featPauseAsym, MaxSpeed: 10000000}},
		{"copper NIC at 100 Mb/s", ifioctl.LinkSettings{Speed: 100, Duplex: 1, Port: 0, Autoneg: 1,
			Supported: sup10HD | sup10FD | sup100FD | sup1GFD | supTP | supAutoneg, Advertising: sup100FD | sup1GFD | supTP | supAutoneg},
			ofproto.PortFeatures{Curr: featHundredFD | featCopper | featAutoneg, CurrSpeed: 100000,
				Supported:  featTenMBHD | featTenMBFD | featHundredFD | featOneGBFD | featCopper | featAutoneg,
				Advertised: featHundredFD | featOneGBFD | featCopper | featAutoneg, MaxSpeed: 1000000}},
		{"40 Gb/s", ifioctl.LinkSettings{Speed: 40000, Duplex: 1, Port: 0xef /* DA */, Supported: sup40GCR4 | sup10GFD},
			ofproto.PortFeatures{Curr: featFortyGBFD, Supported: featFortyGBFD | featTenGBFD, CurrSpeed: 40000000, MaxSpeed: 40000000}},
		{"bridge: speed unknown, port other", ifioctl.LinkSettings{Speed: ifioctl.SpeedUnknown, Duplex: 0xff, Port: 0xff},
			ofproto.PortFeatures{}},
	} {
		if got := portFeatures(tc.s); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
