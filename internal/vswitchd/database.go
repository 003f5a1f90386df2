package vswitchd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/cenkalti/rpc2"
	"github.com/go-logr/logr"
	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/govs-project/govs/datapath"
	"github.com/govs-project/govs/datapath/port/ifioctl"
)

// The OVSDB session, as ovs-vswitchd runs it against ovsdb-server
// (OVSDB-APPCTL.md section 2): take the "ovs_vswitchd" lock, monitor the
// columns it reads, turn the database into the desired State on every
// change, reconcile, and write back only the columns ovs-vswitchd owns
// (Interface.ofport, error, state and statistics, Bridge.datapath_id,
// Open_vSwitch.cur_cfg, ...), every transaction asserting the lock.

// vswitchdLock is the OVSDB lock ovs-vswitchd holds while it writes.
const vswitchdLock = "ovs_vswitchd"

// statsInterval is how often Interface.statistics are written back (OVS:
// every 5 s); the link state columns are also written at once after a
// link notification (linkChanged).
const statsInterval = 5 * time.Second

// Reconnection backoff after the database is lost (OVS: 1 s doubling to 8 s).
const (
	minReconnect = time.Second
	maxReconnect = 8 * time.Second
)

// govsDatapathTypes and govsIfaceTypes are written to Open_vSwitch
// datapath_types and iface_types: what govs accepts in Bridge.datapath_type
// and Interface.type.
var (
	govsDatapathTypes = []string{"netdev", "system"}
	govsIfaceTypes    = []string{"afxdp", "geneve", "internal", "system"}
)

// ServeDatabase makes the OVSDB server at remote ("unix:PATH" or
// "tcp:IP:PORT") the source of the daemon's configuration and runs the
// session until ctx is done. Losing the database leaves the bridges
// forwarding as they are; the session reconnects and picks up where the
// database is then.
func (d *Daemon) ServeDatabase(ctx context.Context, remote string) error {
	if !strings.HasPrefix(remote, "unix:") && !strings.HasPrefix(remote, "tcp:") {
		return fmt.Errorf("database %q: want unix:PATH or tcp:IP:PORT", remote)
	}
	d.reconfMu.Lock()
	d.dbMode = true
	d.reconfMu.Unlock()
	wait := minReconnect
	for {
		start := time.Now()
		err := d.dbSession(ctx, remote)
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(start) > maxReconnect {
			wait = minReconnect
		}
		d.Log.Warn("database connection lost, reconnecting", zap.String("remote", remote), zap.Error(err), zap.Duration("in", wait))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, maxReconnect)
	}
}

// dbSession is one connection to the database.
type dbSession struct {
	d       *Daemon
	c       client.Client
	log     *zap.Logger
	changed chan struct{}
	applied *State // the desired state last reconciled, nil before the first
	status  map[string]PortStatus
	// cfg is the next_cfg the running configuration reflects, written to
	// cur_cfg (again by later passes if a write failed); -1: none yet.
	cfg int
	// locked: the server granted the ovs_vswitchd lock.
	locked bool
	devs   map[string]devInfo // by name/ifindex (device)
	// written holds, by Interface UUID, the write-only columns as this
	// session last wrote them (writeOnlyColumns: not monitored).
	written      map[string]*ifaceRow
	typesWritten bool // datapath_types, iface_types, dpdk_version
}

