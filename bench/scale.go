package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/govs-project/govs/bench/antreagen"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/ovstest"
	"github.com/govs-project/govs/internal/vswitchd"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// The "antrea-scale" scenarios connect two pods of a generated Antrea node
// at scale (bench/antreagen's default size), so that every new connection's
// first packets take the slow path through ~119k flows: the connection
// rate and the megaflow cache counters show what the classifier costs.

var (
	scaleOnce sync.Once
	scalePl   *benchPipeline
	scaleErr  error
)

// scalePipeline generates the node (once per run) and picks its two pods.
func scalePipeline() (*benchPipeline, error) {
	scaleOnce.Do(func() {
		gen := antreagen.Generate(antreagen.Default())
		client, server, err := scalePair(gen)
		if err != nil {
			scaleErr = err
			return
		}
		scalePl = &benchPipeline{client: client, server: server,
			load: func(target, dir string) error { return loadScale(target, dir, gen) }}
	})
	return scalePl, scaleErr
}

// loadScale installs the generated node with the real ovs-ofctl in
// OpenFlow 1.5, as Antrea does: groups first, then the flows in one bundle.
func loadScale(target, dir string, gen *antreagen.Pipeline) error {
	groups, flows := filepath.Join(dir, "scale.groups"), filepath.Join(dir, "scale.flows")
	if err := os.WriteFile(groups, []byte(gen.Groups), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(flows, []byte(gen.Flows), 0o644); err != nil {
		return err
	}
	if _, err := run("ovs-ofctl", "-O", "OpenFlow15", "del-flows", target); err != nil {
		return fmt.Errorf("del-flows: %w", err)
	}
	if _, err := run("ovs-ofctl", "-O", "OpenFlow15", "add-groups", target, groups); err != nil {
		return fmt.Errorf("add-groups: %w", err)
	}
	if _, err := run("ovs-ofctl", "-O", "OpenFlow15", "--bundle", "add-flows", target, flows); err != nil {
		return fmt.Errorf("add-flows: %w", err)
	}
	return nil
}

// pairCT marks every packet +trk plus new or established.
type pairCT struct{ state uint32 }

func (c *pairCT) Execute(pkt *flowtable.Packet, req *flowtable.CTRequest) {
	pkt.Key.SetCtState(flowtable.CtStateTrk | c.state)
	pkt.Key.SetCtZone(req.Zone)
}

type pairSink struct{ ports []uint32 }

func (s *pairSink) Output(port uint32, _ *flowtable.Packet)             { s.ports = append(s.ports, port) }
func (s *pairSink) PacketIn(_ *flowtable.Packet, _ *flowtable.PacketIn) {}

// scalePair finds two local pods such that the node's pipeline delivers
// a TCP SYN from the client to the server's port tcpPort (allowed by an
// ingress rule, the client not isolated for egress) and the established
// replies back: it walks candidates through the pipeline in memory.
func scalePair(gen *antreagen.Pipeline) (client, server podSpec, err error) {
	p := flowtable.NewPipeline()
	if err := flowtext.Load(p, gen.Text(), nil); err != nil {
		return client, server, fmt.Errorf("load the generated node: %w", err)
	}
	ct := &pairCT{}
	p.Conntrack = ct
	walk := func(from, to antreagen.Pod, state uint32, sport, dport uint16) bool {
		ct.state = state
		var k flowtable.Key
		k.SetEthSrc(from.MAC)
		k.SetEthDst(to.MAC)
		k.SetEthType(flowtable.EthTypeIPv4)
		k.SetNwProto(flowtable.IPProtoTCP)
		flowtable.FieldIPv4Src.SetUint64(&k, uint64(from.IP))
		flowtable.FieldIPv4Dst.SetUint64(&k, uint64(to.IP))
		flowtable.FieldTCPSrc.SetUint64(&k, uint64(sport))
		flowtable.FieldTCPDst.SetUint64(&k, uint64(dport))
		flowtable.FieldIPTTL.SetUint64(&k, 64)
		var pkt flowtable.Packet
		pkt.Key.SetInPort(from.Port)
		if err := pkt.Extract(flowtable.BuildFrame(&k, 0)); err != nil {
			return false
		}
		sink := &pairSink{}
		p.Run(&pkt, sink, nil)
		return len(sink.ports) == 1 && sink.ports[0] == to.Port
	}
	byIP := map[uint32]antreagen.Pod{}
	for _, pod := range gen.Pods {
		byIP[pod.IP] = pod
	}
	for _, r := range gen.Rules {
		if !r.Ingress || r.Proto != flowtable.IPProtoTCP || !slicesContains(r.Ports, tcpPort) {
			continue
		}
		srv := gen.Pods[r.Local[0]]
		for _, peer := range r.Peers {
			cli, ok := byIP[peer]
			if !ok || cli.IP == srv.IP {
				continue
			}
			if walk(cli, srv, flowtable.CtStateNew, 40000, tcpPort) && walk(srv, cli, flowtable.CtStateEst, tcpPort, 40000) &&
				walk(cli, srv, flowtable.CtStateEst, 40000, tcpPort) {
				spec := func(role string, pod antreagen.Pod) podSpec {
					return podSpec{role: role, ip: antreagen.IP(pod.IP), mac: antreagen.MAC(pod.MAC), ofport: int(pod.Port), prefix: 22}
				}
				return spec("fe", cli), spec("be", srv), nil
			}
		}
	}
	return client, server, fmt.Errorf("the generated node has no two local pods with TCP %d allowed between them", tcpPort)
}

func slicesContains(ports []uint16, port uint16) bool {
	for _, p := range ports {
		if p == port {
			return true
		}
	}
	return false
}

// cacheStats are a switch's megaflow cache counters.
type cacheStats struct {
	flows, hits, misses float64
	// kernel is what a kernel fast path forwarded (packets), when the
	// switch has one (hasKernel).
	kernel, kernelEntries float64
	// kernelInstalls is how many entries the fast path has written.
	kernelInstalls         float64
	hasKernel, hasInstalls bool
}

var (
	govsEntries = regexp.MustCompile(`entries: (\d+)`)
	govsHits    = regexp.MustCompile(`hits: (\d+)`)
	govsMisses  = regexp.MustCompile(`misses: (\d+)`)
	govsKernel  = regexp.MustCompile(`kernel hits: (\d+) packets`)
	govsKEnt    = regexp.MustCompile(`kernel entries: (\d+)`)
	govsKInst   = regexp.MustCompile(`kernel installs: (\d+)`)
	ovsLookups  = regexp.MustCompile(`lookups: hit:(\d+) missed:(\d+)`)
	ovsFlows    = regexp.MustCompile(`flows: (\d+)`)
)

// number returns the first submatch i of re in s.
func number(re *regexp.Regexp, s string, i int) (float64, error) {
	m := re.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q not found in %q", re, lastLines(s, 5))
	}
	return strconv.ParseFloat(m[i], 64)
}

