// Package appctl is ovs-vswitchd's ovs-appctl command set on govs: the
// commands Antrea, ovs-ctl and operators run against the daemon's unixctl
// socket, printing what Open vSwitch 3.1 prints (the fact sheet's goldens
// 11-17).
package appctl

import (
	"github.com/govs-project/govs/internal/version"

	"fmt"
	"net"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/govs-project/govs/conntrack"
	"github.com/govs-project/govs/datapath"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/unixctl"
	"github.com/govs-project/govs/internal/vswitchd"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// OVSVersion is the Open vSwitch release whose behaviour govs matches:
// ovs-ctl reads it from `ovs-vswitchd --version` into ovs_version and
// compares `ovs-appctl version` with 2.5.90 before it asks for exit.
const OVSVersion = "3.1.0"

// GovsVersion is govs's own version (internal/version, one home for
// every binary's).
func GovsVersion() string { return version.String() }

// VersionText is what `ovs-vswitchd --version` and `ovs-appctl version`
// print: OVS's line first (ovs-ctl takes its last word), then govs's.
func VersionText(program string) string {
	return fmt.Sprintf("%s (Open vSwitch) %s\ngovs %s\n", program, OVSVersion, GovsVersion())
}

// App serves the ovs-appctl commands of one daemon.
type App struct {
	D      *vswitchd.Daemon
	VLog   *VLog
	Server *unixctl.Server
	// Exit is called after `exit` has been answered.
	Exit func()

	recirc atomic.Uint32 // the last recirc_id a trace printed
	cov    coverage
}

// New registers every command on a new unixctl server.
func New(d *vswitchd.Daemon, vlog *VLog, exit func()) *App {
	a := &App{D: d, VLog: vlog, Server: unixctl.NewServer(d.Log), Exit: exit}
	s := a.Server
	s.Register("version", "", 0, 0, func([]string) (string, error) { return VersionText("ovs-vswitchd"), nil })
	ex := s.Register("exit", "[--cleanup]", 0, 1, func(args []string) (string, error) {
		if len(args) == 1 && args[0] != "--cleanup" {
			return "", fmt.Errorf("exit: unknown option %s", args[0])
		}
		// As ovs-vswitchd: --cleanup removes the datapath state (the
		// kernel fast path's pins), a plain exit leaves it.
		d.SetRetainKernelState(len(args) == 0)
		return "", nil
	})
	ex.After = func() {
		if a.Exit != nil {
			a.Exit()
		}
	}
	if vlog != nil {
		vlog.register(s)
	}
	s.Register("ofproto/list", "", 0, 0, a.ofprotoList)
	a.registerTrace()
	s.Register("dpif/show", "", 0, 0, a.dpifShow)
	a.registerDumpFlows()
	a.registerTnl()
	s.Register("dpif/dump-dps", "", 0, 0, func([]string) (string, error) { return "netdev@ovs-netdev\n", nil })
	s.Register("dpif/show-dp-features", "bridge", 1, 1, a.showDPFeatures)
	s.Register("dpctl/dump-dps", "", 0, 0, func([]string) (string, error) { return "netdev@ovs-netdev\n", nil })
	s.Register("dpctl/show", "[-s] [dp...]", 0, -1, a.dpctlShow)
	s.Register("dpctl/dump-conntrack", "[-m] [-s] [dp] [zone=N]", 0, 4, d.DumpConntrack)
	s.Register("dpctl/flush-conntrack", "[dp] [zone=N] [ct-orig-tuple] [ct-reply-tuple]", 0, 4, a.flushConntrack)
	s.Register("dpctl/ct-get-maxconns", "[dp]", 0, 1, a.ctGetMaxconns)
	s.Register("dpctl/ct-set-maxconns", "[dp] maxconns", 1, 2, a.ctSetMaxconns)
	s.Register("dpctl/ct-get-nconns", "[dp]", 0, 1, a.ctGetNconns)
	s.Register("dpctl/ct-get-limits", "[dp] [zone=N1[,N2]...]", 0, 2, a.ctGetLimits)
	s.Register("dpctl/ct-set-limits", "[dp] [default=L] [zone=N,limit=L]...", 1, -1, a.ctSetLimits)
	s.Register("dpctl/ct-del-limits", "[dp] zone=N1[,N2]...", 1, 2, a.ctDelLimits)
	s.Register("dpctl/ct-stats-show", "[dp] [zone=N]", 0, 3, a.ctStatsShow)
	s.Register("fdb/show", "bridge", 1, 1, a.fdbShow)
	s.Register("fdb/flush", "[bridge]", 0, 1, a.fdbFlush)
	s.Register("memory/show", "", 0, 0, a.memoryShow)
	s.Register("coverage/show", "", 0, 0, a.coverageShow)
	s.Register("bridge/dump-flows", "[--offload-stats] bridge", 1, 2, a.bridgeDumpFlows)
	return a
}

// bridge finds a bridge's datapath.
func (a *App) bridge(name string) (*datapath.Bridge, bool) { return a.D.Bridge(name) }

func (a *App) ofprotoList([]string) (string, error) {
	var b strings.Builder
	for _, n := range a.D.BridgeNames() {
		b.WriteString(n + "\n")
	}
	return b.String(), nil
}

// odpPort is the datapath port number a port has in dpif/show and in a
// trace's "Datapath actions": govs has no second numbering, so it is the
// OpenFlow port number (OVS prints its own ODP numbers; a comparison maps
// both to names).
func odpPort(ofport uint32) uint32 { return ofport }

// portTypeString is the "(type[: options])" of dpif/show: internal ports
// are TAPs in a userspace datapath, as OVS prints them.
func (a *App) portTypeString(br string, pi datapath.PortInfo) string {
	kind := pi.Kind
	if kind == "internal" {
		kind = "tap"
	}
	opts := a.D.PortOptions(br, pi.Name)
	if len(opts) == 0 || pi.Kind != "geneve" {
		return kind
	}
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + "=" + opts[k]
	}
	return kind + ": " + strings.Join(keys, ", ")
}