func (d *Daemon) dbSession(ctx context.Context, remote string) error {
	dbModel, err := vswitchModel()
	if err != nil {
		return err
	}
	discard := logr.Discard()
	c, err := client.NewOVSDBClient(dbModel, client.WithEndpoint(remote), client.WithLogger(&discard))
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.Connect(cctx); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer c.Close()
	s := &dbSession{d: d, c: c, log: d.Log.With(zap.String("remote", remote)), changed: make(chan struct{}, 1), cfg: -1}
	if err := s.lock(cctx); err != nil {
		return err
	}
	kick := func() {
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
	c.Cache().AddEventHandler(&cache.EventHandlerFuncs{
		AddFunc:    func(string, model.Model) { kick() },
		UpdateFunc: func(string, model.Model, model.Model) { kick() },
		DeleteFunc: func(string, model.Model) { kick() },
	})
	var tables []client.MonitorOption
	for _, m := range []model.Model{&ovsRow{}, &bridgeRow{}, &portRow{}, &ifaceRow{}, &controllerRow{}, &flowTableRow{}, &datapathRow{}} {
		tables = append(tables, client.WithTable(m, columnPointers(m)...))
	}
	mon := c.NewMonitor(tables...)
	if _, err := c.Monitor(cctx, mon); err != nil {
		return fmt.Errorf("monitor: %w", err)
	}
	s.log.Info("connected to the database")
	kick()
	stats := time.NewTicker(statsInterval)
	defer stats.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.DisconnectNotify():
			return errors.New("disconnected")
		case <-s.changed:
			if !s.haveLock(ctx) {
				continue
			}
			if err := s.reconfigure(ctx); err != nil {
				s.log.Warn("reconfiguration write-back failed", zap.Error(err))
			}
		case <-s.d.linkEvents:
			if !s.haveLock(ctx) {
				continue
			}
			if err := s.writeBack(ctx, nil, false); err != nil {
				s.log.Warn("link state write-back failed", zap.Error(err))
			}
		case <-stats.C:
			if !s.haveLock(ctx) {
				kick() // configure as soon as the lock comes
				continue
			}
			if err := s.writeBack(ctx, nil, true); err != nil {
				s.log.Warn("statistics write-back failed", zap.Error(err))
			}
		}
	}
}

// lock asks for the ovs_vswitchd lock on the session's connection, as
// ovs-vswitchd does before it monitors. libovsdb v0.7.0 has no call for
// the OVSDB "lock" method (RFC 7047 4.1.8), so it is sent on the client's
// JSON-RPC connection directly. When another process holds it the server
// grants it later (haveLock finds out).
func (s *dbSession) lock(ctx context.Context) error {
	rc := rpcClientOf(s.c)
	if rc == nil {
		return errors.New("lock: no JSON-RPC connection")
	}
	var reply struct {
		Locked bool `json:"locked"`
	}
	if err := rc.CallWithContext(ctx, "lock", []any{vswitchdLock}, &reply); err != nil {
		return fmt.Errorf("lock %s: %w", vswitchdLock, err)
	}
	s.locked = reply.Locked
	if !reply.Locked {
		s.log.Warn("another ovs-vswitchd process holds the database lock; this one does nothing until it goes away", zap.String("lock", vswitchdLock))
	}
	return nil
}

// haveLock tells whether the session holds the lock. Like ovs-vswitchd,
// govs neither configures bridges nor writes while another process holds
// it; whether the server granted it since is asked with a transaction of
// just the lock assertion.
func (s *dbSession) haveLock(ctx context.Context) bool {
	if s.locked {
		return true
	}
	if s.transact(ctx, nil) == nil {
		s.locked = true
		s.log.Info("got the database lock", zap.String("lock", vswitchdLock))
	}
	return s.locked
}

// rpcClientOf returns the JSON-RPC connection inside a libovsdb client
// (its unexported rpcClient field; the go.mod pins the version).
func rpcClientOf(c client.Client) *rpc2.Client {
	v := reflect.ValueOf(c)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	f := v.Elem().FieldByName("rpcClient")
	if !f.IsValid() || f.Type() != reflect.TypeFor[*rpc2.Client]() {
		return nil
	}
	return *(**rpc2.Client)(unsafe.Pointer(f.UnsafeAddr()))
}

// snapshot is the database as the cache holds it.
type snapshot struct {
	ovs         *ovsRow
	bridges     map[string]*bridgeRow
	ports       map[string]*portRow
	ifaces      map[string]*ifaceRow
	controllers map[string]*controllerRow
	flowTables  map[string]*flowTableRow
	datapaths   map[string]*datapathRow
}

func (s *dbSession) snapshot() snapshot {
	tc := s.c.Cache()
	sn := snapshot{bridges: map[string]*bridgeRow{}, ports: map[string]*portRow{},
		ifaces: map[string]*ifaceRow{}, controllers: map[string]*controllerRow{}, flowTables: map[string]*flowTableRow{},
		datapaths: map[string]*datapathRow{}}
	for _, m := range tc.Table("Open_vSwitch").RowsShallow() {
		sn.ovs = m.(*ovsRow)
	}
	for id, m := range tc.Table("Bridge").RowsShallow() {
		sn.bridges[id] = m.(*bridgeRow)
	}
	for id, m := range tc.Table("Port").RowsShallow() {
		sn.ports[id] = m.(*portRow)
	}
	for id, m := range tc.Table("Interface").RowsShallow() {
		sn.ifaces[id] = m.(*ifaceRow)
	}
	for id, m := range tc.Table("Controller").RowsShallow() {
		sn.controllers[id] = m.(*controllerRow)
	}
	for id, m := range tc.Table("Flow_Table").RowsShallow() {
		sn.flowTables[id] = m.(*flowTableRow)
	}
	for id, m := range tc.Table("Datapath").RowsShallow() {
		sn.datapaths[id] = m.(*datapathRow)
	}
	return sn
}

