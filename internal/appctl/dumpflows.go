package appctl

import (
	"crypto/sha256"
	"fmt"
	"sort"
	"strings"

	"github.com/govs-project/govs/datapath"
	"github.com/govs-project/govs/datapath/flowcache"
	"github.com/govs-project/govs/internal/vswitchd"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// dpif/dump-flows and dpctl/dump-flows list the megaflows of the port
// goroutines' caches as OVS lists those of its userspace datapath
// (ofproto/ofproto-dpif.c, lib/dpctl.c): key and mask as odp_flow_format,
// "packets:N, bytes:N, used:X.XXXs|never", then the datapath actions.
// Port numbers are govs's OpenFlow numbers (govs has no second
// numbering); the TCP flags seen are not tracked (no "flags:").

// dumpFlowsOptions are the options both commands share.
type dumpFlowsOptions struct {
	verbose bool // -m: the ufid and "dp:ovs"
	names   bool // port names instead of numbers
}

func (a *App) registerDumpFlows() {
	a.Server.Register("dpif/dump-flows", "[-m] [--names | --no-names] bridge", 1, 3, a.dpifDumpFlows)
	a.Server.Register("dpctl/dump-flows", "[-m] [--names] [dp] [filter=..] [type=..] [pmd=..]", 0, 6, a.dpctlDumpFlows)
}

func (a *App) dpifDumpFlows(args []string) (string, error) {
	dp, ok := a.bridge(args[len(args)-1])
	if !ok {
		return "", fmt.Errorf("no such bridge")
	}
	var o dumpFlowsOptions
	setNames := false
	for _, x := range args[:len(args)-1] {
		switch x {
		case "-m":
			o.verbose = true
		case "--names":
			o.names, setNames = true, true
		case "--no-names":
			o.names, setNames = false, true
		}
	}
	if !setNames {
		o.names = o.verbose
	}
	var b strings.Builder
	writeFlows(&b, dp, o)
	return b.String(), nil
}

func (a *App) dpctlDumpFlows(args []string) (string, error) {
	var o dumpFlowsOptions
	for _, x := range args {
		switch {
		case x == "-m" || x == "--more":
			o.verbose = true
		case x == "--names":
			o.names = true
		case x == "--no-names":
			o.names = false
		case vswitchd.IsDatapathName(x):
		case strings.HasPrefix(x, "type="):
			if v := strings.TrimPrefix(x, "type="); v != "all" && v != "ovs" {
				return "", fmt.Errorf("Failed to parse type (%s)", v)
			}
		case strings.HasPrefix(x, "filter="), strings.HasPrefix(x, "pmd="):
			return "", fmt.Errorf("%s: govs does not filter dumps; dump all and select the lines", x)
		default:
			return "", fmt.Errorf("ovs-vswitchd: opening datapath %s failed (No such file or directory)", x)
		}
	}
	var b strings.Builder
	dps := a.D.BridgeDatapaths()
	names := make([]string, 0, len(dps))
	for n := range dps {
		names = append(names, n)
	}
	sort.Strings(names)
	header := false
	for _, n := range names {
		if !header && hasFlows(dps[n]) {
			b.WriteString("flow-dump from the main thread:\n")
			header = true
		}
		writeFlows(&b, dps[n], o)
	}
	return b.String(), nil
}

func hasFlows(dp *datapath.Bridge) bool {
	_, n := dp.CacheStats()
	return n > 0
}

// writeFlows prints the megaflows of one bridge, sorted by input port
// and then by text (OVS's order is its hash tables').
func writeFlows(b *strings.Builder, dp *datapath.Bridge, o dumpFlowsOptions) {
	flows, now := dp.DumpFlows()
	port := func(p uint32) string { return fmt.Sprint(odpPort(p)) }
	if o.names {
		port = func(p uint32) string {
			if pi, ok := dp.Port(p); ok {
				return pi.Name
			}
			return fmt.Sprint(odpPort(p))
		}
	}
	type line struct {
		in   uint32
		text string
	}
	lines := make([]line, 0, len(flows))
	for i := range flows {
		f := &flows[i]
		var s strings.Builder
		if o.verbose {
			s.WriteString(ufid(f) + ", ")
		}
		s.WriteString(flowtext.DatapathFlow(&f.Value, &f.Mask, port))
		fmt.Fprintf(&s, ", packets:%d, bytes:%d, used:", f.Packets, f.Bytes)
		if f.Used == 0 {
			s.WriteString("never")
		} else {
			fmt.Fprintf(&s, "%.3fs", float64(max(0, now-f.Used)/1e6)/1000)
		}
		if o.verbose {
			s.WriteString(", dp:ovs")
		}
		s.WriteString(", actions:" + flowtext.DatapathActions(&f.Value, f.Ops, port))
		lines = append(lines, line{f.Value.InPort(), s.String()})
	}
	sort.Slice(lines, func(i, j int) bool {
		if lines[i].in != lines[j].in {
			return lines[i].in < lines[j].in
		}
		return lines[i].text < lines[j].text
	})
	for _, l := range lines {
		b.WriteString(l.text + "\n")
	}
}

// ufid names a megaflow as OVS's odp_format_ufid does ("ufid:" and a
// UUID); govs derives it from the mask and the masked key, so the same
// megaflow has the same ufid in every loop and dump.
func ufid(f *flowcache.DumpEntry) string {
	h := sha256.New()
	h.Write(f.Mask[:])
	h.Write(f.Value[:])
	s := h.Sum(nil)
	return fmt.Sprintf("ufid:%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16])
}
