package main

// ovs-ofctl style commands: they speak OpenFlow to any switch (a
// govs-vswitchd bridge or a real Open vSwitch), sending what ovs-ofctl
// sends for the same command (shared/protocol/PROTOCOL.md §3) and
// printing what ovs-ofctl prints.

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/flowtext"
	"github.com/govs-project/govs/ofproto/ofclient"
	"github.com/govs-project/govs/ofproto/translate"
	"github.com/govs-project/govs/ofproto/wire"
)

// ofctlOptions are ovs-ofctl's options that the commands share.
type ofctlOptions struct {
	version flowtext.Version
	strict  bool
	bundle  bool
	noStats bool
	names   bool
	rundir  string
}

// ofctlCommand is one ovs-ofctl style command.
type ofctlCommand struct {
	name     string
	usage    string // arguments after the command word
	min, max int    // positional arguments, TARGET included
	run      func(o *ofctlOptions, args []string, w io.Writer) error
}

var ofctlCommands = []ofctlCommand{
	{"add-flow", "TARGET FLOW", 2, 2, runAddFlow},
	{"add-flows", "TARGET FILE", 2, 2, runAddFlows},
	{"mod-flows", "TARGET FLOW", 2, 2, runModFlows},
	{"del-flows", "TARGET [MATCH]", 1, 2, runDelFlows},
	{"dump-flows", "TARGET [MATCH]", 1, 2, runDumpFlows},
	{"add-group", "TARGET GROUP", 2, 2, runAddGroup},
	{"add-groups", "TARGET FILE", 2, 2, runAddGroups},
	{"mod-group", "TARGET GROUP", 2, 2, runModGroup},
	{"del-groups", "TARGET [GROUP]", 1, 2, runDelGroups},
	{"dump-groups", "TARGET [GROUP_ID]", 1, 2, runDumpGroups},
	{"dump-ports", "TARGET [PORT]", 1, 2, runDumpPorts},
	{"dump-tables", "TARGET", 1, 1, runDumpTables},
	{"show", "TARGET", 1, 1, runShow},
	{"packet-out", "TARGET IN_PORT ACTIONS PACKET_HEX | TARGET \"in_port=N packet=HEX actions=...\"", 2, 4, runPacketOut},
	{"add-tlv-map", "TARGET MAP", 2, 2, runAddTLVMap},
	{"del-tlv-map", "TARGET [MAP]", 1, 2, runDelTLVMap},
	{"dump-tlv-map", "TARGET", 1, 1, runDumpTLVMap},
}

const ofctlOptionsHelp = "options: -O OpenFlow10|OpenFlow13|OpenFlow15 (default OpenFlow13; plain ovs-ofctl defaults to OpenFlow10), " +
	"--strict, --bundle, --no-stats, --names, --rundir DIR ($GOVS_RUNDIR, default /var/run/govs). " +
	"TARGET: BRIDGE (unix:RUNDIR/BRIDGE.mgmt), unix:PATH or tcp:IP:PORT"

// Registered as a package variable, not in init, so that these entries
// come before the ovs-vsctl style ones appended by vsctl.go's init: `govs
// show TARGET` is ovs-ofctl show, plain `govs show` stays ovs-vsctl show.
var _ = registerOfctl()

func registerOfctl() bool {
	for _, c := range ofctlCommands {
		c := c
		summary := c.name + " [OPTIONS] " + c.usage + ": like ovs-ofctl " + c.name
		run := func(args []string) error { return runOfctl(&c, args, os.Stdout) }
		if c.name == "show" {
			summary = "show [OPTIONS] [TARGET]: without TARGET like ovs-vsctl show (asks govs-vswitchd), with TARGET like ovs-ofctl show"
			run = func(args []string) error {
				if _, pos, err := parseOfctlArgs(args); err == nil && len(pos) == 0 {
					return vsctl("show")(args)
				}
				return runOfctl(&c, args, os.Stdout)
			}
		}
		commands = append(commands, command{c.name, summary, run})
	}
	commands = append(commands, command{"ofctl-options", ofctlOptionsHelp, func([]string) error {
		fmt.Println(ofctlOptionsHelp)
		return nil
	}})
	return true
}

// ofctlCommandNamed finds an ovs-ofctl style command by name.
func ofctlCommandNamed(name string) (ofctlCommand, bool) {
	for _, c := range ofctlCommands {
		if c.name == name {
			return c, true
		}
	}
	return ofctlCommand{}, false
}

// parseOfctlArgs separates options from positional arguments. Options may
// come anywhere (ovs-ofctl's getopt permutes); "--" ends them.
func parseOfctlArgs(args []string) (*ofctlOptions, []string, error) {
	o := &ofctlOptions{version: flowtext.OF13, rundir: defaultRundir()}
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		needVal := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("option %s needs a value", a)
			}
			i++
			return args[i], nil
		}
		switch {
		case name == "O" || name == "protocols":
			v, err := needVal()
			if err != nil {
				return nil, nil, err
			}
			if o.version, err = parseOfctlVersion(v); err != nil {
				return nil, nil, err
			}
		case strings.HasPrefix(a, "-O") && !strings.HasPrefix(a, "--"):
			// -OOpenFlow15
			v, err := parseOfctlVersion(a[2:])
			if err != nil {
				return nil, nil, err
			}
			o.version = v
		case name == "strict":
			o.strict = true
		case name == "bundle":
			o.bundle = true
		case name == "no-stats":
			o.noStats = true
		case name == "names":
			o.names = true
		case name == "no-names":
			o.names = false
		case name == "rundir":
			v, err := needVal()
			if err != nil {
				return nil, nil, err
			}
			o.rundir = v
		default:
			return nil, nil, usagef("unknown option %s (%s)", a, ofctlOptionsHelp)
		}
	}
	return o, pos, nil
}

