package ofproto

// Continuations on the wire: the NXPINT_CONTINUATION property of a paused
// NXT_PACKET_IN2 (OVS lib/ofp-packet.c ofputil_put_packet_in_private) and
// NXT_RESUME, decoded with the checks and errors of
// ofputil_decode_packet_in_private and handled as ofproto-dpif's
// nxt_resume. The property's content is private to the switch: the
// controller only copies it back.

import (
	"crypto/rand"
	"encoding/binary"

	"go.uber.org/zap"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofpact"
	"github.com/govs-project/govs/ofproto/translate"
	"github.com/govs-project/govs/ofproto/wire"
)

// NXCPT_* continuation property types.
const (
	nxcptBridge uint16 = 0x8000 + iota
	nxcptStack
	nxcptMirrors
	nxcptConntracked
	nxcptTableID
	nxcptCookie
	nxcptActions
	nxcptActionSet
	nxcptODPPort
)

// maxStackValue is the longest pushed value (sizeof(union mf_subvalue)).
const maxStackValue = 128

// Resumer is a datapath that can run a continuation (NXT_RESUME): frame
// is the packet the controller sent back, md its metadata (in_port,
// registers, tunnel, ct fields); outputs are sent before it returns.
type Resumer interface {
	Resume(frame []byte, md *flowtable.Match, c *flowtable.Continuation) error
}

// newBridgeUUID is the bridge's identity in the continuations it sends
// (OVS: the ofproto's random uuid): a resume names the bridge it is for.
func newBridgeUUID() [16]byte {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80
	return u
}

// appendProp appends one property (ofpprop_put): 4-byte header, data,
// padding to 8.
func appendProp(b []byte, typ uint16, data []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, typ)
	b = binary.BigEndian.AppendUint16(b, uint16(4+len(data)))
	b = append(b, data...)
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	return b
}

// be64Prop is the data of a 64-bit property (ofpprop_put_be64): 4 bytes
// of padding put the value on an 8-byte boundary.
func be64Prop(v uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 4, 12), v) }

// nestedProp is the data of a property holding properties or actions
// (ofpprop_start_nested): 4 bytes of padding, then the content.
func nestedProp(inner []byte) []byte { return append(make([]byte, 4, 4+len(inner)), inner...) }

// odpPort is the datapath port number of an OpenFlow port, as dpif/show
// prints it (the same number in govs); the reserved ports have none.
func odpPort(ofport uint32) uint32 {
	if ofport >= flowtable.PortMax && ofport != flowtable.PortLocal {
		return 0xffffffff // ODPP_NONE
	}
	return ofport
}

// encodeActions is the wire form of a frozen action list in the
// connection's version. Instructions that are not actions (write_actions,
// clear_actions) have no action form: OVS's resume of them fails, govs
// leaves them out.
func (b *Bridge) encodeActions(c *Conn, acts []flowtable.Action) ([]byte, error) {
	var keep []flowtable.Action
	for _, a := range acts {
		if r := ofpact.RankOf(a); r == ofpact.RankApply || r == ofpact.RankMeter {
			keep = append(keep, a)
		}
	}
	w, err := translate.ActionsToWire(c.Version(), keep, b.p.TLV)
	if err != nil {
		return nil, err
	}
	return wire.AppendActions(nil, c.Version(), w)
}

// continuationProp is the content of NXPINT_CONTINUATION for cont: the
// frozen actions split at each UnrollXlate into NXCPT_ACTIONS, each
// preceded by NXCPT_TABLE_ID and NXCPT_COOKIE when they change (both
// start at 0).
func (b *Bridge) continuationProp(c *Conn, cont *flowtable.Continuation, inPort uint32) ([]byte, error) {
	out := appendProp(nil, nxcptBridge, b.uuid[:])
	for i := len(cont.Stack) - 1; i >= 0; i-- { // top first
		out = appendProp(out, nxcptStack, cont.Stack[i])
	}
	if cont.Conntracked {
		out = appendProp(out, nxcptConntracked, nil)
	}
	var table uint8
	var cookie uint64
	group := func(acts []flowtable.Action) error {
		if len(acts) == 0 {
			return nil
		}
		w, err := b.encodeActions(c, acts)
		if err != nil {
			return err
		}
		if len(w) > 0 {
			out = appendProp(out, nxcptActions, nestedProp(w))
		}
		return nil
	}
	start := 0
	for i, a := range cont.Actions {
		u, ok := a.(*flowtable.UnrollXlate)
		if !ok {
			continue
		}
		if err := group(cont.Actions[start:i]); err != nil {
			return nil, err
		}
		if u.Table != table {
			out, table = appendProp(out, nxcptTableID, []byte{u.Table}), u.Table
		}
		if u.Cookie != cookie {
			out, cookie = appendProp(out, nxcptCookie, be64Prop(u.Cookie)), u.Cookie
		}
		start = i + 1
	}
	if err := group(cont.Actions[start:]); err != nil {
		return nil, err
	}
	if len(cont.ActionSet) > 0 {
		w, err := b.encodeActions(c, cont.ActionSet)
		if err != nil {
			return nil, err
		}
		out = appendProp(out, nxcptActionSet, nestedProp(w))
	}
	if p := odpPort(inPort); p != 0 {
		out = appendProp(out, nxcptODPPort, binary.BigEndian.AppendUint32(nil, p))
	}
	return out, nil
}