func (a *App) cacheTotals() (hits, misses uint64, entries int) {
	for _, dp := range a.D.BridgeDatapaths() {
		st, n := dp.CacheStats()
		hits += st.Hits
		misses += st.Misses
		entries += n
	}
	return
}

func (a *App) dpifShow([]string) (string, error) {
	var b strings.Builder
	hits, misses, _ := a.cacheTotals()
	fmt.Fprintf(&b, "netdev@ovs-netdev: hit:%d missed:%d\n", hits, misses)
	for _, n := range a.D.BridgeNames() {
		dp, ok := a.bridge(n)
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "  %s:\n", n)
		ports := dp.Ports()
		sort.Slice(ports, func(i, j int) bool { return ports[i].Name < ports[j].Name })
		for _, pi := range ports {
			fmt.Fprintf(&b, "    %s %d/%d: (%s)\n", pi.Name, pi.OFPort, odpPort(pi.OFPort), a.portTypeString(n, pi))
		}
	}
	return b.String(), nil
}

func (a *App) dpctlShow(args []string) (string, error) {
	stats := false
	for _, x := range args {
		switch {
		case x == "-s" || x == "--statistics":
			stats = true
		case vswitchd.IsDatapathName(x):
		default:
			return "", fmt.Errorf("ovs-vswitchd: opening datapath %s failed (No such file or directory)", x)
		}
	}
	var b strings.Builder
	hits, misses, entries := a.cacheTotals()
	fmt.Fprintf(&b, "netdev@ovs-netdev:\n  lookups: hit:%d missed:%d lost:0\n  flows: %d\n", hits, misses, entries)
	type row struct {
		br string
		pi datapath.PortInfo
	}
	var rows []row
	for n, dp := range a.D.BridgeDatapaths() {
		for _, pi := range dp.Ports() {
			rows = append(rows, row{n, pi})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return odpPort(rows[i].pi.OFPort) < odpPort(rows[j].pi.OFPort) })
	for _, r := range rows {
		t := a.portTypeString(r.br, r.pi)
		if t == "system" {
			fmt.Fprintf(&b, "  port %d: %s\n", odpPort(r.pi.OFPort), r.pi.Name)
		} else {
			fmt.Fprintf(&b, "  port %d: %s (%s)\n", odpPort(r.pi.OFPort), r.pi.Name, t)
		}
		if stats {
			st := r.pi.Stats
			fmt.Fprintf(&b, "    RX packets:%d errors:%d dropped:%d overruns:0 frame:0\n", st.RxPackets, st.RxErrors, st.RxDropped)
			fmt.Fprintf(&b, "    TX packets:%d errors:%d dropped:%d aborted:0 carrier:0\n", st.TxPackets, st.TxErrors, st.TxDropped)
			b.WriteString("    collisions:0\n")
			fmt.Fprintf(&b, "    RX bytes:%s  TX bytes:%s\n", humanBytes(st.RxBytes), humanBytes(st.TxBytes))
		}
	}
	return b.String(), nil
}