// parseOfctlVersion takes -O's argument; unlike parse-flows, an empty
// value is an error, and lists ("OpenFlow10,OpenFlow13") are refused
// because govs negotiates exactly one version.
func parseOfctlVersion(s string) (flowtext.Version, error) {
	if s == "" || strings.Contains(s, ",") {
		return 0, fmt.Errorf("-O %q: give exactly one of OpenFlow10, OpenFlow13, OpenFlow15", s)
	}
	return parseVersion(s)
}

func runOfctl(c *ofctlCommand, args []string, w io.Writer) error {
	o, pos, err := parseOfctlArgs(args)
	if err != nil {
		return err
	}
	if len(pos) < c.min || len(pos) > c.max {
		return usagef("usage: govs %s [OPTIONS] %s\n%s", c.name, c.usage, ofctlOptionsHelp)
	}
	return c.run(o, pos, w)
}

// dial connects to the target with the chosen version.
func (o *ofctlOptions) dial(target string) (*ofclient.Conn, error) {
	t, err := ofclient.ParseTarget(target, o.rundir)
	if err != nil {
		return nil, err
	}
	return ofclient.Dial(t, uint8(o.version))
}

// session is a connection plus what flow text needs from the switch,
// fetched only when the text needs it: the TLV table (tun_metadataN) and
// port names.
type session struct {
	conn  *ofclient.Conn
	tlv   *flowtable.TLVMap
	ports map[string]uint32
	names map[uint32]string
}

func (o *ofctlOptions) session(target string) (*session, error) {
	c, err := o.dial(target)
	if err != nil {
		return nil, err
	}
	return &session{conn: c}, nil
}

func (s *session) close() { s.conn.Close() }

// needTLV fetches the switch's TLV table when text mentions tun_metadata.
func (s *session) needTLV(text string) error {
	if s.tlv != nil || !strings.Contains(strings.ToLower(text), "tun_metadata") {
		return nil
	}
	t, _, err := s.conn.TLVTable()
	if err != nil {
		return fmt.Errorf("reading the switch's TLV table for tun_metadata fields: %w", err)
	}
	s.tlv = t
	return nil
}

// loadPorts fetches port names (for in_port=NAME, output:NAME, --names).
func (s *session) loadPorts() error {
	if s.ports != nil {
		return nil
	}
	ps, err := s.conn.Ports()
	if err != nil {
		return fmt.Errorf("reading the switch's ports: %w", err)
	}
	s.ports, s.names = map[string]uint32{}, map[uint32]string{}
	for _, p := range ps {
		no := p.PortNo
		if s.conn.Version() != wire.OFP10 {
			var ok bool
			if no, ok = translate.PortFromOFP11(p.PortNo); !ok {
				continue
			}
		}
		name := cString(p.Name[:])
		s.ports[name] = no
		s.names[no] = name
	}
	return nil
}

// parse parses flow text; when that fails, port names may be the reason,
// so they are fetched and the text parsed again (ovs-ofctl always fetches
// them; most flows use numbers, which saves a round trip).
func (s *session) parse(parse func(o *flowtext.ParseOptions) error, cmd flowtext.Command, text string) error {
	if err := s.needTLV(text); err != nil {
		return err
	}
	po := &flowtext.ParseOptions{Command: cmd, TLV: s.tlv}
	err := parse(po)
	if err == nil || s.ports != nil {
		return err
	}
	if perr := s.loadPorts(); perr != nil {
		return err
	}
	po.Ports = s.ports
	return parse(po)
}

func (o *ofctlOptions) command(base flowtext.Command) flowtext.Command {
	if !o.strict {
		return base
	}
	switch base {
	case flowtext.CmdModify:
		return flowtext.CmdModifyStrict
	case flowtext.CmdDelete:
		return flowtext.CmdDeleteStrict
	}
	return base
}

// toFlowMod turns a parsed flow line into the flow-mod ovs-ofctl sends.
func toFlowMod(fm *flowtext.FlowMod) *translate.FlowMod {
	out := &translate.FlowMod{Flow: fm.Flow, OutPort: fm.OutPort, OutGroup: fm.OutGroup, BufferID: wire.OFP_NO_BUFFER}
	switch fm.Command {
	case flowtext.CmdAdd:
		out.Command = uint8(wire.OFPFC_ADD)
		return out
	case flowtext.CmdModify:
		out.Command = uint8(wire.OFPFC_MODIFY)
	case flowtext.CmdModifyStrict:
		out.Command = uint8(wire.OFPFC_MODIFY_STRICT)
	case flowtext.CmdDelete:
		out.Command = uint8(wire.OFPFC_DELETE)
	case flowtext.CmdDeleteStrict:
		out.Command = uint8(wire.OFPFC_DELETE_STRICT)
	}
	if !fm.TableSet {
		out.Flow.Table = translate.TableAll
	}
	// cookie=V/M selects flows; otherwise cookie=V (default 0) is the new
	// cookie, which only OpenFlow 1.0 (NX) modify-flows applies: ovs-ofctl
	// -O OpenFlow10 mod-flows resets cookies to 0 unless one is given.
	out.Cookie, out.CookieMask = fm.Cookie&fm.CookieMask, fm.CookieMask
	out.Flow.Cookie = 0
	if fm.CookieMask == 0 {
		out.Flow.Cookie = fm.Cookie
	}
	return out
}