// reconfigure turns the database into the desired state, reconciles when
// it changed, and writes back the result and cur_cfg.
func (s *dbSession) reconfigure(ctx context.Context) error {
	t0 := time.Now()
	sn := s.snapshot()
	if sn.ovs == nil {
		// An empty database: nothing to configure, which counts as
		// configured (ovs-vswitchd applies its null configuration).
		s.d.configuredOnce.Do(func() { close(s.d.configured) })
		return nil
	}
	if !s.typesWritten {
		if err := s.writeTypes(ctx); err != nil {
			return err
		}
		s.typesWritten = true
	}
	want, invalid := s.desiredState(sn)
	s.log.Debug("database read", zap.Duration("took", time.Since(t0)))
	// Our own writes of Interface.ofport change only PrevOFPort, which
	// matters to ports not open yet: no reason to reconfigure.
	// Read on every change, not only of the bridges: a change once they
	// run is reported at once (it needs a restart).
	s.d.applyOffloadConfig(sn.ovs.OtherConfig)
	if s.applied == nil || !reflect.DeepEqual(withoutPrevOFPort(*s.applied), withoutPrevOFPort(want)) {
		s.d.applyOtherConfig(sn.ovs.OtherConfig)
		start := time.Now()
		res := s.d.Reconcile(want)
		s.applied, s.status = &want, res.Ports
		s.log.Info("reconfigured", zap.Int("next_cfg", sn.ovs.NextCfg), zap.Duration("took", time.Since(start)))
	}
	for name, err := range invalid {
		s.status[name] = PortStatus{OFPort: -1, Err: err}
	}
	s.cfg = sn.ovs.NextCfg
	if err := s.writeBack(ctx, &sn, false); err != nil {
		return err
	}
	s.d.configuredOnce.Do(func() { close(s.d.configured) })
	return nil
}

// withoutPrevOFPort is a copy of st without the ports' previous numbers.
func withoutPrevOFPort(st State) State {
	st = st.clone()
	for i := range st.Bridges {
		for j := range st.Bridges[i].Ports {
			st.Bridges[i].Ports[j].PrevOFPort = 0
		}
	}
	return st
}

// desiredState reads the bridges, ports and switch options from the
// database. Ports whose rows govs cannot take as they are come back in
// invalid, with the error for Interface.error.
func (s *dbSession) desiredState(sn snapshot) (State, map[string]error) {
	invalid := map[string]error{}
	st := State{FlowRestoreWait: sn.ovs.OtherConfig["flow-restore-wait"] == "true"}
	for _, bid := range sn.ovs.Bridges {
		br := sn.bridges[bid]
		if br == nil {
			continue
		}
		switch br.DatapathType {
		case "", "netdev", "system":
		default:
			s.log.Warn("bridge has a datapath type govs does not have; not created", zap.String("bridge", br.Name), zap.String("datapath_type", br.DatapathType))
			continue
		}
		bc := BridgeConfig{Name: br.Name, FailMode: "standalone", Protocols: slices.Sorted(slices.Values(br.Protocols))}
		if br.FailMode != nil {
			bc.FailMode = *br.FailMode
		}
		if v, ok := dpidFromString(br.OtherConfig["datapath-id"]); ok {
			bc.DatapathID = fmt.Sprintf("%016x", v)
		}
		bc.HWAddr, bc.DefaultMAC = br.OtherConfig["hwaddr"], defaultBridgeMAC(br.UUID)
		bc.FlowLimits = flowLimits(br.FlowTables, sn.flowTables)
		bc.Prefixes = tablePrefixes(br.FlowTables, sn.flowTables)
		for _, cid := range br.Controller {
			if c := sn.controllers[cid]; c != nil {
				if strings.HasPrefix(c.Target, "p") {
					bc.Listeners = append(bc.Listeners, c.Target)
				} else {
					bc.Controllers = append(bc.Controllers, c.Target)
				}
			}
		}
		slices.Sort(bc.Listeners)
		slices.Sort(bc.Controllers)
		for _, pid := range br.Ports {
			pr := sn.ports[pid]
			if pr == nil {
				continue
			}
			for _, iid := range pr.Interfaces {
				ir := sn.ifaces[iid]
				if ir == nil {
					continue
				}
				if len(pr.Interfaces) != 1 {
					invalid[ir.Name] = fmt.Errorf("port %s has %d interfaces: govs has no bonds", pr.Name, len(pr.Interfaces))
					continue
				}
				pc, err := portFromRows(pr, ir)
				if err != nil {
					invalid[ir.Name] = err
					continue
				}
				if pc.Name == bc.Name {
					// OVS ignores Interface.mac on the LOCAL port: the
					// bridge picks its MAC (pickLocalMAC).
					pc.MAC = ""
				}
				if pr.MAC != nil {
					pc.PortMAC = *pr.MAC
				}
				bc.Ports = append(bc.Ports, pc)
			}
		}
		slices.SortFunc(bc.Ports, func(a, b PortConfig) int { return strings.Compare(a.Name, b.Name) })
		st.Bridges = append(st.Bridges, bc)
	}
	slices.SortFunc(st.Bridges, func(a, b BridgeConfig) int { return strings.Compare(a.Name, b.Name) })
	return st, invalid
}

