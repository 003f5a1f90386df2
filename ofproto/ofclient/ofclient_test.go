package ofclient

import (
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/translate"
	"github.com/govs-project/govs/ofproto/wire"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in, rundir string
		want       Target
		err        string
	}{
		{"br-int", "/var/run/govs", Target{"unix", "/var/run/govs/br-int.mgmt"}, ""},
		{"br0", "/tmp/x/", Target{"unix", "/tmp/x/br0.mgmt"}, ""},
		{"unix:/run/openvswitch/br-int.mgmt", "", Target{"unix", "/run/openvswitch/br-int.mgmt"}, ""},
		{"tcp:127.0.0.1:6653", "", Target{"tcp", "127.0.0.1:6653"}, ""},
		{"tcp:[::1]:6633", "", Target{"tcp", "[::1]:6633"}, ""},
		{"tcp:127.0.0.1", "", Target{"tcp", "127.0.0.1:6653"}, ""},
		{"", "", Target{}, "empty target"},
		{"unix:", "", Target{}, "empty socket path"},
		{"tcp::6653", "", Target{}, "want tcp:IP:PORT"},
		{"ssl:1.2.3.4:6653", "", Target{}, "not a bridge name"},
		{"a/b", "", Target{}, "not a bridge name"},
	}
	for _, tc := range tests {
		got, err := ParseTarget(tc.in, tc.rundir)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseTarget(%q) = %v, %v; want error containing %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseTarget(%q, %q) = %v, %v; want %v", tc.in, tc.rundir, got, err, tc.want)
		}
	}
}

// fakeSwitch serves one connection: it sends a hello allowing versions,
// then answers each request with handle's messages (same xid).
type fakeSwitch struct {
	nc       net.Conn
	versions uint32
	handle   func(h wire.Header, m wire.Message) []wire.Message
	got      []wire.Message
	done     chan error
}

func startFake(t *testing.T, version uint8, versions uint32, handle func(h wire.Header, m wire.Message) []wire.Message) (*Conn, *fakeSwitch, error) {
	t.Helper()
	cn, sn := net.Pipe()
	f := &fakeSwitch{nc: sn, versions: versions, handle: handle, done: make(chan error, 1)}
	t.Cleanup(func() { cn.Close(); sn.Close() })
	go f.serve()
	c, err := NewConn(cn, version)
	return c, f, err
}

func (f *fakeSwitch) serve() {
	buf := make([]byte, wire.MaxMessageLen)
	hello, _ := wire.EncodeMessage(nil, wire.HelloVersion(f.versions), 1, wire.NewHello(f.versions))
	// Read the client's hello first (net.Pipe is synchronous).
	if _, _, err := wire.ReadMessage(f.nc, buf); err != nil {
		f.done <- err
		return
	}
	if _, err := f.nc.Write(hello); err != nil {
		f.done <- err
		return
	}
	// Replies go out from their own goroutine: net.Pipe is unbuffered and
	// the client may still be writing (a request and its barrier).
	out := make(chan []byte, 1024)
	defer close(out)
	go func() {
		for b := range out {
			if _, err := f.nc.Write(b); err != nil {
				return
			}
		}
	}()
	for {
		h, body, err := wire.ReadMessage(f.nc, buf)
		if err != nil {
			f.done <- err
			return
		}
		m, err := wire.DecodeMessage(h, append([]byte(nil), body...))
		if err != nil {
			f.done <- err
			return
		}
		f.got = append(f.got, m)
		for _, r := range f.handle(h, m) {
			b, err := wire.EncodeMessage(nil, h.Version, h.Xid, r)
			if err != nil {
				f.done <- err
				return
			}
			out <- b
		}
	}
}

// barrierOnly answers barriers and nothing else.
func barrierOnly(h wire.Header, m wire.Message) []wire.Message {
	if _, ok := m.(*wire.BarrierRequest); ok {
		return []wire.Message{&wire.BarrierReply{}}
	}
	return nil
}

func TestNegotiation(t *testing.T) {
	tests := []struct {
		name     string
		version  uint8
		switchVs uint32
		ok       bool
	}{
		{"1.3 against 1.0+1.3+1.5", wire.OFP13, wire.VersionBitmap(1, 4, 6), true},
		{"1.0 against 1.0+1.3+1.5", wire.OFP10, wire.VersionBitmap(1, 4, 6), true},
		{"1.5 against 1.0+1.5", wire.OFP15, wire.VersionBitmap(1, 6), true},
		{"1.3 against 1.0 only", wire.OFP13, wire.VersionBitmap(1), false},
		{"1.5 against 1.0+1.3", wire.OFP15, wire.VersionBitmap(1, 4), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := startFake(t, tc.version, tc.switchVs, barrierOnly)
			if tc.ok != (err == nil) {
				t.Fatalf("NewConn: %v, want ok=%v", err, tc.ok)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "version negotiation failed") {
					t.Errorf("error %q does not say negotiation failed", err)
				}
				return
			}
			if c.Version() != tc.version {
				t.Errorf("version %#x, want %#x", c.Version(), tc.version)
			}
			if err := c.Barrier(); err != nil {
				t.Errorf("barrier: %v", err)
			}
		})
	}
	if _, err := NewConn(nil, 2); err == nil {
		t.Errorf("OpenFlow 1.1 accepted")
	}
}