// humanBytes prints a byte count as dpctl/show -s does: "1852 (1.8 KiB)".
func humanBytes(n uint64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	if n < 1024 {
		return strconv.FormatUint(n, 10)
	}
	v := float64(n)
	u := -1
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	return fmt.Sprintf("%d (%.1f %s)", n, v, units[u])
}

func (a *App) showDPFeatures(args []string) (string, error) {
	if _, ok := a.bridge(args[0]); !ok {
		return "", fmt.Errorf("no such bridge")
	}
	return vswitchd.ShowDPFeatures(), nil
}

// dpArgs drops a leading datapath name from dpctl arguments.
func dpArgs(args []string) ([]string, error) {
	if len(args) > 0 && vswitchd.IsDatapathName(args[0]) {
		return args[1:], nil
	}
	if len(args) > 0 && !strings.Contains(args[0], "=") && !strings.HasPrefix(args[0], "-") {
		if _, err := strconv.Atoi(args[0]); err != nil {
			return nil, fmt.Errorf("ovs-vswitchd: opening datapath %s failed (No such file or directory)", args[0])
		}
	}
	return args, nil
}

func (a *App) flushConntrack(args []string) (string, error) {
	args, err := dpArgs(args)
	if err != nil {
		return "", err
	}
	var zone *uint16
	if len(args) > 0 && strings.HasPrefix(args[0], "zone=") {
		n, err := strconv.ParseUint(args[0][len("zone="):], 10, 16)
		if err != nil {
			return "", fmt.Errorf("failed to parse zone")
		}
		z := uint16(n)
		zone = &z
		args = args[1:]
	}
	if len(args) == 0 {
		if zone == nil {
			return a.D.FlushConntrack(nil)
		}
		return a.D.FlushConntrack([]string{fmt.Sprintf("zone=%d", *zone)})
	}
	tup, err := parseCtTuple(args[0])
	if err != nil {
		return "", err
	}
	z := uint16(0)
	if zone != nil {
		z = *zone
	}
	if err := a.D.Conntrack().FlushTuple(z, tup); err != nil {
		return "", fmt.Errorf("ovs-vswitchd: failed to flush conntrack (%v)", err)
	}
	return "", nil
}

// parseCtTuple reads a dpctl flush-conntrack tuple:
// ct_nw_src=IP,ct_nw_dst=IP,ct_nw_proto=N[,ct_tp_src=N,ct_tp_dst=N |
// ,icmp_id=N,icmp_type=N,icmp_code=N] (ct_ipv6_src/dst for IPv6).
func parseCtTuple(s string) (conntrack.Tuple, error) {
	var t conntrack.Tuple
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return t, fmt.Errorf("invalid conntrack tuple field: %s", kv)
		}
		var err error
		switch k {
		case "ct_nw_src", "ct_ipv6_src":
			t.Src, err = parseAddr(v)
		case "ct_nw_dst", "ct_ipv6_dst":
			t.Dst, err = parseAddr(v)
		case "ct_nw_proto":
			var n uint64
			n, err = strconv.ParseUint(v, 10, 8)
			t.Proto = uint8(n)
		case "ct_tp_src", "ct_tp_dst", "icmp_id", "icmp_type", "icmp_code":
			var n uint64
			n, err = strconv.ParseUint(v, 10, 16)
			switch k {
			case "ct_tp_src":
				t.SrcPort = uint16(n)
			case "ct_tp_dst":
				t.DstPort = uint16(n)
			case "icmp_id":
				t.ICMPID = uint16(n)
			case "icmp_type":
				t.ICMPType = uint8(n)
			case "icmp_code":
				t.ICMPCode = uint8(n)
			}
		default:
			return t, fmt.Errorf("invalid conntrack tuple field: %s", k)
		}
		if err != nil {
			return t, fmt.Errorf("failed to parse field %s", k)
		}
	}
	return t, nil
}