// flowLimits are the flow_limit columns of a bridge's Flow_Table rows, by
// table (nil when none has one), as OVS's bridge_configure_tables reads
// them.
func flowLimits(tables map[int]string, rows map[string]*flowTableRow) map[uint8]int {
	var l map[uint8]int
	for table, id := range tables {
		ft := rows[id]
		if ft == nil || ft.FlowLimit == nil || table < 0 || table > 254 {
			continue
		}
		if l == nil {
			l = map[uint8]int{}
		}
		l[uint8(table)] = *ft.FlowLimit
	}
	return l
}

// tablePrefixes are the prefixes columns of a bridge's Flow_Table rows,
// by table (nil when none has one); names OVS would not take are left for
// the bridge to warn about (applyPrefixes).
func tablePrefixes(tables map[int]string, rows map[string]*flowTableRow) map[uint8][]string {
	var m map[uint8][]string
	for table, id := range tables {
		ft := rows[id]
		if ft == nil || len(ft.Prefixes) == 0 || table < 0 || table > 254 {
			continue
		}
		if m == nil {
			m = map[uint8][]string{}
		}
		m[uint8(table)] = slices.Clone(ft.Prefixes)
	}
	return m
}

// portFromRows makes the wanted port of a Port row and its Interface.
func portFromRows(pr *portRow, ir *ifaceRow) (PortConfig, error) {
	pc := PortConfig{Name: ir.Name, Type: ir.Type, Options: maps.Clone(ir.Options), NoOffload: ir.OtherConfig["govs-offload"] == "false"}
	// The schema bounds these; a server that let others through must not
	// have them wrap around.
	for _, v := range []struct {
		col    string
		p      *int
		lo, hi int
	}{{"ofport_request", ir.OFPortRequest, 1, 65279}, {"mtu_request", ir.MTURequest, 1, 65535}, {"tag", pr.Tag, 0, 4095}} {
		if v.p != nil && (*v.p < v.lo || *v.p > v.hi) {
			return pc, wordedError{fmt.Errorf("could not configure network device %s (%s %d out of range %d..%d)", ir.Name, v.col, *v.p, v.lo, v.hi)}
		}
	}
	for _, t := range pr.Trunks {
		if t < 0 || t > 4095 {
			return pc, wordedError{fmt.Errorf("could not configure network device %s (trunks: VLAN %d out of range 0..4095)", ir.Name, t)}
		}
	}
	if ir.OFPortRequest != nil {
		pc.OFPortRequest = uint32(*ir.OFPortRequest)
	}
	if ir.MAC != nil {
		pc.MAC = *ir.MAC
	}
	if ir.MTURequest != nil {
		pc.MTURequest = *ir.MTURequest
	}
	if ir.OFPort != nil && *ir.OFPort > 0 && *ir.OFPort < 0xff00 {
		pc.PrevOFPort = uint32(*ir.OFPort)
	}
	if pr.Tag != nil {
		pc.Tag = uint16(*pr.Tag)
	}
	for _, t := range pr.Trunks {
		pc.Trunks = append(pc.Trunks, uint16(t))
	}
	slices.Sort(pc.Trunks)
	if pr.VLANMode != nil {
		pc.VLANMode = *pr.VLANMode
	}
	if err := pc.check(); err != nil {
		return pc, wordedError{fmt.Errorf("could not configure network device %s (%w)", ir.Name, err)}
	}
	return pc, nil
}