// flowModError names what failed; line > 0 is the flow's line in its file.
func flowModError(err error, file string, line int, text string) error {
	var te *ofclient.TransactError
	if errors.As(err, &te) {
		err = te.Err
	}
	where := "flow"
	if file != "" {
		where = fmt.Sprintf("%s:%d", file, line)
	}
	var oe *ofclient.Error
	if errors.As(err, &oe) {
		return fmt.Errorf("%s: switch rejected %q: %s", where, text, oe.Name())
	}
	return fmt.Errorf("%s: %q: %w", where, text, err)
}

func (o *ofctlOptions) sendFlowMods(s *session, fms []*translate.FlowMod) error {
	return s.conn.FlowMods(fms, s.tlv, o.bundle)
}

func runFlowMod(o *ofctlOptions, args []string, base flowtext.Command) error {
	s, err := o.session(args[0])
	if err != nil {
		return err
	}
	defer s.close()
	text := ""
	if len(args) > 1 {
		text = args[1]
	}
	var fm *flowtext.FlowMod
	cmd := o.command(base)
	if err := s.parse(func(po *flowtext.ParseOptions) (err error) {
		fm, err = flowtext.ParseFlow(text, po)
		return err
	}, cmd, text); err != nil {
		return err
	}
	if err := o.sendFlowMods(s, []*translate.FlowMod{toFlowMod(fm)}); err != nil {
		return flowModError(err, "", 0, text)
	}
	return nil
}

func runAddFlow(o *ofctlOptions, args []string, _ io.Writer) error {
	return runFlowMod(o, args, flowtext.CmdAdd)
}

func runModFlows(o *ofctlOptions, args []string, _ io.Writer) error {
	return runFlowMod(o, args, flowtext.CmdModify)
}

func runDelFlows(o *ofctlOptions, args []string, _ io.Writer) error {
	return runFlowMod(o, args, flowtext.CmdDelete)
}

// readInput reads a file argument ("-": standard input).
func readInput(path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(path)
}

func runAddFlows(o *ofctlOptions, args []string, _ io.Writer) error {
	data, err := readInput(args[1])
	if err != nil {
		return err
	}
	s, err := o.session(args[0])
	if err != nil {
		return err
	}
	defer s.close()
	var parsed []*flowtext.FlowMod
	if err := s.parse(func(po *flowtext.ParseOptions) (err error) {
		parsed, err = flowtext.ParseFlows(bytes.NewReader(data), po)
		return err
	}, flowtext.CmdAdd, string(data)); err != nil {
		return fmt.Errorf("%s: %w", args[1], err)
	}
	lines := strings.Split(string(data), "\n")
	fms := make([]*translate.FlowMod, len(parsed))
	for i, p := range parsed {
		fms[i] = toFlowMod(p)
	}
	if err := o.sendFlowMods(s, fms); err != nil {
		var te *ofclient.TransactError
		if errors.As(err, &te) && te.Index < len(parsed) {
			line := parsed[te.Index].Line
			text := ""
			if line >= 1 && line <= len(lines) {
				text = strings.TrimSpace(lines[line-1])
			}
			return flowModError(err, args[1], line, text)
		}
		return err
	}
	return nil
}

// printOptions are flowtext's options for this session's output.
func (o *ofctlOptions) printOptions(s *session) *flowtext.PrintOptions {
	po := &flowtext.PrintOptions{Version: o.version, TLV: s.tlv}
	if o.names {
		po.Ports = s.names
	}
	return po
}

func runDumpFlows(o *ofctlOptions, args []string, w io.Writer) error {
	s, err := o.session(args[0])
	if err != nil {
		return err
	}
	defer s.close()
	filter := ofclient.AllFlows()
	if len(args) > 1 {
		var fm *flowtext.FlowMod
		if err := s.parse(func(po *flowtext.ParseOptions) (err error) {
			fm, err = flowtext.ParseFlow(args[1], po)
			return err
		}, o.command(flowtext.CmdDelete), args[1]); err != nil {
			return err
		}
		filter = &ofclient.FlowFilter{Table: fm.Table, Match: fm.Match, Cookie: fm.Cookie & fm.CookieMask,
			CookieMask: fm.CookieMask, OutPort: fm.OutPort, OutGroup: fm.OutGroup}
		if !fm.TableSet {
			filter.Table = translate.TableAll
		}
	}
	if o.names {
		if err := s.loadPorts(); err != nil {
			return err
		}
	}
	flows, tlv, err := s.conn.DumpFlows(filter, s.tlv)
	if err != nil {
		return err
	}
	s.tlv = tlv
	po := o.printOptions(s)
	// ovs-ofctl prints the raw reply (with its header line) only for a
	// plain dump with statistics; otherwise just the flows.
	if !o.noStats && len(args) == 1 && !o.names {
		fmt.Fprintf(w, "%s reply%s (xid=%#x):\n", flowReplyName(s.conn.Version()), versionTag(s.conn.Version()), requestXid(s.conn.Version()))
	}
	for _, f := range flows {
		if o.noStats {
			fmt.Fprintf(w, " %s\n", flowtext.FormatFlow(f.Flow, po))
		} else {
			fmt.Fprintf(w, " %s\n", formatFlowStats(f, po))
		}
	}
	return nil
}

