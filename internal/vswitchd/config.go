// Package vswitchd is the govs switch daemon's control plane: bridges and
// ports from a YAML file and from `govs` commands over a control socket,
// one configuration interface that an OVSDB client can later feed too.
package vswitchd

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/govs-project/govs/datapath/offload"
	"github.com/govs-project/govs/flowtable"
)

// Config is the daemon configuration file.
type Config struct {
	Rundir string `yaml:"rundir"`
	// UserspaceTSO opens system ports with offload metadata (see
	// Daemon.UserspaceTSO), like OVS's other_config:userspace-tso-enable.
	UserspaceTSO bool `yaml:"userspace_tso"`
	// PMD and PMDCPU turn on a poll-mode thread per bridge, pinned to
	// PMDCPU when it is set (see Daemon.PMD).
	PMD     bool           `yaml:"pmd"`
	PMDCPU  *int           `yaml:"pmd_cpu"`
	Bridges []BridgeConfig `yaml:"bridges"`
}

// BridgeConfig describes one bridge, with the ovs-vsctl column names.
type BridgeConfig struct {
	Name        string       `yaml:"name"`
	DatapathID  string       `yaml:"datapath_id"` // 16 hex digits; default from the name
	FailMode    string       `yaml:"fail_mode"`   // secure (default) or standalone
	Controllers []string     `yaml:"controllers"` // tcp:IP:PORT, unix:PATH
	Listeners   []string     `yaml:"listeners"`   // ptcp:PORT[:IP], punix:PATH (the .mgmt socket is always there)
	Protocols   []string     `yaml:"protocols"`   // OpenFlow10, OpenFlow13, OpenFlow15; none: all
	Ports       []PortConfig `yaml:"ports"`
	// FlowLimits are limits of single tables (OVS's Flow_Table
	// flow_limit), in place of the daemon's --flow-limit there.
	FlowLimits map[uint8]int `yaml:"flow_limits"`
	// Prefixes are the fields of single tables' prefix tracking (OVS's
	// Flow_Table prefixes): field names, or "none"; a table not named
	// tracks ip_dst,ip_src.
	Prefixes map[uint8][]string `yaml:"prefixes"`
	// HWAddr (other_config:hwaddr) and DefaultMAC (from the Bridge row's
	// UUID) feed OVS's choice of the LOCAL port's MAC and of the datapath
	// id (pickLocalMAC); DefaultMAC is nil outside the OVSDB, where the
	// datapath id is DatapathID or comes from the name.
	HWAddr     string           `yaml:"-"`
	DefaultMAC net.HardwareAddr `yaml:"-"`
}

// PortConfig describes one port.
type PortConfig struct {
	Name          string            `yaml:"name"`
	Type          string            `yaml:"type"` // system (default), afxdp, internal, geneve
	OFPortRequest uint32            `yaml:"ofport_request"`
	MAC           string            `yaml:"mac"`
	MTURequest    int               `yaml:"mtu_request"`
	Options       map[string]string `yaml:"options"`
	// Tag, Trunks and VLANMode are the Port columns NORMAL honours:
	// an access port's VLAN, a trunk's VLANs (none: all) and the mode
	// (access, trunk; default: access with a tag, else trunk).
	Tag      uint16   `yaml:"tag"`
	Trunks   []uint16 `yaml:"trunks"`
	VLANMode string   `yaml:"vlan_mode"`
	// NoOffload keeps the port out of the kernel fast path (Interface
	// other_config:govs-offload=false; docs/offload.md). Changing it
	// reopens the port.
	NoOffload bool `yaml:"no_offload"`
	// offload is the kernel fast path of a system port's bridge (set
	// when the port opens, see startPort): it says whether the port goes
	// on the tc path (its socket then bound for the program's upcalls).
	offload *offload.Manager
	// PrevOFPort is the number the port had before (the OVSDB's
	// Interface.ofport), which it gets back when nothing asks for another.
	PrevOFPort uint32 `yaml:"-"`
	// PortMAC is Port.mac, the address that stands for the port when the
	// bridge's MAC is picked (applied in place).
	PortMAC string `yaml:"-"`
}

// LoadConfig reads and validates a YAML configuration file.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	var c Config
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	for i := range c.Bridges {
		if err := c.Bridges[i].Validate(); err != nil {
			return nil, fmt.Errorf("config %s: bridge %d: %w", path, i, err)
		}
	}
	return &c, nil
}

