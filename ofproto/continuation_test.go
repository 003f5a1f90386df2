package ofproto

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/flowtext"
	"github.com/govs-project/govs/ofproto/wire"
)

// resumeDP is a datapath without ports that runs resumes on its pipeline.
type resumeDP struct {
	streamDP
	resumed []*flowtable.Continuation
}

func (d *resumeDP) Resume(frame []byte, md *flowtable.Match, c *flowtable.Continuation) error {
	d.resumed = append(d.resumed, c)
	var pkt flowtable.Packet
	pkt.Key.SetMetadata(md)
	if err := pkt.Extract(slices.Clone(frame)); err != nil {
		return err
	}
	d.p.Resume(&pkt, c, nil, nil)
	return nil
}

// sampleContinuation pauses a packet in nested flows with a stack and an
// action set and returns the continuation it got.
func sampleContinuation(t testing.TB, p *flowtable.Pipeline) *flowtable.Continuation {
	t.Helper()
	if err := flowtext.Load(p, `
table=0 in_port=1 cookie=0x7 actions=set_field:1->reg1,push:NXM_NX_REG1[],write_actions(output:3),goto_table:1
table=1 cookie=0x9 actions=set_field:5->reg2,controller(pause,userdata=01.02),set_field:6->reg3,resubmit(,2),output:2
table=2 cookie=0x22 actions=goto_table:3
table=3 actions=pop:NXM_NX_REG4[],controller
`, nil); err != nil {
		t.Fatal(err)
	}
	var pkt flowtable.Packet
	pkt.Key.SetInPort(1)
	if err := pkt.Extract(resumeFrame()); err != nil {
		t.Fatal(err)
	}
	var sink pinSink
	p.Run(&pkt, &sink, nil)
	if len(sink) != 1 || sink[0].Continuation == nil {
		t.Fatalf("no paused packet-in: %+v", sink)
	}
	return sink[0].Continuation
}

type pinSink []flowtable.PacketIn

func (s *pinSink) Output(uint32, *flowtable.Packet)                     {}
func (s *pinSink) PacketIn(_ *flowtable.Packet, pi *flowtable.PacketIn) { *s = append(*s, *pi) }

func resumeFrame() []byte {
	f := make([]byte, 60)
	copy(f, []byte{0x50, 0x54, 0, 0, 0, 7, 0x50, 0x54, 0, 0, 0, 5, 0x08, 0x00, 0x45, 0, 0, 46, 0, 0, 0, 0, 64, 1, 0, 0,
		192, 168, 0, 1, 192, 168, 0, 2, 8, 0})
	return f
}

// resumeBody is the body of an NXT_RESUME (after the Nicira header) for
// a packet and a continuation property's content.
func resumeBody(frame, md, cont []byte) []byte {
	b := appendProp(nil, wire.NXPINT_PACKET, frame)
	b = appendProp(b, wire.NXPINT_TABLE_ID, []byte{0})
	b = appendProp(b, wire.NXPINT_REASON, []byte{1})
	b = appendProp(b, wire.NXPINT_METADATA, md)
	return appendProp(b, wire.NXPINT_CONTINUATION, nestedProp(cont))
}

func inPortMetadata() []byte {
	return []byte{0x80, 0x00, 0x00, 0x04, 0, 0, 0, 1} // OXM in_port=1
}

func errCode(t *testing.T, err error) wire.ErrorCode {
	t.Helper()
	var oe *wire.OFPError
	if !errors.As(err, &oe) {
		t.Fatalf("error %v is not an OpenFlow error", err)
	}
	return oe.Sym
}