// applyOtherConfig maps the Open_vSwitch other_config keys govs has
// options for; the others are ignored, as OVS ignores keys it does not
// know. Both apply to ports and bridges created from then on.
func (d *Daemon) applyOtherConfig(oc map[string]string) {
	d.UserspaceTSO = d.UserspaceTSOFlag || oc["userspace-tso-enable"] == "true"
	d.setFlowCacheLimit(oc["flow-limit"])
	if mask, ok := oc["pmd-cpu-mask"]; ok {
		m, err := strconv.ParseUint(strings.TrimPrefix(mask, "0x"), 16, 64)
		if err != nil || m == 0 {
			d.Log.Warn("other_config:pmd-cpu-mask is not a hexadecimal CPU mask; ignored", zap.String("pmd-cpu-mask", mask))
			return
		}
		// One poll-mode thread per bridge, on the mask's first CPU.
		d.PMD = datapath.PMDConfig{Enabled: true, CPU: bits.TrailingZeros64(m)}
	}
}

// writeTypes writes what ovs-vswitchd writes once connected: the datapath
// and interface types it has, and that it has no DPDK.
func (s *dbSession) writeTypes(ctx context.Context) error {
	sn := s.snapshot()
	if sn.ovs == nil {
		return nil
	}
	row := ovsdb.Row{}
	if !slices.Equal(slices.Sorted(slices.Values(sn.ovs.DatapathTypes)), govsDatapathTypes) {
		row["datapath_types"] = stringSet(govsDatapathTypes)
	}
	if !slices.Equal(slices.Sorted(slices.Values(sn.ovs.IfaceTypes)), govsIfaceTypes) {
		row["iface_types"] = stringSet(govsIfaceTypes)
	}
	if sn.ovs.DpdkVersion == nil || *sn.ovs.DpdkVersion != "none" {
		row["dpdk_version"] = "none"
	}
	if len(row) == 0 {
		return nil
	}
	return s.transact(ctx, []ovsdb.Operation{update("Open_vSwitch", sn.ovs.UUID, row)})
}

// writeBack writes the state of every wanted interface and bridge where
// it differs from the database (sn, or the cache when nil), and cur_cfg
// when it is behind the configuration applied. withStats also writes the
// statistics of every open interface.
func (s *dbSession) writeBack(ctx context.Context, sn *snapshot, withStats bool) error {
	if sn == nil {
		cur := s.snapshot()
		sn = &cur
	}
	if sn.ovs == nil {
		return nil
	}
	var ops []ovsdb.Operation
	infos := s.d.portInfos()
	links := kernelLinks()
	if s.written == nil {
		s.written = map[string]*ifaceRow{}
	}
	for id := range s.written {
		if sn.ifaces[id] == nil {
			delete(s.written, id)
		}
	}
	rows := map[string]ovsdb.Row{}
	for id, ir := range sn.ifaces {
		st, ok := s.status[ir.Name]
		if !ok {
			continue // not on a bridge (yet)
		}
		pi := infos[ir.Name]
		var dev devInfo
		if pi.Name != "" && !isTunnel(pi) {
			dev = s.device(links[ir.Name])
		}
		cur := s.withWritten(id, ir)
		row := ifaceWriteBack(&cur, st, pi, links[ir.Name], dev, withStats)
		if len(row) > 0 {
			ops = append(ops, update("Interface", id, row))
			rows[id] = row
		}
	}
	for id, br := range sn.bridges {
		dp, ok := s.d.Bridge(br.Name)
		if !ok {
			continue
		}
		row := ovsdb.Row{}
		if dpid := fmt.Sprintf("%016x", dp.DatapathID()); br.DatapathID == nil || *br.DatapathID != dpid {
			row["datapath_id"] = dpid
		}
		if br.DatapathVersion != "<built-in>" {
			row["datapath_version"] = "<built-in>"
		}
		if len(row) > 0 {
			ops = append(ops, update("Bridge", id, row))
		}
	}
	ops = append(ops, s.capabilitiesWriteBack(sn)...)
	if s.cfg >= 0 && sn.ovs.CurCfg != s.cfg {
		ops = append(ops, update("Open_vSwitch", sn.ovs.UUID, ovsdb.Row{"cur_cfg": s.cfg}))
	}
	if len(ops) == 0 {
		return nil
	}
	start := time.Now()
	err := s.transact(ctx, ops)
	s.log.Debug("written back", zap.Int("ops", len(ops)), zap.Duration("took", time.Since(start)), zap.Error(err))
	if err == nil {
		for id, row := range rows {
			s.remember(id, row)
		}
	}
	return err
}