// requestXid is the xid ovs-ofctl's dump request has (1.0 first sets the
// flow format with a request and a barrier).
func requestXid(v uint8) uint32 {
	if v == wire.OFP10 {
		return 4
	}
	return 2
}

func flowReplyName(v uint8) string {
	if v == wire.OFP10 {
		return "NXST_FLOW"
	}
	return "OFPST_FLOW"
}

// versionTag is ovs-ofctl's " (OF1.3)" after a message name (none for 1.0).
func versionTag(v uint8) string {
	switch v {
	case wire.OFP13:
		return " (OF1.3)"
	case wire.OFP15:
		return " (OF1.5)"
	}
	return ""
}

// formatFlowStats prints a flow with its statistics like
// ofputil_flow_stats_format with show_stats.
func formatFlowStats(fs *translate.FlowStats, po *flowtext.PrintOptions) string {
	f := *fs.Flow
	var b strings.Builder
	fmt.Fprintf(&b, "cookie=%#x, duration=%s, table=%d, ", f.Cookie, formatDuration(fs.DurationSec, fs.DurationNsec), f.Table)
	b.WriteString("n_packets=" + statString(fs.PacketCount) + ", n_bytes=" + statString(fs.ByteCount) + ", ")
	if f.IdleTimeout != 0 {
		fmt.Fprintf(&b, "idle_timeout=%d, ", f.IdleTimeout)
	}
	if f.HardTimeout != 0 {
		fmt.Fprintf(&b, "hard_timeout=%d, ", f.HardTimeout)
	}
	// Flags and importance print as FormatFlow prints them: let it do the
	// rest with the fields already printed cleared.
	rest := f
	rest.Cookie, rest.Table, rest.IdleTimeout, rest.HardTimeout = 0, 0, 0, 0
	flagsAndImportance := ""
	if f.Flags != 0 || f.Importance != 0 {
		only := flowtable.Flow{Flags: f.Flags, Importance: f.Importance, Priority: flowtable.DefaultPriority}
		s := flowtext.FormatFlow(&only, po)
		flagsAndImportance = s[:strings.Index(s, "actions=")]
		rest.Flags, rest.Importance = 0, 0
	}
	b.WriteString(flagsAndImportance)
	if fs.IdleAge >= 0 {
		fmt.Fprintf(&b, "idle_age=%d, ", fs.IdleAge)
	}
	if fs.HardAge >= 0 && uint32(fs.HardAge) != fs.DurationSec {
		fmt.Fprintf(&b, "hard_age=%d, ", fs.HardAge)
	}
	b.WriteString(flowtext.FormatFlow(&rest, po))
	return b.String()
}

func statString(v uint64) string {
	if v == ^uint64(0) {
		return "?"
	}
	return strconv.FormatUint(v, 10)
}

// formatDuration prints seconds like ofp_print_duration: milliseconds
// when exact, otherwise as many decimals as needed.
func formatDuration(sec, nsec uint32) string {
	s := strconv.FormatUint(uint64(sec), 10)
	if nsec > 0 {
		if msec := nsec / 1000000; msec*1000000 == nsec {
			s += fmt.Sprintf(".%03d", msec)
		} else {
			s += strings.TrimRight(fmt.Sprintf(".%09d", nsec), "0")
		}
	}
	return s + "s"
}

// Groups.

func runGroupMods(o *ofctlOptions, target string, texts []string, lines []int, file string, command uint16) error {
	s, err := o.session(target)
	if err != nil {
		return err
	}
	defer s.close()
	gms := make([]*translate.GroupMod, len(texts))
	for i, text := range texts {
		var g *flowtable.GroupEntry
		if err := s.parse(func(po *flowtext.ParseOptions) (err error) {
			g, err = flowtext.ParseGroup(text, po)
			return err
		}, flowtext.CmdAdd, text); err != nil {
			if file != "" {
				return fmt.Errorf("%s:%d: %w", file, lines[i], err)
			}
			return err
		}
		gms[i] = &translate.GroupMod{Command: command, Group: g}
	}
	if err := s.conn.GroupMods(gms, s.tlv, o.bundle); err != nil {
		var te *ofclient.TransactError
		if errors.As(err, &te) && te.Index < len(texts) {
			line := 0
			if lines != nil {
				line = lines[te.Index]
			}
			return flowModError(err, file, line, texts[te.Index])
		}
		return err
	}
	return nil
}

func runAddGroup(o *ofctlOptions, args []string, _ io.Writer) error {
	return runGroupMods(o, args[0], args[1:], nil, "", wire.OFPGC_ADD)
}