func (a *App) ctGetMaxconns(args []string) (string, error) {
	if _, err := dpArgs(args); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d\n", a.D.Conntrack().GlobalLimit()), nil
}

func (a *App) ctSetMaxconns(args []string) (string, error) {
	args, err := dpArgs(args)
	if err != nil {
		return "", err
	}
	if len(args) != 1 {
		return "", fmt.Errorf("usage: dpctl/ct-set-maxconns [dp] maxconns")
	}
	n, err := strconv.ParseUint(args[0], 10, 32)
	if err != nil {
		return "", fmt.Errorf("maxconns missing or malformed")
	}
	a.D.Conntrack().SetGlobalLimit(int(n))
	return "setting maxconns successful\n", nil
}

func (a *App) ctGetNconns(args []string) (string, error) {
	if _, err := dpArgs(args); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d\n", a.D.Conntrack().Count()), nil
}

// parseZones reads "zone=N1[,N2]...".
func parseZones(s string) ([]uint16, error) {
	v, ok := strings.CutPrefix(s, "zone=")
	if !ok {
		return nil, fmt.Errorf("invalid zone")
	}
	var zs []uint16
	for _, z := range strings.Split(v, ",") {
		n, err := strconv.ParseUint(z, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("invalid zone")
		}
		zs = append(zs, uint16(n))
	}
	return zs, nil
}

func (a *App) ctGetLimits(args []string) (string, error) {
	args, err := dpArgs(args)
	if err != nil {
		return "", err
	}
	t := a.D.Conntrack()
	def := t.DefaultZoneLimit()
	var zones []uint16
	if len(args) > 0 {
		if zones, err = parseZones(args[0]); err != nil {
			return "", err
		}
	} else {
		zones = t.LimitedZones()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "default limit=%d\n", def)
	for _, z := range zones {
		fmt.Fprintf(&b, "zone=%d,limit=%d,count=%d\n", z, t.ZoneLimit(z), t.ZoneLimitCount(z))
	}
	return b.String(), nil
}

func (a *App) ctSetLimits(args []string) (string, error) {
	args, err := dpArgs(args)
	if err != nil {
		return "", err
	}
	t := a.D.Conntrack()
	for _, x := range args {
		zone, n, err := vswitchd.ParseZoneLimit(x)
		switch {
		case err != nil && strings.HasPrefix(x, "default="):
			return "", fmt.Errorf("invalid default limit") // OVS's words
		case err != nil:
			return "", fmt.Errorf("failed to parse zone limit: %s", x)
		case zone < 0:
			t.SetDefaultZoneLimit(n)
		default:
			t.SetZoneLimit(uint16(zone), n)
		}
	}
	return "", nil
}

func (a *App) ctDelLimits(args []string) (string, error) {
	args, err := dpArgs(args)
	if err != nil {
		return "", err
	}
	if len(args) != 1 {
		return "", fmt.Errorf("usage: dpctl/ct-del-limits [dp] zone=N1[,N2]...")
	}
	zones, err := parseZones(args[0])
	if err != nil {
		return "", err
	}
	for _, z := range zones {
		a.D.Conntrack().SetZoneLimit(z, 0)
	}
	return "", nil
}