// resumeMsg is a decoded NXT_RESUME.
type resumeMsg struct {
	packet   []byte
	metadata flowtable.Match
	bridge   [16]byte
	cont     flowtable.Continuation
}

// propReader pulls properties as ofpprop_pull does (8-byte alignment,
// experimenter properties from type 0xffff).
type propReader struct {
	c *Conn
	b []byte
}

// next returns the next property's type, its payload (after the header)
// and whether it is an experimenter property.
func (r *propReader) next() (typ uint16, payload []byte, exp bool, err error) {
	if len(r.b) < 4 {
		return 0, nil, false, ofpErr(r.c, wire.OFPBPC_BAD_LEN, "property header truncated")
	}
	n := int(binary.BigEndian.Uint16(r.b[2:]))
	padded := (n + 7) &^ 7
	if n < 4 || padded > len(r.b) {
		return 0, nil, false, ofpErr(r.c, wire.OFPBPC_BAD_LEN, "property length %d does not fit in %d bytes", n, len(r.b))
	}
	typ = binary.BigEndian.Uint16(r.b)
	payload = r.b[4:n]
	if typ == 0xffff {
		if n < 12 {
			return 0, nil, false, ofpErr(r.c, wire.OFPBPC_BAD_LEN, "experimenter property of %d bytes", n)
		}
		if binary.BigEndian.Uint32(r.b[4:]) == 0 {
			return 0, nil, false, ofpErr(r.c, wire.OFPBPC_BAD_EXPERIMENTER, "experimenter 0")
		}
		exp, payload = true, r.b[12:n]
	}
	r.b = r.b[padded:]
	return typ, payload, exp, nil
}

// unknownProp is OFPPROP_UNKNOWN of a strict decoder.
func unknownProp(c *Conn, what string, typ uint16, exp bool) error {
	if exp {
		return ofpErr(c, wire.OFPBPC_BAD_EXP_TYPE, "unknown %s experimenter property", what)
	}
	return ofpErr(c, wire.OFPBPC_BAD_TYPE, "unknown %s property type %d", what, typ)
}

// Fixed-size property payloads, as ofpprop_parse_* check them.
func propU8(c *Conn, p []byte) (uint8, error) {
	if len(p) < 1 {
		return 0, ofpErr(c, wire.OFPBPC_BAD_LEN, "8-bit property of %d bytes", len(p))
	}
	return p[0], nil
}

func propU32(c *Conn, p []byte) (uint32, error) {
	if len(p) != 4 {
		return 0, ofpErr(c, wire.OFPBPC_BAD_LEN, "32-bit property of %d bytes", len(p))
	}
	return binary.BigEndian.Uint32(p), nil
}

func propBE64(c *Conn, p []byte) (uint64, error) {
	if len(p) != 12 {
		return 0, ofpErr(c, wire.OFPBPC_BAD_LEN, "64-bit property of %d bytes", len(p))
	}
	return binary.BigEndian.Uint64(p[4:]), nil
}

// propNested is the content of a nested property (after its padding).
func propNested(c *Conn, p []byte) ([]byte, error) {
	if len(p) < 4 {
		return nil, ofpErr(c, wire.OFPBPC_BAD_LEN, "nested property of %d bytes", len(p))
	}
	return p[4:], nil
}