func runModGroup(o *ofctlOptions, args []string, _ io.Writer) error {
	return runGroupMods(o, args[0], args[1:], nil, "", wire.OFPGC_MODIFY)
}

func runAddGroups(o *ofctlOptions, args []string, _ io.Writer) error {
	data, err := readInput(args[1])
	if err != nil {
		return err
	}
	var texts []string
	var lines []int
	for i, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		texts = append(texts, l)
		lines = append(lines, i+1)
	}
	return runGroupMods(o, args[0], texts, lines, args[1], wire.OFPGC_ADD)
}

// parseGroupID reads "group_id=N" / "group_id=all" (del-groups,
// dump-groups) or a bare number.
func parseGroupID(s string) (uint32, error) {
	v := strings.TrimSpace(s)
	for _, kv := range strings.Split(v, ",") {
		if x, ok := strings.CutPrefix(strings.TrimSpace(kv), "group_id="); ok {
			v = x
			break
		}
	}
	if v == "all" || v == "ALL" {
		return flowtable.GroupAllID, nil
	}
	n, err := strconv.ParseUint(v, 0, 32)
	if err != nil || n > 0xffffff00 {
		return 0, fmt.Errorf("%q: group_id must be a number up to 4294967040 or \"all\"", s)
	}
	return uint32(n), nil
}

// groupSession parses "SWITCH [GROUP]" (GROUP defaults to all) and opens
// the session, for the group commands that take an optional group id.
func (o *ofctlOptions) groupSession(args []string) (uint32, *session, error) {
	id := uint32(flowtable.GroupAllID)
	if len(args) > 1 {
		var err error
		if id, err = parseGroupID(args[1]); err != nil {
			return 0, nil, err
		}
	}
	s, err := o.session(args[0])
	return id, s, err
}

func runDelGroups(o *ofctlOptions, args []string, _ io.Writer) error {
	id, s, err := o.groupSession(args)
	if err != nil {
		return err
	}
	defer s.close()
	gm := &translate.GroupMod{Command: wire.OFPGC_DELETE, Group: &flowtable.GroupEntry{ID: id}}
	return s.conn.GroupMods([]*translate.GroupMod{gm}, nil, o.bundle)
}

func runDumpGroups(o *ofctlOptions, args []string, w io.Writer) error {
	id, s, err := o.groupSession(args)
	if err != nil {
		return err
	}
	defer s.close()
	groups, err := s.conn.DumpGroups(id, s.tlv)
	if err != nil && s.tlv == nil {
		if t, _, terr := s.conn.TLVTable(); terr == nil {
			s.tlv = t
			groups, err = s.conn.DumpGroups(id, s.tlv)
		}
	}
	if err != nil {
		return err
	}
	if o.names {
		if err := s.loadPorts(); err != nil {
			return err
		}
	}
	name := "OFPST_GROUP_DESC"
	if s.conn.Version() == wire.OFP10 {
		name = "NXST_GROUP_DESC"
	}
	fmt.Fprintf(w, "%s reply%s (xid=%#x):\n", name, versionTag(s.conn.Version()), 2)
	po := o.printOptions(s)
	for _, g := range groups {
		fmt.Fprintf(w, " %s\n", flowtext.FormatGroup(g, po))
	}
	return nil
}

// Ports, tables, show.

// portName prints a port number as ovs-ofctl does (LOCAL, CONTROLLER...).
func portName(p uint32) string {
	switch p {
	case flowtable.PortLocal:
		return "LOCAL"
	case flowtable.PortController:
		return "CONTROLLER"
	case flowtable.PortInPort:
		return "IN_PORT"
	case flowtable.PortNormal:
		return "NORMAL"
	case flowtable.PortNone:
		return "NONE"
	}
	return strconv.FormatUint(uint64(p), 10)
}

// parsePort reads a port argument: a number or a reserved name.
func parsePort(s string) (uint32, error) {
	switch strings.ToUpper(s) {
	case "LOCAL":
		return flowtable.PortLocal, nil
	case "CONTROLLER":
		return flowtable.PortController, nil
	case "IN_PORT":
		return flowtable.PortInPort, nil
	case "NONE", "ANY":
		return flowtable.PortNone, nil
	}
	n, err := strconv.ParseUint(s, 0, 32)
	if err != nil || n >= 0xff00 {
		return 0, fmt.Errorf("%q: not a port number (1..65279) or LOCAL, CONTROLLER, IN_PORT, NONE", s)
	}
	return uint32(n), nil
}

// wirePort converts a model port number to the connection's numbering.
func wirePort(v uint8, p uint32) uint32 {
	if v == wire.OFP10 {
		return p
	}
	if p == flowtable.PortNone {
		return wire.OFPP_ANY
	}
	return translate.PortToOFP11(p)
}

// modelPort converts a wire port number to the model's.
func modelPort(v uint8, p uint32) uint32 {
	if v == wire.OFP10 {
		return p
	}
	if m, ok := translate.PortFromOFP11(p); ok {
		return m
	}
	return p
}