// capabilitiesWriteBack fills the capabilities of the Datapath rows of
// the types govs runs (Open_vSwitch.datapaths "netdev", "system"), as
// ovs-vswitchd does when it first sees such a row; rows of other types
// are left empty, as OVS leaves types it has no backer for.
func (s *dbSession) capabilitiesWriteBack(sn *snapshot) []ovsdb.Operation {
	var ops []ovsdb.Operation
	caps := DatapathCapabilities()
	for _, dpType := range slices.Sorted(maps.Keys(sn.ovs.Datapaths)) {
		id := sn.ovs.Datapaths[dpType]
		row, ok := sn.datapaths[id]
		if !ok || !slices.Contains(govsDatapathTypes, dpType) || maps.Equal(row.Capabilities, caps) {
			continue
		}
		ops = append(ops, update("Datapath", id, ovsdb.Row{"capabilities": ovsdb.OvsMap{GoMap: toAnyMap(caps)}}))
	}
	return ops
}

func toAnyMap(m map[string]string) map[any]any {
	out := make(map[any]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// unknownWritten stands for write-only columns whose values this session
// has not written yet: it differs from every value govs writes, so the
// first write-back of a row sets them all.
func unknownWritten() *ifaceRow {
	str, n := "\x00unknown", -2
	return &ifaceRow{Error: &str, MACInUse: &str, MTU: &n, Ifindex: &n, AdminState: &str, LinkState: &str,
		LinkResets: &n, LinkSpeed: &n, Duplex: &str, Status: map[string]string{str: str}}
}

// withWritten is ir (its monitored columns) with the write-only columns
// as this session last wrote them.
func (s *dbSession) withWritten(id string, ir *ifaceRow) ifaceRow {
	w := s.written[id]
	if w == nil {
		w = unknownWritten()
	}
	cur := *ir
	cur.Error, cur.MACInUse, cur.MTU, cur.Ifindex = w.Error, w.MACInUse, w.MTU, w.Ifindex
	cur.AdminState, cur.LinkState, cur.LinkResets, cur.Statistics = w.AdminState, w.LinkState, w.LinkResets, w.Statistics
	cur.LinkSpeed, cur.Duplex, cur.Status = w.LinkSpeed, w.Duplex, w.Status
	return cur
}

// remember records the write-only columns of a row written to id.
func (s *dbSession) remember(id string, row ovsdb.Row) {
	w := s.written[id]
	if w == nil {
		w = unknownWritten()
		s.written[id] = w
	}
	str := func(v any) *string {
		if x, ok := v.(string); ok {
			return &x
		}
		return nil // an empty set: the column was cleared
	}
	num := func(v any) *int {
		if x, ok := v.(int); ok {
			return &x
		}
		return nil
	}
	for col, v := range row {
		switch col {
		case "error":
			w.Error = str(v)
		case "mac_in_use":
			w.MACInUse = str(v)
		case "admin_state":
			w.AdminState = str(v)
		case "link_state":
			w.LinkState = str(v)
		case "duplex":
			w.Duplex = str(v)
		case "mtu":
			w.MTU = num(v)
		case "ifindex":
			w.Ifindex = num(v)
		case "link_resets":
			w.LinkResets = num(v)
		case "link_speed":
			w.LinkSpeed = num(v)
		case "statistics":
			w.Statistics = fromOvsMap[int](v)
		case "status":
			w.Status = fromOvsMap[string](v)
		}
	}
}

// fromOvsMap is a map column's value as written (an empty set: empty).
func fromOvsMap[V any](v any) map[string]V {
	m := map[string]V{}
	if om, ok := v.(ovsdb.OvsMap); ok {
		for k, x := range om.GoMap {
			m[k.(string)] = x.(V)
		}
	}
	return m
}

// transact runs ops with the lock asserted, as every ovs-vswitchd write.
func (s *dbSession) transact(ctx context.Context, ops []ovsdb.Operation) error {
	lock := vswitchdLock
	ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationAssert, Lock: &lock})
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := s.c.Transact(tctx, ops...)
	if err != nil {
		return fmt.Errorf("transact: %w", err)
	}
	if _, err := ovsdb.CheckOperationResults(res, ops); err != nil {
		return fmt.Errorf("transact: %w", err)
	}
	return nil
}