// decodeResume decodes an NXT_RESUME body (after the Nicira header) as
// ofputil_decode_packet_in_private does, with its errors.
func (b *Bridge) decodeResume(c *Conn, body []byte) (*resumeMsg, error) {
	m := &resumeMsg{}
	var fullLen uint32
	var cont []byte
	r := propReader{c: c, b: body}
	for len(r.b) > 0 {
		typ, p, exp, err := r.next()
		if err != nil {
			return nil, err
		}
		switch {
		case exp:
			err = unknownProp(c, "NX_PACKET_IN2", typ, exp)
		case typ == wire.NXPINT_PACKET:
			m.packet = p
		case typ == wire.NXPINT_FULL_LEN:
			fullLen, err = propU32(c, p)
		case typ == wire.NXPINT_BUFFER_ID:
			_, err = propU32(c, p)
		case typ == wire.NXPINT_TABLE_ID, typ == wire.NXPINT_REASON:
			_, err = propU8(c, p)
		case typ == wire.NXPINT_COOKIE:
			_, err = propBE64(c, p)
		case typ == wire.NXPINT_METADATA:
			err = b.decodeResumeMetadata(c, p, &m.metadata)
		case typ == wire.NXPINT_USERDATA:
		case typ == wire.NXPINT_CONTINUATION:
			cont, err = propNested(c, p)
		default:
			err = unknownProp(c, "NX_PACKET_IN2", typ, exp)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(m.packet) == 0 {
		return nil, ofpErr(c, wire.OFPBRC_BAD_LEN, "NXT_RESUME lacks packet")
	}
	if fullLen != 0 && int(fullLen) < len(m.packet) {
		return nil, ofpErr(c, wire.OFPBRC_BAD_LEN, "NXT_RESUME claimed full_len < len")
	}
	if err := b.decodeContinuation(c, cont, m); err != nil {
		return nil, err
	}
	return m, nil
}

func (b *Bridge) decodeResumeMetadata(c *Conn, p []byte, md *flowtable.Match) error {
	fields, err := wire.DecodeMatch(c.Version(), p)
	if err != nil {
		return err
	}
	*md, err = translate.MatchFromWireVersion(c.Version(), fields, b.p.TLV)
	return err
}

// decodeContinuation decodes the continuation's properties into m.
func (b *Bridge) decodeContinuation(c *Conn, body []byte, m *resumeMsg) error {
	var table uint8
	var cookie uint64
	r := propReader{c: c, b: body}
	for len(r.b) > 0 {
		typ, p, exp, err := r.next()
		if err != nil {
			return err
		}
		if exp {
			return unknownProp(c, "continuation", typ, exp)
		}
		switch typ {
		case nxcptBridge:
			if len(p) != 16 {
				return ofpErr(c, wire.OFPBPC_BAD_LEN, "bridge uuid of %d bytes", len(p))
			}
			copy(m.bridge[:], p)
		case nxcptStack:
			if len(p) > maxStackValue {
				return ofpErr(c, wire.OFPBPC_BAD_LEN, "NXCPT_STACK property has bad length %d", len(p))
			}
			// Top first on the wire: each one goes under the others.
			m.cont.Stack = append([][]byte{append([]byte(nil), p...)}, m.cont.Stack...)
		case nxcptMirrors:
			_, err = propU32(c, p)
		case nxcptConntracked:
			m.cont.Conntracked = true
		case nxcptTableID:
			table, err = propU8(c, p)
		case nxcptCookie:
			cookie, err = propBE64(c, p)
		case nxcptActions:
			var acts []flowtable.Action
			if acts, err = b.decodeActionsProp(c, p); err == nil {
				m.cont.Actions = append(m.cont.Actions, &flowtable.UnrollXlate{Table: table, Cookie: cookie})
				m.cont.Actions = append(m.cont.Actions, acts...)
			}
		case nxcptActionSet:
			m.cont.ActionSet, err = b.decodeActionsProp(c, p)
		case nxcptODPPort:
			_, err = propU32(c, p)
		default:
			err = unknownProp(c, "continuation", typ, exp)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// decodeActionsProp decodes the actions of NXCPT_ACTIONS or
// NXCPT_ACTION_SET (ofpacts_pull_openflow_actions).
func (b *Bridge) decodeActionsProp(c *Conn, p []byte) ([]flowtable.Action, error) {
	inner, err := propNested(c, p)
	if err != nil {
		return nil, err
	}
	w, err := wire.DecodeActions(c.Version(), inner)
	if err != nil {
		return nil, err
	}
	return translate.ActionsFromWire(c.Version(), w, b.p.TLV)
}

// resume handles NXT_RESUME (handle_nxt_resume, nxt_resume): the packet
// continues where it paused. A continuation from another bridge (or from
// before a restart) is stale, as OVS finds no bridge with its uuid.
func (b *Bridge) resume(c *Conn, raw []byte) error {
	if len(raw) < wire.HeaderLen+8 {
		return ofpErr(c, wire.OFPBRC_BAD_LEN, "NXT_RESUME truncated")
	}
	m, err := b.decodeResume(c, raw[wire.HeaderLen+8:])
	if err != nil {
		return err
	}
	if m.bridge != b.uuid {
		return ofpErr(c, wire.NXR_STALE, "continuation of another bridge")
	}
	rs, ok := b.dp.(Resumer)
	if !ok {
		return ofpErr(c, wire.NXR_NOT_SUPPORTED, "datapath cannot resume")
	}
	if err := rs.Resume(m.packet, &m.metadata, &m.cont); err != nil {
		// OVS reports only a missing bridge: a packet it cannot parse or
		// a translation that fails is dropped quietly.
		b.log.Debug("resumed packet dropped", zap.Error(err))
	}
	return nil
}
