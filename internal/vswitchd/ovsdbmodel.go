package vswitchd

import (
	"reflect"

	"github.com/ovn-org/libovsdb/model"
)

// The vswitch schema's tables as far as govs reads or writes them
// (vswitch.ovsschema, ovs-vswitchd.conf.db(5)). Columns not listed are
// neither monitored nor written: the rest of every row stays as others
// wrote it. Optional columns (min 0, max 1) are pointers.

// ovsRow is the Open_vSwitch table's single row.
type ovsRow struct {
	UUID            string            `ovsdb:"_uuid"`
	Bridges         []string          `ovsdb:"bridges"`
	CurCfg          int               `ovsdb:"cur_cfg"`
	NextCfg         int               `ovsdb:"next_cfg"`
	OtherConfig     map[string]string `ovsdb:"other_config"`
	DatapathTypes   []string          `ovsdb:"datapath_types"`
	IfaceTypes      []string          `ovsdb:"iface_types"`
	DpdkVersion     *string           `ovsdb:"dpdk_version"`
	DpdkInitialized bool              `ovsdb:"dpdk_initialized"`
	Datapaths       map[string]string `ovsdb:"datapaths"` // datapath type -> Datapath row
}

// datapathRow is a Datapath row: ovn-controller creates one for the
// datapath type of its bridge, ovs-vswitchd fills in the capabilities.
type datapathRow struct {
	UUID         string            `ovsdb:"_uuid"`
	Capabilities map[string]string `ovsdb:"capabilities"`
}

// bridgeRow is a Bridge row.
type bridgeRow struct {
	UUID            string            `ovsdb:"_uuid"`
	Name            string            `ovsdb:"name"`
	Ports           []string          `ovsdb:"ports"`
	Controller      []string          `ovsdb:"controller"`
	DatapathType    string            `ovsdb:"datapath_type"`
	DatapathID      *string           `ovsdb:"datapath_id"`
	DatapathVersion string            `ovsdb:"datapath_version"`
	FailMode        *string           `ovsdb:"fail_mode"`
	Protocols       []string          `ovsdb:"protocols"`
	OtherConfig     map[string]string `ovsdb:"other_config"`
	FlowTables      map[int]string    `ovsdb:"flow_tables"`
}

// flowTableRow is a Flow_Table row (a bridge's flow_tables value).
type flowTableRow struct {
	UUID      string   `ovsdb:"_uuid"`
	FlowLimit *int     `ovsdb:"flow_limit"`
	Prefixes  []string `ovsdb:"prefixes"`
}

// portRow is a Port row.
type portRow struct {
	UUID       string   `ovsdb:"_uuid"`
	Name       string   `ovsdb:"name"`
	Interfaces []string `ovsdb:"interfaces"`
	Tag        *int     `ovsdb:"tag"`
	Trunks     []int    `ovsdb:"trunks"`
	VLANMode   *string  `ovsdb:"vlan_mode"`
	MAC        *string  `ovsdb:"mac"`
}

// ifaceRow is an Interface row: the configuration ovs-vsctl writes and
// the state ovs-vswitchd writes back.
type ifaceRow struct {
	UUID          string            `ovsdb:"_uuid"`
	Name          string            `ovsdb:"name"`
	Type          string            `ovsdb:"type"`
	Options       map[string]string `ovsdb:"options"`
	OFPortRequest *int              `ovsdb:"ofport_request"`
	MAC           *string           `ovsdb:"mac"`
	MTURequest    *int              `ovsdb:"mtu_request"`
	OtherConfig   map[string]string `ovsdb:"other_config"`

	OFPort     *int              `ovsdb:"ofport"`
	Error      *string           `ovsdb:"error"`
	MACInUse   *string           `ovsdb:"mac_in_use"`
	MTU        *int              `ovsdb:"mtu"`
	Ifindex    *int              `ovsdb:"ifindex"`
	AdminState *string           `ovsdb:"admin_state"`
	LinkState  *string           `ovsdb:"link_state"`
	LinkResets *int              `ovsdb:"link_resets"`
	Statistics map[string]int    `ovsdb:"statistics"`
	LinkSpeed  *int              `ovsdb:"link_speed"`
	Duplex     *string           `ovsdb:"duplex"`
	Status     map[string]string `ovsdb:"status"`
}

// controllerRow is a Controller row.
type controllerRow struct {
	UUID           string  `ovsdb:"_uuid"`
	Target         string  `ovsdb:"target"`
	ConnectionMode *string `ovsdb:"connection_mode"`
}

// vswitchModel is the client model of the Open_vSwitch database.
func vswitchModel() (model.ClientDBModel, error) {
	return model.NewClientDBModel("Open_vSwitch", map[string]model.Model{
		"Open_vSwitch": &ovsRow{},
		"Bridge":       &bridgeRow{},
		"Port":         &portRow{},
		"Interface":    &ifaceRow{},
		"Controller":   &controllerRow{},
		"Flow_Table":   &flowTableRow{},
		"Datapath":     &datapathRow{},
	})
}

// writeOnlyColumns are the Interface columns only ovs-vswitchd writes
// and govs never needs to read: they are not monitored (govs remembers
// what it wrote, dbSession.written), so that writing them for 1,000 new
// ports does not come back as a 1,000-row update to decode before the
// transaction's reply. ofport is monitored: a restart reads it.
var writeOnlyColumns = map[string]bool{"error": true, "mac_in_use": true, "mtu": true, "ifindex": true,
	"admin_state": true, "link_state": true, "link_resets": true, "statistics": true, "link_speed": true,
	"duplex": true, "status": true}

// columnPointers returns pointers to the column fields of m a monitor
// names: all but _uuid and the write-only ones.
func columnPointers(m model.Model) []any {
	v := reflect.ValueOf(m).Elem()
	var out []any
	for i := 0; i < v.NumField(); i++ {
		if col := v.Type().Field(i).Tag.Get("ovsdb"); col != "_uuid" && !writeOnlyColumns[col] {
			out = append(out, v.Field(i).Addr().Interface())
		}
	}
	return out
}