// update is an "update" operation of one row by UUID.
func update(table, uuid string, row ovsdb.Row) ovsdb.Operation {
	return ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: table, Row: row,
		Where: []ovsdb.Condition{{Column: "_uuid", Function: ovsdb.ConditionEqual, Value: ovsdb.UUID{GoUUID: uuid}}}}
}

func stringSet(v []string) ovsdb.OvsSet {
	s := ovsdb.OvsSet{GoSet: []any{}}
	for _, x := range v {
		s.GoSet = append(s.GoSet, x)
	}
	return s
}

// emptySet clears an optional column.
func emptySet() ovsdb.OvsSet { return ovsdb.OvsSet{GoSet: []any{}} }

// portInfos returns every running port's datapath view, by name.
func (d *Daemon) portInfos() map[string]datapath.PortInfo {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]datapath.PortInfo{}
	for _, b := range d.bridges {
		for _, pi := range b.dp.Ports() {
			out[pi.Name] = pi
		}
	}
	return out
}

// ifaceWriteBack is the Interface columns that differ from what
// ovs-vswitchd would write for the port's status (OVSDB-APPCTL.md 2.3).
func ifaceWriteBack(ir *ifaceRow, st PortStatus, pi datapath.PortInfo, link net.Interface, dev devInfo, withStats bool) ovsdb.Row {
	row := ovsdb.Row{}
	setInt := func(col string, have *int, want int) {
		if have == nil || *have != want {
			row[col] = want
		}
	}
	setStr := func(col string, have *string, want string) {
		if have == nil || *have != want {
			row[col] = want
		}
	}
	clear := func(col string, have bool) {
		if have {
			row[col] = emptySet()
		}
	}
	if st.Err != nil || pi.Name == "" {
		// Not open: ofport -1, the error, and no state.
		setInt("ofport", ir.OFPort, -1)
		if st.Err != nil {
			setStr("error", ir.Error, st.ErrorText(ir.Name))
		}
		clear("mac_in_use", ir.MACInUse != nil)
		clear("mtu", ir.MTU != nil)
		clear("ifindex", ir.Ifindex != nil)
		clear("admin_state", ir.AdminState != nil)
		clear("link_state", ir.LinkState != nil)
		clear("link_resets", ir.LinkResets != nil)
		clear("link_speed", ir.LinkSpeed != nil)
		clear("duplex", ir.Duplex != nil)
		if len(ir.Statistics) > 0 {
			row["statistics"] = ovsdb.OvsMap{GoMap: map[any]any{}}
		}
		if len(ir.Status) > 0 {
			row["status"] = ovsdb.OvsMap{GoMap: map[any]any{}}
		}
		return row
	}
	setInt("ofport", ir.OFPort, int(pi.OFPort))
	clear("error", ir.Error != nil)
	tunnel := isTunnel(pi)
	if pi.MAC != nil {
		setStr("mac_in_use", ir.MACInUse, pi.MAC.String())
	}
	if !tunnel {
		// The device's MTU now (ip link may have changed it since the
		// port opened), as OVS reads it.
		mtu := pi.MTU
		if link.Index != 0 && link.MTU > 0 {
			mtu = link.MTU
		}
		setInt("mtu", ir.MTU, mtu)
	}
	admin, carrier, ifindex := "up", "up", 0
	if !tunnel {
		admin, carrier, ifindex = linkState(link)
	}
	setInt("ifindex", ir.Ifindex, ifindex)
	setStr("admin_state", ir.AdminState, admin)
	setStr("link_state", ir.LinkState, carrier)
	setInt("link_resets", ir.LinkResets, 0)
	if dev.speed > 0 {
		setInt("link_speed", ir.LinkSpeed, dev.speed)
		setStr("duplex", ir.Duplex, dev.duplex)
	} else {
		clear("link_speed", ir.LinkSpeed != nil)
		clear("duplex", ir.Duplex != nil)
	}
	if dev.status != nil && !maps.Equal(dev.status, ir.Status) {
		m := ovsdb.OvsMap{GoMap: map[any]any{}}
		for k, v := range dev.status {
			m.GoMap[k] = v
		}
		row["status"] = m
	}
	if withStats || len(ir.Statistics) == 0 {
		stats := interfaceStatistics(pi)
		if !maps.Equal(stats, ir.Statistics) {
			m := ovsdb.OvsMap{GoMap: map[any]any{}}
			for k, v := range stats {
				m.GoMap[k] = v
			}
			row["statistics"] = m
		}
	}
	return row
}