// Validate checks a bridge description.
func (b *BridgeConfig) Validate() error {
	if err := validName(b.Name); err != nil {
		return fmt.Errorf("bridge name: %w", err)
	}
	if b.DatapathID != "" {
		if _, err := ParseDatapathID(b.DatapathID); err != nil {
			return err
		}
	}
	switch b.FailMode {
	case "", "secure", "standalone":
	default:
		return fmt.Errorf("bridge %s: fail_mode %q: must be secure or standalone", b.Name, b.FailMode)
	}
	for table, n := range b.FlowLimits {
		if n < 0 {
			return fmt.Errorf("bridge %s: flow_limits: table %d: %d is negative", b.Name, table, n)
		}
	}
	for table, names := range b.Prefixes {
		if _, warnings := flowtable.ParsePrefixFields(names); len(warnings) > 0 {
			return fmt.Errorf("bridge %s: prefixes: table %d: %s", b.Name, table, warnings[0])
		}
	}
	seen := map[string]bool{}
	for i := range b.Ports {
		p := &b.Ports[i]
		if err := p.Validate(); err != nil {
			return fmt.Errorf("bridge %s: %w", b.Name, err)
		}
		if seen[p.Name] {
			return fmt.Errorf("bridge %s: port %s listed twice", b.Name, p.Name)
		}
		seen[p.Name] = true
	}
	return nil
}

// Validate checks a port description.
func (p *PortConfig) Validate() error {
	if err := validName(p.Name); err != nil {
		return fmt.Errorf("port name: %w", err)
	}
	switch p.Type {
	case "", "system", "afxdp", "internal", "geneve":
	default:
		return fmt.Errorf("port %s: type %q: govs supports system, afxdp, internal and geneve", p.Name, p.Type)
	}
	return p.check()
}

// check checks the port's values but its name and type (the OVSDB path
// takes any name and type and reports what cannot be opened).
func (p *PortConfig) check() error {
	if p.OFPortRequest >= 0xff00 {
		return fmt.Errorf("port %s: ofport_request %d out of range 1..65279", p.Name, p.OFPortRequest)
	}
	if p.MAC != "" {
		if _, err := net.ParseMAC(p.MAC); err != nil {
			return fmt.Errorf("port %s: mac %q: %w", p.Name, p.MAC, err)
		}
	}
	if p.MTURequest < 0 || p.MTURequest > 65535 {
		return fmt.Errorf("port %s: mtu_request %d out of range", p.Name, p.MTURequest)
	}
	if p.Tag > 4095 {
		return fmt.Errorf("port %s: tag %d out of range 0..4095", p.Name, p.Tag)
	}
	for _, v := range p.Trunks {
		if v > 4095 {
			return fmt.Errorf("port %s: trunks: VLAN %d out of range 0..4095", p.Name, v)
		}
	}
	switch p.VLANMode {
	case "", "access", "trunk":
	default:
		return fmt.Errorf("port %s: vlan_mode %q: govs supports access and trunk", p.Name, p.VLANMode)
	}
	return nil
}

func validName(s string) error {
	if s == "" {
		return fmt.Errorf("empty")
	}
	if len(s) > 15 {
		return fmt.Errorf("%q longer than 15 characters (IFNAMSIZ)", s)
	}
	if strings.ContainsAny(s, " /\t\n\"") {
		return fmt.Errorf("%q contains a space, '/' or quote", s)
	}
	return nil
}

// ParseDatapathID parses 16 hex digits (an optional 0x prefix is allowed).
func ParseDatapathID(s string) (uint64, error) {
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil {
		return 0, fmt.Errorf("datapath_id %q: must be 16 hex digits", s)
	}
	return v, nil
}

// ParsePortWords parses ovs-vsctl style KEY=VALUE words of add-port:
// type=internal ofport_request=2 mac="4e:99:08:c1:53:be" mtu_request=1450
// options:remote_ip=flow. The words may be prefixed by "--" "set"
// "Interface" NAME as ovs-vsctl allows; only the KEY=VALUE words matter.
func ParsePortWords(name string, words []string) (PortConfig, error) {
	p := PortConfig{Name: name, Options: map[string]string{}}
	for _, w := range words {
		if w == "--" || w == "set" || w == "Interface" || w == name {
			continue
		}
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			return p, fmt.Errorf("%q: expected KEY=VALUE", w)
		}
		v = strings.Trim(v, `"`)
		switch {
		case k == "type":
			p.Type = v
		case k == "ofport_request":
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return p, fmt.Errorf("ofport_request=%q: not a number", v)
			}
			p.OFPortRequest = uint32(n)
		case k == "mac":
			p.MAC = v
		case k == "mtu_request":
			n, err := strconv.Atoi(v)
			if err != nil {
				return p, fmt.Errorf("mtu_request=%q: not a number", v)
			}
			p.MTURequest = n
		case strings.HasPrefix(k, "options:"):
			p.Options[strings.TrimPrefix(k, "options:")] = v
		default:
			return p, fmt.Errorf("%q: unknown column (type, ofport_request, mac, mtu_request, options:KEY)", k)
		}
	}
	return p, p.Validate()
}
