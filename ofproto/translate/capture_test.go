package translate_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/flowtext"
	"github.com/govs-project/govs/ofproto/translate"
	"github.com/govs-project/govs/ofproto/wire"
)

// captureTLV is the mapping the capture switch had (t1_02/t1b_02
// add-tlv-map), the same as the seed files' "# tlv-map:" header.
func captureTLV(t testing.TB) *flowtable.TLVMap {
	tlv := flowtable.NewTLVMap()
	ms, err := flowtable.ParseTLVMappings("{class=0x104,type=0x80,len=4}->tun_metadata0")
	if err != nil {
		t.Fatal(err)
	}
	if err := tlv.Add(ms...); err != nil {
		t.Fatal(err)
	}
	return tlv
}

// statsRE removes what dump-flows prints only with statistics.
var statsRE = regexp.MustCompile(`(duration=[0-9.]+s|n_packets=\d+|n_bytes=\d+|idle_age=\d+|hard_age=\d+|cookie=0x0|table=0), `)

// dumpLines reads the flows an ovs-ofctl dump-flows command file printed,
// in the --no-stats form.
func dumpLines(t testing.TB, cmdFile string) []string {
	b, err := os.ReadFile(filepath.Join(capturesDir, cmdFile))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, " cookie=") {
			continue
		}
		out = append(out, statsRE.ReplaceAllString(strings.TrimPrefix(l, " "), ""))
	}
	if len(out) == 0 {
		t.Fatalf("%s: no flows", cmdFile)
	}
	return out
}

// flowModsOf decodes the client flow-mods (OFPT_FLOW_MOD and NXT_FLOW_MOD)
// of a capture and translates them.
func flowModsOf(t *testing.T, pcap string, tlv *flowtable.TLVMap) ([]*translate.FlowMod, uint8) {
	var out []*translate.FlowMod
	var version uint8
	var d wire.Decoder
	for i, m := range readCapture(t, filepath.Join(capturesDir, pcap)) {
		if !m.fromClient || (m.h.Type != wire.OFPT_FLOW_MOD && m.h.Type != wire.OFPT_EXPERIMENTER) {
			continue
		}
		d.Reset()
		msg, err := d.DecodeMessage(m.h, m.raw[wire.HeaderLen:])
		if err != nil {
			t.Errorf("msg %d: wire decode: %v", i, err)
			continue
		}
		wfm, ok := msg.(*wire.FlowMod)
		if !ok {
			continue
		}
		fm, err := translate.FlowModFromWire(wfm, m.h.Version, tlv)
		if err != nil {
			t.Errorf("msg %d: translate: %v", i, err)
			continue
		}
		version = m.h.Version
		out = append(out, fm)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no flow-mods", pcap)
	}
	return out, version
}

// TestCaptureAddFlows decodes the flow-mods real ovs-ofctl sent for
// add-flows of the Antrea seed flows (OpenFlow 1.3, 1.0 and 1.5), prints
// them, and compares with what ovs-ofctl dump-flows printed right after
// against the real switch in the same version. Every translated flow must
// be in the dump; the dump may hold a few flows added by earlier commands.
func TestCaptureAddFlows(t *testing.T) {
	for _, c := range []struct {
		add, dump string
		version   flowtext.Version
	}{
		{"t1_08_add_flows_antrea.pcap.gz", "t1_09_dump_flows.cmd.txt", flowtext.OF13},
		{"t1b_04_of10_add_flows.pcap.gz", "t1b_05_of10_dump_flows.cmd.txt", flowtext.OF10},
		{"t1c_02_of15_add_flows.pcap.gz", "t1c_04_of15_dump_flows_nonames.cmd.txt", flowtext.OF15},
	} {
		t.Run(c.add, func(t *testing.T) {
			tlv := captureTLV(t)
			fms, version := flowModsOf(t, c.add, tlv)
			if version != uint8(c.version) {
				t.Fatalf("capture version %#x, want %#x", version, c.version)
			}
			po := &flowtext.PrintOptions{Version: c.version, TLV: tlv}
			table := map[flowKey]string{}
			for _, fm := range fms {
				if fm.Command != uint8(wire.OFPFC_ADD) {
					t.Errorf("command %d, want add", fm.Command)
				}
				table[flowKey{fm.Flow.Table, fm.Flow.Priority, fm.Flow.Match}] = flowtext.FormatFlow(&fm.Flow, po)
			}
			dump := map[string]bool{}
			for _, l := range dumpLines(t, c.dump) {
				dump[l] = true
			}
			found := 0
			for _, l := range table {
				if !dump[l] {
					t.Errorf("decoded flow-mod prints as\n  %s\nwhich the switch's dump does not have", l)
					continue
				}
				found++
			}
			t.Logf("%d flow-mods, %d distinct flows, all %d found among the %d dumped flows", len(fms), len(table), found, len(dump))
			if len(dump) != found {
				t.Errorf("%d dumped flows came from no decoded flow-mod", len(dump)-found)
			}
		})
	}
}

// TestCaptureDumpFlows decodes the flow stats replies real OVS sent for
// dump-flows (OVS's own encoding of every field and action) and checks
// they print as ovs-ofctl printed them.
func TestCaptureDumpFlows(t *testing.T) {
	for _, c := range []struct {
		pcap    string
		version flowtext.Version
	}{
		{"t1_09_dump_flows", flowtext.OF13},
		{"t1b_05_of10_dump_flows", flowtext.OF10},
		{"t1c_04_of15_dump_flows_nonames", flowtext.OF15},
	} {
		t.Run(c.pcap, func(t *testing.T) {
			tlv := captureTLV(t)
			po := &flowtext.PrintOptions{Version: c.version, TLV: tlv}
			var got []string
			var d wire.Decoder
			for i, m := range readCapture(t, filepath.Join(capturesDir, c.pcap+".pcap.gz")) {
				if m.fromClient {
					continue
				}
				d.Reset()
				msg, err := d.DecodeMessage(m.h, m.raw[wire.HeaderLen:])
				if err != nil {
					continue // messages the wire codec does not model are not our concern here
				}
				mp, ok := msg.(*wire.Multipart)
				if !ok || !mp.Reply || mp.Flows == nil {
					continue
				}
				for j := range mp.Flows {
					fs, err := translate.FlowStatsFromWire(&mp.Flows[j], m.h.Version, tlv)
					if err != nil {
						t.Errorf("msg %d flow %d: %v", i, j, err)
						continue
					}
					got = append(got, flowtext.FormatFlow(fs.Flow, po))
				}
			}
			compareSets(t, got, dumpLines(t, c.pcap+".cmd.txt"))
		})
	}
}