// TestTransactErrors: the failing message's index and the OVS name of the
// error it got (standard, and Nicira vendor errors in 1.0 and 1.3+).
func TestTransactErrors(t *testing.T) {
	tests := []struct {
		version uint8
		sym     wire.ErrorCode
	}{
		{wire.OFP13, wire.OFPBAC_BAD_OUT_GROUP},
		{wire.OFP15, wire.OFPBAC_BAD_OUT_GROUP},
		{wire.OFP10, wire.OFPBAC_BAD_OUT_PORT},
		{wire.OFP13, wire.NXFMFC_INVALID_TLV_FIELD},
		{wire.OFP10, wire.NXFMFC_INVALID_TLV_FIELD},
	}
	for _, tc := range tests {
		t.Run(tc.sym.String()+"/"+map[uint8]string{1: "OF10", 4: "OF13", 6: "OF15"}[tc.version], func(t *testing.T) {
			n := 0
			c, _, err := startFake(t, tc.version, wire.VersionBitmap(1, 4, 6), func(h wire.Header, m wire.Message) []wire.Message {
				if _, ok := m.(*wire.BarrierRequest); ok {
					return []wire.Message{&wire.BarrierReply{}}
				}
				n++
				if n == 3 {
					return []wire.Message{wire.ErrorMsgFor(wire.NewError(h.Version, tc.sym), nil)}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			msgs := []wire.Message{&wire.EchoRequest{}, &wire.EchoRequest{}, &wire.EchoRequest{}, &wire.EchoRequest{}}
			err = c.Transact(msgs...)
			var te *TransactError
			if !errors.As(err, &te) || te.Index != 2 {
				t.Fatalf("Transact: %v, want the third message to fail", err)
			}
			var oe *Error
			if !errors.As(err, &oe) || oe.Name() != tc.sym.String() || !strings.Contains(err.Error(), tc.sym.String()) {
				t.Errorf("error %v does not name %s", err, tc.sym)
			}
			if !errors.Is(err, wire.NewError(tc.version, tc.sym)) {
				t.Errorf("errors.Is(%v, %s) is false", err, tc.sym)
			}
			// The connection is still usable.
			if err := c.Barrier(); err != nil {
				t.Errorf("barrier after an error: %v", err)
			}
		})
	}
}

// TestMultipartMore: replies are collected until one lacks the MORE flag;
// unrelated messages in between (echo requests) are handled.
func TestMultipartMore(t *testing.T) {
	c, _, err := startFake(t, wire.OFP13, wire.VersionBitmap(4), func(h wire.Header, m wire.Message) []wire.Message {
		req, ok := m.(*wire.Multipart)
		if !ok || req.Type != wire.OFPMP_TABLE {
			return nil
		}
		var out []wire.Message
		for i := 0; i < 3; i++ {
			r := &wire.Multipart{Reply: true, Type: wire.OFPMP_TABLE, Tables: []wire.TableStats{{TableID: uint8(i), ActiveCount: uint32(i)}}}
			if i < 2 {
				r.Flags = wire.OFPMPF_REPLY_MORE
			}
			out = append(out, r)
		}
		return out
	})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := c.TableStats()
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 3 || ts[2].TableID != 2 || ts[2].ActiveCount != 2 {
		t.Errorf("tables %+v, want 3 tables from 3 parts", ts)
	}
}

func flowMod(table uint8, cmd uint8) *translate.FlowMod {
	fm := &translate.FlowMod{Command: cmd, OutPort: flowtable.PortNone, OutGroup: translate.GroupAny, BufferID: wire.OFP_NO_BUFFER}
	fm.Flow.Table, fm.Flow.Priority = table, 100
	return fm
}

// TestFlowModsOF10: in OpenFlow 1.0 the flow format is set to NXM first,
// and the table-id extension enabled only when a table other than 0 is
// used; without it the command has no table byte.
func TestFlowModsOF10(t *testing.T) {
	tests := []struct {
		name    string
		fms     []*translate.FlowMod
		wantTID bool
		cmds    []uint16
	}{
		{"table 0", []*translate.FlowMod{flowMod(0, 0)}, false, []uint16{0}},
		{"delete all tables", []*translate.FlowMod{flowMod(translate.TableAll, 3)}, false, []uint16{3}},
		{"table 10", []*translate.FlowMod{flowMod(0, 0), flowMod(10, 0)}, true, []uint16{0, 10<<8 | 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, f, err := startFake(t, wire.OFP10, wire.VersionBitmap(1), barrierOnly)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.FlowMods(tc.fms, nil, false); err != nil {
				t.Fatal(err)
			}
			if err := c.Barrier(); err != nil { // the fake has seen everything
				t.Fatal(err)
			}
			var sff, tid bool
			var cmds []uint16
			for _, m := range f.got {
				switch m := m.(type) {
				case *wire.NXSetFlowFormat:
					sff = m.Format == wire.NXFF_NXM && len(cmds) == 0
				case *wire.NXFlowModTableID:
					tid = m.Set == 1 && len(cmds) == 0
				case *wire.FlowMod:
					cmds = append(cmds, m.Command)
				}
			}
			if !sff || tid != tc.wantTID {
				t.Errorf("set_flow_format(nxm) first: %v, table id extension: %v (want %v)", sff, tid, tc.wantTID)
			}
			if len(cmds) != len(tc.cmds) {
				t.Fatalf("flow-mod commands %x, want %x", cmds, tc.cmds)
			}
			for i := range cmds {
				if cmds[i] != tc.cmds[i] {
					t.Errorf("flow-mod commands %x, want %x", cmds, tc.cmds)
				}
			}
		})
	}
}

// TestBundle: open (ATOMIC|ORDERED), adds whose inner xid is the outer
// one, commit; a rejected add discards the bundle and names the message;
// bundles need 1.3+.
func TestBundle(t *testing.T) {
	for _, v := range []uint8{wire.OFP13, wire.OFP15} {
		for _, failAt := range []int{-1, 1} {
			adds := 0
			c, f, err := startFake(t, v, wire.VersionBitmap(v), func(h wire.Header, m wire.Message) []wire.Message {
				switch m := m.(type) {
				case *wire.BarrierRequest:
					return []wire.Message{&wire.BarrierReply{}}
				case *wire.BundleControl:
					return []wire.Message{&wire.BundleControl{ONF: m.ONF, BundleID: m.BundleID, Type: m.Type + 1, Flags: m.Flags}}
				case *wire.BundleAdd:
					if m.InnerHeader.Xid != h.Xid {
						return []wire.Message{wire.ErrorMsgFor(wire.NewError(h.Version, wire.OFPBFC_MSG_BAD_XID), nil)}
					}
					adds++
					if adds-1 == failAt {
						return []wire.Message{wire.ErrorMsgFor(wire.NewError(h.Version, wire.OFPBAC_BAD_OUT_GROUP), nil)}
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			err = c.FlowMods([]*translate.FlowMod{flowMod(0, 0), flowMod(1, 0), flowMod(2, 0)}, nil, true)
			var types []uint16
			for _, m := range f.got {
				if bc, ok := m.(*wire.BundleControl); ok {
					if bc.Flags != wire.OFPBF_ATOMIC|wire.OFPBF_ORDERED || bc.ONF != (v == wire.OFP13) {
						t.Errorf("bundle control %+v", bc)
					}
					types = append(types, bc.Type)
				}
			}
			if failAt < 0 {
				if err != nil || len(types) != 2 || types[1] != wire.OFPBCT_COMMIT_REQUEST || adds != 3 {
					t.Errorf("v%d: bundle: %v, controls %v, %d adds", v, err, types, adds)
				}
				continue
			}
			var te *TransactError
			if !errors.As(err, &te) || te.Index != failAt || !strings.Contains(err.Error(), "OFPBAC_BAD_OUT_GROUP") {
				t.Errorf("v%d: bundle with a bad message: %v", v, err)
			}
			if len(types) != 2 || types[1] != wire.OFPBCT_DISCARD_REQUEST {
				t.Errorf("v%d: a failed bundle is not discarded: controls %v", v, types)
			}
		}
	}
	c, _, err := startFake(t, wire.OFP10, wire.VersionBitmap(1), barrierOnly)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Bundle(&wire.BarrierRequest{}); err == nil {
		t.Errorf("bundle accepted in OpenFlow 1.0")
	}
}

func TestDialMissingSocket(t *testing.T) {
	_, err := Dial(Target{"unix", filepath.Join(t.TempDir(), "nope.mgmt")}, wire.OFP13)
	if err == nil || !strings.Contains(err.Error(), "nope.mgmt") {
		t.Errorf("Dial of a missing socket: %v", err)
	}
}

func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"br-int", "unix:/x", "tcp:1.2.3.4:5", "tcp:[::1]", "tcp:", "a:b:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tg, err := ParseTarget(s, "/run")
		if err == nil && (tg.Network != "unix" && tg.Network != "tcp" || tg.Address == "") {
			t.Errorf("ParseTarget(%q) = %+v without error", s, tg)
		}
	})
}