func runDumpPorts(o *ofctlOptions, args []string, w io.Writer) error {
	port := uint32(flowtable.PortNone)
	if len(args) > 1 {
		var err error
		if port, err = parsePort(args[1]); err != nil {
			return err
		}
	}
	s, err := o.session(args[0])
	if err != nil {
		return err
	}
	defer s.close()
	v := s.conn.Version()
	stats, err := s.conn.PortStats(wirePort(v, port))
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "OFPST_PORT reply%s (xid=%#x): %d ports\n", versionTag(v), 2, len(stats))
	for _, ps := range stats {
		name := portName(modelPort(v, ps.PortNo))
		if _, err := strconv.Atoi(name); err == nil {
			name = fmt.Sprintf("%2s", name)
		}
		fmt.Fprintf(w, "  port %s: rx pkts=%s, bytes=%s, drop=%s, errs=%s, frame=%s, over=%s, crc=%s\n", name,
			statString(ps.RxPackets), statString(ps.RxBytes), statString(ps.RxDropped), statString(ps.RxErrors),
			statString(ps.RxFrameErr), statString(ps.RxOverErr), statString(ps.RxCRCErr))
		fmt.Fprintf(w, "           tx pkts=%s, bytes=%s, drop=%s, errs=%s, coll=%s\n",
			statString(ps.TxPackets), statString(ps.TxBytes), statString(ps.TxDropped), statString(ps.TxErrors), statString(ps.Collisions))
		if v != wire.OFP10 && ps.DurationSec != ^uint32(0) {
			fmt.Fprintf(w, "           duration=%s\n", formatDuration(ps.DurationSec, ps.DurationNsec))
		}
	}
	return nil
}

func runDumpTables(o *ofctlOptions, args []string, w io.Writer) error {
	s, err := o.session(args[0])
	if err != nil {
		return err
	}
	defer s.close()
	v := s.conn.Version()
	tables, err := s.conn.TableStats()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "OFPST_TABLE reply%s (xid=%#x):", versionTag(v), 2)
	// Like ovs-ofctl, a table whose counters equal the previous table's is
	// folded into "tables A...B: ditto".
	dittoFrom := -1
	flush := func(last int) {
		switch {
		case dittoFrom < 0:
		case dittoFrom == last:
			fmt.Fprintf(w, "\n  table %d: ditto\n", dittoFrom)
		default:
			fmt.Fprintf(w, "\n  tables %d...%d: ditto\n", dittoFrom, last)
		}
		dittoFrom = -1
	}
	for i, t := range tables {
		if i > 0 {
			p := tables[i-1]
			if t.ActiveCount == p.ActiveCount && t.LookupCount == p.LookupCount && t.MatchedCount == p.MatchedCount {
				if dittoFrom < 0 {
					dittoFrom = int(t.TableID)
				}
				continue
			}
			flush(int(p.TableID))
		}
		fmt.Fprintf(w, "\n  table %d", t.TableID)
		if name := cString(t.Name[:]); v == wire.OFP10 && name != "" && name != fmt.Sprintf("table%d", t.TableID) {
			fmt.Fprintf(w, " (\"%s\")", name)
		}
		fmt.Fprintf(w, ":\n    active=%d, lookup=%d, matched=%d\n", t.ActiveCount, t.LookupCount, t.MatchedCount)
	}
	if len(tables) > 0 {
		flush(int(tables[len(tables)-1].TableID))
	} else {
		fmt.Fprintln(w)
	}
	return nil
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

func runShow(o *ofctlOptions, args []string, w io.Writer) error {
	s, err := o.session(args[0])
	if err != nil {
		return err
	}
	defer s.close()
	v := s.conn.Version()
	f, err := s.conn.Features()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "OFPT_FEATURES_REPLY%s (xid=%#x): dpid:%016x\n", versionTag(v), 2, f.DatapathID)
	fmt.Fprintf(w, "n_tables:%d, n_buffers:%d\n", f.NTables, f.NBuffers)
	fmt.Fprintf(w, "capabilities:%s\n", bitNames(f.Capabilities, capabilityNames(v)))
	ports := f.Ports
	if v == wire.OFP10 {
		fmt.Fprintf(w, "actions:%s\n", bitNames(f.Actions, actionNames10))
	} else {
		if ports, err = s.conn.Ports(); err != nil {
			return err
		}
		fmt.Fprintf(w, "OFPST_PORT_DESC reply%s (xid=%#x):\n", versionTag(v), 3)
	}
	// ovs-ofctl lists ports by number with LOCAL last.
	sort.Slice(ports, func(i, j int) bool { return modelPort(v, ports[i].PortNo) < modelPort(v, ports[j].PortNo) })
	for _, p := range ports {
		printPort(w, v, &p)
	}
	sc, err := s.conn.Config()
	if err != nil {
		return err
	}
	frags := []string{"normal", "drop", "reassemble", "nx-match"}[sc.Flags&3]
	fmt.Fprintf(w, "OFPT_GET_CONFIG_REPLY%s (xid=%#x): frags=%s miss_send_len=%d\n", versionTag(v), 4, frags, sc.MissSendLen)
	return nil
}

type bitName struct {
	bit  uint32
	name string
}