// cacheStats reads `govs dump-cache br-int`.
func (g *govsNode) cacheStats() (cacheStats, error) {
	rep, err := callOutput(g.rundir, "dump-cache", "br-int")
	if err != nil {
		return cacheStats{}, err
	}
	var st cacheStats
	if st.flows, err = number(govsEntries, rep, 1); err != nil {
		return st, err
	}
	if st.hits, err = number(govsHits, rep, 1); err != nil {
		return st, err
	}
	if st.misses, err = number(govsMisses, rep, 1); err != nil {
		return st, err
	}
	if govsKernel.MatchString(rep) {
		st.hasKernel = true
		if st.kernel, err = number(govsKernel, rep, 1); err != nil {
			return st, err
		}
		if st.kernelEntries, err = number(govsKEnt, rep, 1); err != nil {
			return st, err
		}
		// Not from a govs-vswitchd older than the count (an A/B run).
		if govsKInst.MatchString(rep) {
			st.hasInstalls = true
			st.kernelInstalls, err = number(govsKInst, rep, 1)
		}
	}
	return st, err
}

// ovsCacheStats reads `ovs-appctl dpctl/show` (the netdev datapath's
// lookups and megaflows).
func ovsCacheStats(o *ovstest.OVS) func() (cacheStats, error) {
	return func() (cacheStats, error) {
		out, err := o.Appctl("dpctl/show")
		if err != nil {
			return cacheStats{}, err
		}
		var st cacheStats
		if st.hits, err = number(ovsLookups, out, 1); err != nil {
			return st, err
		}
		if st.misses, err = number(ovsLookups, out, 2); err != nil {
			return st, err
		}
		st.flows, err = number(ovsFlows, out, 1)
		return st, err
	}
}

// reportCache adds the megaflow count at the end of a measurement, the
// hit rate during it and the cache lookups per connection (conns > 0):
// the packets each connection took through the switch's datapath, with
// their recirculations, which shows that both switches carried the same
// traffic.
func reportCache(m map[string]float64, prefix string, a, b cacheStats, conns int64) {
	m[prefix+"_megaflows"] = b.flows
	if n := (b.hits - a.hits) + (b.misses - a.misses); n > 0 {
		m[prefix+"_hit_rate"] = (b.hits - a.hits) / n
		if conns > 0 {
			m[prefix+"_lookups_per_conn"] = n / float64(conns)
		}
	}
}

// callOutput runs one `govs` control command and returns its output.
func callOutput(rundir string, words ...string) (string, error) {
	rep, err := vswitchd.Call(rundir, vswitchd.Request{Command: words[0], Args: words[1:]})
	if err != nil {
		return "", fmt.Errorf("govs %s: %w", strings.Join(words, " "), err)
	}
	if rep.Error != "" {
		return "", fmt.Errorf("govs %s: %s", strings.Join(words, " "), rep.Error)
	}
	return rep.Output, nil
}
