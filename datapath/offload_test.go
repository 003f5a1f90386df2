package datapath

import (
	"encoding/binary"
	"slices"
	"sync"
	"testing"

	"github.com/govs-project/govs/datapath/geneve"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/tunnel"
)

// recTunnel is a TunnelPort that records what is sent through it: a
// MemPort for the port side, WriteTunnel keeping frames and keys.
type recTunnel struct {
	*MemPort
	mu     sync.Mutex
	frames [][]byte
	keys   []flowtable.Key
}

func (r *recTunnel) Metadata(int) *tunnel.Metadata                  { return &tunnel.Metadata{} }
func (r *recTunnel) FillKey(*tunnel.Metadata, *flowtable.Key) error { return nil }
func (r *recTunnel) SetTLVMap(*flowtable.TLVMap) error              { return nil }
func (r *recTunnel) RxPort(int) *geneve.Port                        { return nil }
func (r *recTunnel) WriteTunnel(frames [][]byte, keys []*flowtable.Key) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, f := range frames {
		r.frames = append(r.frames, slices.Clone(f))
		r.keys = append(r.keys, *keys[i])
	}
	return len(frames), nil
}

var _ TunnelPort = (*recTunnel)(nil)

// A TCP super-segment output to a tunnel port (which takes no offload
// metadata) is cut into MTU-sized segments, each with complete checksums
// and its own copy of the flow key (the tunnel header comes from it).
func TestOutputSegmentsToTunnel(t *testing.T) {
	b := newBridge(t, "actions=drop", false)
	tun := &recTunnel{MemPort: NewMemPort(MemPortConfig{Name: "tun"})}
	if _, err := b.AddPort(1, tun, KindTunnel); err != nil {
		t.Fatal(err)
	}
	const payload, mss = 5000, 1448
	frame := tcpFrame(t, true, "ack|psh", 1000, 1, payload)
	l := newLoop(b, nil)
	l.ports = b.ports.Load()
	var pkt flowtable.Packet
	pkt.Offload = flowtable.Offload{GSOType: flowtable.GSOTCPv4, GSOSize: mss}
	if err := pkt.Extract(frame); err != nil {
		t.Fatal(err)
	}
	flowtable.FieldTunDst.SetUint64(&pkt.Key, 0x0a4f01ca)
	l.Output(1, &pkt)
	l.flush()

	if want := (payload + mss - 1) / mss; len(tun.frames) != want || len(tun.keys) != want {
		t.Fatalf("tunnel got %d frames and %d keys, want %d each", len(tun.frames), len(tun.keys), want)
	}
	hdr := len(frame) - payload
	var total int
	for i, f := range tun.frames {
		if len(f)-hdr > mss {
			t.Errorf("segment %d: %d payload bytes > %d", i, len(f)-hdr, mss)
		}
		total += len(f) - hdr
		if got := flowtable.FieldTunDst.Uint64(&tun.keys[i]); got != 0x0a4f01ca {
			t.Errorf("segment %d: key tun_dst %#x", i, got)
		}
		if seq := binary.BigEndian.Uint32(f[34+4:]); seq != 1000+uint32(i*mss) {
			t.Errorf("segment %d: seq %d", i, seq)
		}
		// The TCP checksum of each segment verifies from scratch.
		var s uint32
		for _, w := range [][]byte{f[14+12 : 14+20], f[34:]} {
			for j := 0; j+1 < len(w); j += 2 {
				s += uint32(binary.BigEndian.Uint16(w[j:]))
			}
			if len(w)%2 == 1 {
				s += uint32(w[len(w)-1]) << 8
			}
		}
		s += uint32(flowtable.IPProtoTCP) + uint32(len(f)-34)
		for s>>16 != 0 {
			s = s&0xffff + s>>16
		}
		if s != 0xffff {
			t.Errorf("segment %d: bad TCP checksum", i)
		}
	}
	if total != payload {
		t.Errorf("segments carry %d payload bytes, want %d", total, payload)
	}
}