func bitNames(v uint32, names []bitName) string {
	var b strings.Builder
	for _, n := range names {
		if v&n.bit != 0 {
			b.WriteString(" " + n.name)
			v &^= n.bit
		}
	}
	if v != 0 {
		fmt.Fprintf(&b, " 0x%x", v)
	}
	if b.Len() == 0 {
		return " 0"
	}
	return b.String()
}

func capabilityNames(v uint8) []bitName {
	names := []bitName{{wire.OFPC_FLOW_STATS, "FLOW_STATS"}, {wire.OFPC_TABLE_STATS, "TABLE_STATS"}, {wire.OFPC_PORT_STATS, "PORT_STATS"}}
	if v == wire.OFP10 {
		names = append(names, bitName{1 << 3, "STP"})
	} else {
		names = append(names, bitName{wire.OFPC_GROUP_STATS, "GROUP_STATS"})
	}
	names = append(names, bitName{wire.OFPC_IP_REASM, "IP_REASM"}, bitName{wire.OFPC_QUEUE_STATS, "QUEUE_STATS"})
	if v == wire.OFP10 {
		names = append(names, bitName{wire.OFPC_ARP_MATCH_IP, "ARP_MATCH_IP"})
	} else {
		names = append(names, bitName{wire.OFPC_PORT_BLOCKED, "PORT_BLOCKED"})
	}
	if v == wire.OFP15 {
		names = append(names, bitName{1 << 9, "BUNDLES"}, bitName{1 << 10, "FLOW_MONITORING"})
	}
	return names
}

var actionNames10 = []bitName{{1 << 0, "output"}, {1 << 11, "enqueue"}, {1 << 1, "set_vlan_vid"}, {1 << 2, "set_vlan_pcp"},
	{1 << 3, "strip_vlan"}, {1 << 4, "mod_dl_src"}, {1 << 5, "mod_dl_dst"}, {1 << 6, "mod_nw_src"}, {1 << 7, "mod_nw_dst"},
	{1 << 8, "mod_nw_tos"}, {1 << 9, "mod_tp_src"}, {1 << 10, "mod_tp_dst"}}

// Port config, state and feature bits (OpenFlow 1.0 and 1.1+ layouts).
var (
	portConfigNames = []bitName{{1 << 0, "PORT_DOWN"}, {1 << 2, "NO_RECV"}, {1 << 5, "NO_FWD"}, {1 << 6, "NO_PACKET_IN"}}
	portStateNames  = []bitName{{1 << 0, "LINK_DOWN"}, {1 << 1, "BLOCKED"}, {1 << 2, "LIVE"}}
	featureNames10  = []bitName{{1 << 0, "10MB-HD"}, {1 << 1, "10MB-FD"}, {1 << 2, "100MB-HD"}, {1 << 3, "100MB-FD"},
		{1 << 4, "1GB-HD"}, {1 << 5, "1GB-FD"}, {1 << 6, "10GB-FD"}, {1 << 7, "COPPER"}, {1 << 8, "FIBER"},
		{1 << 9, "AUTO_NEG"}, {1 << 10, "AUTO_PAUSE"}, {1 << 11, "AUTO_PAUSE_ASYM"}}
	featureNames11 = []bitName{{1 << 0, "10MB-HD"}, {1 << 1, "10MB-FD"}, {1 << 2, "100MB-HD"}, {1 << 3, "100MB-FD"},
		{1 << 4, "1GB-HD"}, {1 << 5, "1GB-FD"}, {1 << 6, "10GB-FD"}, {1 << 7, "40GB-FD"}, {1 << 8, "100GB-FD"},
		{1 << 9, "1TB-FD"}, {1 << 10, "OTHER"}, {1 << 11, "COPPER"}, {1 << 12, "FIBER"}, {1 << 13, "AUTO_NEG"},
		{1 << 14, "AUTO_PAUSE"}, {1 << 15, "AUTO_PAUSE_ASYM"}}
)

// speedMbps derives a port's speed from its current features when the
// switch gives no speed field (OpenFlow 1.0).
func speedMbps(v uint8, curr uint32) uint32 {
	speeds := []struct{ bit, mbps uint32 }{{1 << 6, 10000}, {1 << 5, 1000}, {1 << 4, 1000}, {1 << 3, 100}, {1 << 2, 100}, {1 << 1, 10}, {1 << 0, 10}}
	if v != wire.OFP10 {
		speeds = append([]struct{ bit, mbps uint32 }{{1 << 9, 1000000}, {1 << 8, 100000}, {1 << 7, 40000}}, speeds...)
	}
	for _, s := range speeds {
		if curr&s.bit != 0 {
			return s.mbps
		}
	}
	return 0
}