func (a *App) ctStatsShow(args []string) (string, error) {
	args, err := dpArgs(args)
	if err != nil {
		return "", err
	}
	var f conntrack.DumpFilter
	for _, x := range args {
		if x == "-m" || x == "--more" {
			continue
		}
		zs, err := parseZones(x)
		if err != nil || len(zs) != 1 {
			return "", fmt.Errorf("invalid zone")
		}
		f.Zone = &zs[0]
	}
	entries := a.D.Conntrack().Dump(f)
	counts := map[string]int{}
	for _, e := range entries {
		counts[protoStatName(e.Orig.Proto)]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Connections Stats:\n    Total: %d\n", len(entries))
	// OVS prints the protocols with connections in its enum order.
	for _, p := range []string{"TCP", "SCTP", "UDP", "UDPLITE", "ICMP", "ICMPV6", "OTHERS"} {
		if n := counts[p]; n > 0 {
			fmt.Fprintf(&b, "  %s: %d\n", p, n)
		}
	}
	return b.String(), nil
}

func protoStatName(p uint8) string {
	switch p {
	case 6:
		return "TCP"
	case 132:
		return "SCTP"
	case 17:
		return "UDP"
	case 136:
		return "UDPLITE"
	case 1:
		return "ICMP"
	case 58:
		return "ICMPV6"
	}
	return "OTHERS"
}

func (a *App) fdbShow(args []string) (string, error) {
	dp, ok := a.bridge(args[0])
	if !ok {
		return "", fmt.Errorf("no such bridge")
	}
	var b strings.Builder
	b.WriteString(" port  VLAN  MAC                Age\n")
	p := dp.Pipeline()
	for _, e := range p.MACs.Entries(p.Now()) {
		fmt.Fprintf(&b, "%5s  %4d  %s  %3d\n", flowtable.PortName(e.Port), e.VLAN, net.HardwareAddr(e.MAC[:]), int(e.Age/time.Second))
	}
	return b.String(), nil
}

func (a *App) fdbFlush(args []string) (string, error) {
	names := args
	if len(names) == 0 {
		names = a.D.BridgeNames()
	}
	for _, n := range names {
		dp, ok := a.bridge(n)
		if !ok {
			return "", fmt.Errorf("no such bridge")
		}
		dp.Pipeline().MACs.Flush(flowtable.PortNone)
	}
	return "table successfully flushed\n", nil
}

func (a *App) memoryShow([]string) (string, error) {
	ports, rules := 0, 0
	for _, dp := range a.D.BridgeDatapaths() {
		ports += len(dp.Ports())
		rules += dp.Pipeline().NumFlows()
	}
	_, _, entries := a.cacheTotals()
	// OVS prints its counters sorted by name; goroutines is govs's own
	// (a leak shows there first: the soak test watches it).
	return fmt.Sprintf("conntrack:%d goroutines:%d ports:%d rules:%d udpif keys:%d\n",
		a.D.Conntrack().Count(), runtime.NumGoroutine(), ports, rules, entries), nil
}

func (a *App) bridgeDumpFlows(args []string) (string, error) {
	name := args[len(args)-1]
	if len(args) == 2 && args[0] != "--offload-stats" {
		return "", fmt.Errorf("invalid argument %s", args[0])
	}
	dp, ok := a.bridge(name)
	if !ok {
		return "", fmt.Errorf("Unknown bridge") // OVS's words (bridge.c)
	}
	all := flowtable.AllFlows()
	rules := dp.Pipeline().Flows(&all)
	now := time.Now()
	o := &flowtext.PrintOptions{Version: flowtext.OF15, TLV: dp.Pipeline().TLV}
	var b strings.Builder
	for _, r := range rules {
		if r.Table != 0 {
			fmt.Fprintf(&b, "table_id=%d, ", r.Table)
		}
		fmt.Fprintf(&b, "duration=%ds, n_packets=%d, n_bytes=%d, ", int(now.Sub(r.Stats.Created).Seconds()), r.Stats.Packets.Load(), r.Stats.Bytes.Load())
		rm := r.Match()
		m := flowtext.MatchString(&rm, int(r.Priority), o)
		if m != "" {
			b.WriteString(m)
			b.WriteByte(',')
		}
		b.WriteString("actions=")
		b.WriteString(flowtext.ActionsString(r.Actions, o))
		b.WriteByte('\n')
	}
	return b.String(), nil
}