// TestResumeDecode: a continuation govs sent decodes back to the same
// frozen state and resumes; a bad one gets the error OVS's
// ofputil_decode_packet_in_private or nxt_resume gives.
func TestResumeDecode(t *testing.T) {
	p := flowtable.NewPipeline()
	dp := &resumeDP{streamDP: streamDP{p}}
	b := NewBridge(dp, nil)
	c := &Conn{version: wire.OFP13}
	cont := sampleContinuation(t, p)
	prop, err := b.continuationProp(c, cont, 1)
	if err != nil {
		t.Fatal(err)
	}
	m, err := b.decodeResume(c, resumeBody(resumeFrame(), inPortMetadata(), prop))
	if err != nil {
		t.Fatalf("decode own continuation: %v", err)
	}
	opts := &flowtext.PrintOptions{}
	// The first group gets the unroll_xlate a decoder adds before every
	// NXCPT_ACTIONS, as OVS's does.
	if got, want := flowtext.ActionsString(m.cont.Actions, opts), "unroll_xlate(table=0, cookie=0),"+flowtext.ActionsString(cont.Actions, opts); got != want {
		t.Errorf("actions after the round trip\n got %s\nwant %s", got, want)
	}
	if got, want := flowtext.ActionsString(m.cont.ActionSet, opts), "output:3"; got != want {
		t.Errorf("action set %s, want %s", got, want)
	}
	if len(m.cont.Stack) != 1 || binary.BigEndian.Uint32(m.cont.Stack[0]) != 1 || m.bridge != b.uuid {
		t.Errorf("stack %x bridge %x", m.cont.Stack, m.bridge)
	}

	stack129 := appendProp(appendProp(nil, nxcptBridge, b.uuid[:]), nxcptStack, make([]byte, 129))
	other := [16]byte{1}
	for _, tc := range []struct {
		name string
		body []byte
		want wire.ErrorCode
	}{
		{"another bridge", resumeBody(resumeFrame(), inPortMetadata(), appendProp(nil, nxcptBridge, other[:])), wire.NXR_STALE},
		{"no bridge", resumeBody(resumeFrame(), inPortMetadata(), nil), wire.NXR_STALE},
		{"no packet", appendProp(nil, wire.NXPINT_CONTINUATION, nestedProp(prop)), wire.OFPBRC_BAD_LEN},
		{"unknown continuation property", resumeBody(resumeFrame(), inPortMetadata(), appendProp(prop, 0x8009, nil)), wire.OFPBPC_BAD_TYPE},
		{"experimenter continuation property", resumeBody(resumeFrame(), inPortMetadata(), appendProp(prop, 0xffff, []byte{0, 0, 0x23, 0x20, 0, 0, 0, 1})), wire.OFPBPC_BAD_EXP_TYPE},
		{"stack value over 128 bytes", resumeBody(resumeFrame(), inPortMetadata(), stack129), wire.OFPBPC_BAD_LEN},
		{"truncated continuation", resumeBody(resumeFrame(), inPortMetadata(), prop[:len(prop)-3]), wire.OFPBPC_BAD_LEN},
		{"bridge of 15 bytes", resumeBody(resumeFrame(), inPortMetadata(), appendProp(nil, nxcptBridge, b.uuid[:15])), wire.OFPBPC_BAD_LEN},
		{"cookie of 8 bytes", resumeBody(resumeFrame(), inPortMetadata(), appendProp(prop, nxcptCookie, make([]byte, 8))), wire.OFPBPC_BAD_LEN},
		{"actions not a multiple of 8", resumeBody(resumeFrame(), inPortMetadata(), appendProp(prop, nxcptActions, nestedProp(make([]byte, 4)))), wire.OFPBRC_BAD_LEN},
		{"unknown packet-in property", append(resumeBody(resumeFrame(), inPortMetadata(), prop), appendProp(nil, 99, nil)...), wire.OFPBPC_BAD_TYPE},
		{"full_len below the packet", append(appendProp(nil, wire.NXPINT_FULL_LEN, []byte{0, 0, 0, 10}), resumeBody(resumeFrame(), inPortMetadata(), prop)...), wire.OFPBRC_BAD_LEN},
	} {
		raw := append(make([]byte, wire.HeaderLen+8), tc.body...)
		if got := errCode(t, b.resume(c, raw)); got != tc.want {
			t.Errorf("%s: error %v, want %v", tc.name, got, tc.want)
		}
	}
	if len(dp.resumed) != 0 {
		t.Errorf("%d bad continuations were resumed", len(dp.resumed))
	}
	raw := append(make([]byte, wire.HeaderLen+8), resumeBody(resumeFrame(), inPortMetadata(), prop)...)
	if err := b.resume(c, raw); err != nil || len(dp.resumed) != 1 {
		t.Errorf("good resume: %v, %d resumed", err, len(dp.resumed))
	}
}

// FuzzDecodeResume: no NXT_RESUME body panics the decoder or the resumed
// walk; one that decodes encodes back to one that decodes.
func FuzzDecodeResume(f *testing.F) {
	p := flowtable.NewPipeline()
	dp := &resumeDP{streamDP: streamDP{p}}
	b := NewBridge(dp, nil)
	cont := sampleContinuation(f, p)
	for _, v := range []uint8{wire.OFP10, wire.OFP13, wire.OFP15} {
		prop, err := b.continuationProp(&Conn{version: v}, cont, 1)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(v, resumeBody(resumeFrame(), inPortMetadata(), prop))
	}
	f.Fuzz(func(t *testing.T, v uint8, body []byte) {
		switch v {
		case wire.OFP10, wire.OFP13, wire.OFP15:
		default:
			return
		}
		c := &Conn{version: v}
		m, err := b.decodeResume(c, body)
		if err != nil {
			return
		}
		dp.resumed = dp.resumed[:0]
		_ = dp.Resume(m.packet, &m.metadata, &m.cont)
		prop, err := b.continuationProp(c, &m.cont, 1)
		if err != nil {
			return // an action the encoder refuses to emit
		}
		if _, err := b.decodeResume(c, resumeBody(resumeFrame(), inPortMetadata(), prop)); err != nil {
			t.Fatalf("re-encoded continuation does not decode: %v", err)
		}
	})
}