func printPort(w io.Writer, v uint8, p *wire.Port) {
	fmt.Fprintf(w, " %s(%s): addr:%s\n", portName(modelPort(v, p.PortNo)), cString(p.Name[:]), net.HardwareAddr(p.HWAddr[:]))
	feat := featureNames11
	if v == wire.OFP10 {
		feat = featureNames10
	}
	state := portStateNames
	if v == wire.OFP10 {
		state = state[:1]
	}
	fmt.Fprintf(w, "     config:    %s\n", bitNames(p.Config, portConfigNames))
	fmt.Fprintf(w, "     state:     %s\n", bitNames(p.State, state))
	if p.Curr != 0 {
		fmt.Fprintf(w, "     current:   %s\n", bitNames(p.Curr, feat))
	}
	if p.Advertised != 0 {
		fmt.Fprintf(w, "     advertised:%s\n", bitNames(p.Advertised, feat))
	}
	if p.Supported != 0 {
		fmt.Fprintf(w, "     supported: %s\n", bitNames(p.Supported, feat))
	}
	if p.Peer != 0 {
		fmt.Fprintf(w, "     peer:      %s\n", bitNames(p.Peer, feat))
	}
	cur, max := p.CurrSpeed/1000, p.MaxSpeed/1000
	if v == wire.OFP10 || cur == 0 {
		cur = speedMbps(v, p.Curr)
	}
	fmt.Fprintf(w, "     speed: %d Mbps now, %d Mbps max\n", cur, max)
}

// Packet-out.

// packetOutArgs parses both packet-out syntaxes: IN_PORT ACTIONS PACKET
// or one "in_port=N packet=HEX actions=..." string.
func packetOutArgs(args []string) (inPort, actions, packet string, err error) {
	if len(args) == 3 {
		return args[0], args[1], args[2], nil
	}
	if len(args) != 1 {
		return "", "", "", errors.New("packet-out takes IN_PORT ACTIONS PACKET_HEX or one \"in_port=N packet=HEX actions=...\" argument")
	}
	s := args[0]
	i := strings.Index(s, "actions=")
	if i < 0 {
		return "", "", "", fmt.Errorf("%q: missing actions=", s)
	}
	actions = s[i+len("actions="):]
	for _, kv := range strings.FieldsFunc(s[:i], func(r rune) bool { return r == ',' || r == ' ' }) {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "in_port":
			inPort = v
		case "packet":
			packet = v
		default:
			return "", "", "", fmt.Errorf("%q: unknown packet-out keyword %q (in_port, packet, actions)", s, k)
		}
	}
	if packet == "" {
		return "", "", "", fmt.Errorf("%q: missing packet=", s)
	}
	if inPort == "" {
		inPort = "NONE"
	}
	return inPort, actions, packet, nil
}

func runPacketOut(o *ofctlOptions, args []string, _ io.Writer) error {
	inStr, actStr, pktStr, err := packetOutArgs(args[1:])
	if err != nil {
		return err
	}
	frame, err := hex.DecodeString(strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\n' {
			return -1
		}
		return r
	}, pktStr))
	if err != nil {
		return fmt.Errorf("packet %q: not hexadecimal: %w", pktStr, err)
	}
	s, err := o.session(args[0])
	if err != nil {
		return err
	}
	defer s.close()
	inPort, err := parsePort(inStr)
	if err != nil {
		if perr := s.loadPorts(); perr != nil {
			return err
		}
		p, ok := s.ports[inStr]
		if !ok {
			return fmt.Errorf("in_port %q: %w", inStr, err)
		}
		inPort = p
	}
	var fm *flowtext.FlowMod
	text := "actions=" + actStr
	if err := s.parse(func(po *flowtext.ParseOptions) (err error) {
		fm, err = flowtext.ParseFlow(text, po)
		return err
	}, flowtext.CmdAdd, text); err != nil {
		return err
	}
	if err := s.conn.PacketOut(frame, inPort, fm.Actions, s.tlv); err != nil {
		return fmt.Errorf("packet-out: %w", err)
	}
	return nil
}

// TLV maps.

func runAddTLVMap(o *ofctlOptions, args []string, _ io.Writer) error {
	return tlvMod(o, args, 0)
}

func runDelTLVMap(o *ofctlOptions, args []string, _ io.Writer) error {
	if len(args) == 1 {
		return tlvMod(o, args, 2) // NXTTMC_CLEAR
	}
	return tlvMod(o, args, 1)
}

func tlvMod(o *ofctlOptions, args []string, command uint16) error {
	var ms []flowtable.TLVMapping
	if len(args) > 1 {
		var err error
		if ms, err = flowtable.ParseTLVMappings(args[1]); err != nil {
			return err
		}
	}
	c, err := o.dial(args[0])
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.TLVTableMod(command, ms); err != nil {
		return fmt.Errorf("NXT_TLV_TABLE_MOD: %w", err)
	}
	return nil
}

func runDumpTLVMap(o *ofctlOptions, args []string, w io.Writer) error {
	c, err := o.dial(args[0])
	if err != nil {
		return err
	}
	defer c.Close()
	_, r, err := c.TLVTable()
	if err != nil {
		return err
	}
	used := 0
	for _, m := range r.Maps {
		used += int(m.OptLen)
	}
	fmt.Fprintf(w, "NXT_TLV_TABLE_REPLY%s (xid=%#x):\n", versionTag(c.Version()), 2)
	fmt.Fprintf(w, " max option space=%d max fields=%d\n allocated option space=%d\n\n", r.MaxOptionSpace, r.MaxFields, used)
	fmt.Fprintf(w, " mapping table:\n  class  type  length  match field\n ------  ----  ------  --------------")
	for _, m := range r.Maps {
		fmt.Fprintf(w, "\n %#6x  %#4x  %6d  tun_metadata%d", m.OptClass, m.OptType, m.OptLen, m.Index)
	}
	fmt.Fprintln(w)
	return nil
}