// kernelLinks reads every kernel interface once (one netlink dump), by
// name: asking per port would dump them all per port.
func kernelLinks() map[string]net.Interface {
	ifs, _ := net.Interfaces()
	m := make(map[string]net.Interface, len(ifs))
	for _, ifi := range ifs {
		m[ifi.Name] = ifi
	}
	return m
}

// linkState is a kernel interface's administrative and carrier state and
// its index (down, down, 0 when it is gone).
func linkState(ifi net.Interface) (admin, carrier string, ifindex int) {
	admin, carrier = "down", "down"
	if ifi.Flags&net.FlagUp != 0 {
		admin = "up"
	}
	if ifi.Flags&net.FlagRunning != 0 {
		carrier = "up"
	}
	return admin, carrier, ifi.Index
}

// devInfo is what ovs-vswitchd shows of a kernel interface's device:
// its driver (Interface.status) and link speed and duplex.
type devInfo struct {
	status map[string]string
	speed  int // bit/s; 0 unknown
	duplex string
	gen    uint64 // linkLog's generation when read
}

// device returns the device facts of a kernel interface, read once per
// interface index and link notification that named it.
func (s *dbSession) device(ifi net.Interface) devInfo {
	if ifi.Name == "" {
		return devInfo{}
	}
	key := ifi.Name + "/" + strconv.Itoa(ifi.Index)
	if dev, ok := s.devs[key]; ok && linkLog.fresh(ifi.Name, dev.gen) {
		return dev
	}
	gen := linkLog.current()
	dev := readDevice(ifi.Name)
	dev.gen = gen
	if s.devs == nil {
		s.devs = map[string]devInfo{}
	}
	s.devs[key] = dev
	return dev
}

// readDevice asks the driver (ETHTOOL_GDRVINFO, ETHTOOL_GSET) on one
// control socket: 1,000 new ports are 1,000 reads.
func readDevice(name string) devInfo {
	var dev devInfo
	fd, err := ifioctl.ControlSocket()
	if err != nil {
		return dev
	}
	defer unix.Close(fd)
	if di, err := unix.IoctlGetEthtoolDrvinfo(fd, name); err == nil {
		dev.status = map[string]string{"driver_name": cString(di.Driver[:]),
			"driver_version": cString(di.Version[:]), "firmware_version": cString(di.Fw_version[:])}
	}
	dev.speed, dev.duplex = linkSettings(fd, name)
	return dev
}

// linkSettings is Interface.link_speed (bit/s) and duplex as
// iface_refresh_status writes them: from the port's current features, so
// only for a speed OpenFlow names (none for a driver without link settings
// or a speed it does not know). ETHTOOL_GSET answers for a device that is
// down too.
func linkSettings(fd int, name string) (speed int, duplex string) {
	curr := readPortFeatures(fd, name).Curr
	bps := featuresToBps(curr)
	if bps == 0 {
		return 0, ""
	}
	duplex = "half"
	if curr&featFullDuplex != 0 {
		duplex = "full"
	}
	return int(bps), duplex
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// interfaceStatistics is Interface.statistics as ovs-vswitchd fills it:
// fourteen counters, four for tunnels.
func interfaceStatistics(pi datapath.PortInfo) map[string]int {
	s := pi.Stats
	m := map[string]int{
		"rx_bytes": int(s.RxBytes), "rx_packets": int(s.RxPackets),
		"tx_bytes": int(s.TxBytes), "tx_packets": int(s.TxPackets),
	}
	if isTunnel(pi) {
		return m
	}
	m["collisions"], m["rx_crc_err"], m["rx_frame_err"], m["rx_missed_errors"] = 0, 0, 0, 0
	m["rx_multicast_packets"], m["rx_over_err"] = 0, 0
	m["rx_dropped"], m["rx_errors"] = int(s.RxDropped), int(s.RxErrors)
	m["tx_dropped"], m["tx_errors"] = int(s.TxDropped), int(s.TxErrors)
	return m
}

// isTunnel tells a tunnel vport, which OVS shows without MTU or kernel
// counters.
func isTunnel(pi datapath.PortInfo) bool {
	return pi.Kind == "geneve" || pi.Kind == datapath.KindTunnel
}
