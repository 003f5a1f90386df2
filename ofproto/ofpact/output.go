package ofpact

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofpfield"
	"github.com/govs-project/govs/ofproto/ofptext"
	"github.com/govs-project/govs/ofproto/wire"
)

// output, controller: send the packet to a port, a port held in a field
// (NXAST_OUTPUT_REG/REG2) or the controllers (OFPAT_OUTPUT to
// CONTROLLER, NXAST_CONTROLLER, NXAST_CONTROLLER2).

func init() {
	keywords(parseOutput, "output")
	keywords(parseController, "controller")
	register(Def[*flowtable.Output]{
		Format: func(b *strings.Builder, a *flowtable.Output, o *ofptext.PrintOptions) {
			if a.Port < flowtable.PortMax {
				b.WriteString("output:")
			}
			b.WriteString(ofptext.PortString(a.Port, o))
			if a.Port == flowtable.PortController {
				fmt.Fprintf(b, ":%d", a.MaxLen)
			}
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.Output) ([]wire.Action, error) {
			return append(out, &wire.ActionOutput{Port: ofpfield.PortToWire(t.version, a.Port), MaxLen: a.MaxLen}), nil
		},
		Check: func(c Checker, a *flowtable.Output) error {
			if badOutPort(a.Port) {
				return invalid(flowtable.BadOutPort, "output", "%d: invalid output port", a.Port)
			}
			return nil
		},
	})
	register(Def[*flowtable.OutputReg]{
		Format: func(b *strings.Builder, a *flowtable.OutputReg, o *ofptext.PrintOptions) {
			b.WriteString("output:")
			b.WriteString(ofptext.SubfieldString(a.Src))
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.OutputReg) ([]wire.Action, error) {
			ref, err := t.nxRef(a.Src.Field)
			if err != nil {
				return nil, err
			}
			return append(out, &wire.ActionOutputReg{Src: ref, Ofs: uint16(a.Src.Ofs), NBits: uint16(a.Src.NBits), MaxLen: a.MaxLen}), nil
		},
	})
	register(Def[*flowtable.Controller]{
		Format: func(b *strings.Builder, a *flowtable.Controller, o *ofptext.PrintOptions) { formatController(b, a) },
		Encode: func(t Encoder, out []wire.Action, a *flowtable.Controller) ([]wire.Action, error) {
			switch {
			case a.Short && a.Reason == 1 && a.ControllerID == 0 && len(a.UserData) == 0 && !a.Pause && a.MeterID == 0:
				// CONTROLLER:n is an output to the controller port.
				return append(out, &wire.ActionOutput{Port: ofpfield.PortToWire(t.version, flowtable.PortController), MaxLen: a.MaxLen}), nil
			case len(a.UserData) == 0 && !a.Pause && a.MeterID == 0:
				return append(out, &wire.ActionController{MaxLen: a.MaxLen, ControllerID: a.ControllerID, Reason: a.Reason}), nil
			}
			return append(out, controller2(a)), nil
		},
	})
	fromWire(func(t Decoder, a *wire.ActionOutput) (flowtable.Action, error) {
		// Checked as it is decoded, as OVS's decode_OFPAT_RAW*_OUTPUT
		// does: also in group buckets, which have no flow to check.
		p, ok := ofpfield.PortFromWire(t.version, a.Port)
		if !ok || badOutPort(p) {
			return nil, t.err(wire.OFPBAC_BAD_OUT_PORT, "output port %#x", a.Port)
		}
		if p == flowtable.PortController {
			return &flowtable.Controller{MaxLen: a.MaxLen, Reason: 1, Short: true}, nil
		}
		return &flowtable.Output{Port: p, MaxLen: a.MaxLen}, nil
	})
	fromWire(func(t Decoder, a *wire.ActionOutputReg) (flowtable.Action, error) {
		src, err := t.fieldRange(a.Src, int(a.Ofs), int(a.NBits))
		if err != nil {
			return nil, err
		}
		return &flowtable.OutputReg{Src: src, MaxLen: a.MaxLen}, nil
	})
	fromWire(func(t Decoder, a *wire.ActionController) (flowtable.Action, error) {
		return &flowtable.Controller{MaxLen: a.MaxLen, ControllerID: a.ControllerID, Reason: a.Reason}, nil
	})
	fromWire(func(t Decoder, a *wire.ActionController2) (flowtable.Action, error) {
		p := a.Params()
		c := &flowtable.Controller{MaxLen: p.MaxLen, ControllerID: p.ControllerID, Reason: p.Reason, Pause: p.Pause, MeterID: p.MeterID}
		if len(p.Userdata) > 0 {
			c.UserData = append([]byte(nil), p.Userdata...)
		}
		return c, nil
	})
}

// badOutPort is OVS's ofpact_check_output_port: the reserved numbers
// below IN_PORT, and NONE/ANY (65535), are no output port.
func badOutPort(p uint32) bool {
	return p >= flowtable.PortMax && p < flowtable.PortInPort || p == flowtable.PortNone
}

// parseBarePort reads an action that is only a port: a number or a
// reserved port name is an output (CONTROLLER a controller action).
func parseBarePort(p Parser, e ofptext.KV) (flowtable.Action, bool, error) {
	switch strings.ToUpper(e.Key) {
	case "IN_PORT", "NORMAL", "FLOOD", "ALL", "LOCAL", "TABLE", "ANY", "NONE":
		// As ofputil_port_from_string; output to ANY/NONE is refused by the
		// flow's check (OFPBAC_BAD_OUT_PORT), as OVS refuses it.
		port, _ := flowtable.ParsePort(e.Key)
		return &flowtable.Output{Port: port}, true, nil
	case "CONTROLLER":
		return &flowtable.Controller{MaxLen: 0xffff, Reason: 1, Short: true}, true, nil
	}
	if _, err := strconv.ParseUint(e.Key, 10, 32); err == nil {
		port, err := ofptext.ParsePortName(e.Key, p.Ports)
		if err != nil {
			return nil, true, ofptext.ErrAt(e.KeyPos, e.Key, "%v", err)
		}
		return &flowtable.Output{Port: port}, true, nil
	}
	return nil, false, nil
}

func parseOutput(p Parser, e ofptext.KV) (flowtable.Action, error) {
	val := e.Value
	if strings.Contains(val, "[") {
		r, err := ofptext.ParseSubfield(val, p.TLV)
		if err != nil {
			return nil, wrap(e, err)
		}
		return &flowtable.OutputReg{Src: r, MaxLen: 0}, nil
	}
	port, err := ofptext.ParsePortName(val, p.Ports)
	if err != nil {
		// output:reg1 style field name.
		if f := flowtable.FieldByName(val); f != nil {
			return &flowtable.OutputReg{Src: flowtable.Whole(f)}, nil
		}
		return nil, wrap(e, err)
	}
	if port == flowtable.PortController {
		return &flowtable.Controller{MaxLen: 0xffff, Reason: 1, Short: true}, nil
	}
	return &flowtable.Output{Port: port}, nil
}

func parseController(p Parser, e ofptext.KV) (flowtable.Action, error) {
	c := &flowtable.Controller{MaxLen: 0xffff, Reason: 1}
	switch e.Delim {
	case 0:
		c.Short = true
		return c, nil
	case ':':
		n, err := ofptext.ParseNum(e.Value, 16)
		if err != nil {
			return nil, bad(e, "%v", err)
		}
		c.MaxLen, c.Short = uint16(n), true
		return c, nil
	}
	for x := range ofptext.Elements(e.Value, e.ValPos) {
		switch x.Key {
		case "reason":
			found := false
			for i, n := range ofptext.ReasonNames {
				if n == x.Value {
					c.Reason, found = uint8(i), true
				}
			}
			if !found {
				return nil, ofptext.ErrAt(x.ValPos, "reason", "unknown reason %q", x.Value)
			}
		case "max_len":
			n, err := ofptext.ParseNum(x.Value, 16)
			if err != nil {
				return nil, ofptext.ErrAt(x.ValPos, "max_len", "%v", err)
			}
			c.MaxLen = uint16(n)
		case "id":
			n, err := ofptext.ParseNum(x.Value, 16)
			if err != nil {
				return nil, ofptext.ErrAt(x.ValPos, "id", "%v", err)
			}
			c.ControllerID = uint16(n)
		case "userdata":
			for _, h := range strings.Split(x.Value, ".") {
				b, err := strconv.ParseUint(h, 16, 8)
				if err != nil {
					return nil, ofptext.ErrAt(x.ValPos, "userdata", "%q: invalid hex", x.Value)
				}
				c.UserData = append(c.UserData, byte(b))
			}
		case "pause":
			c.Pause = true
		case "meter_id":
			n, err := ofptext.ParseNum(x.Value, 32)
			if err != nil {
				return nil, ofptext.ErrAt(x.ValPos, "meter_id", "%v", err)
			}
			c.MeterID = uint32(n)
		default:
			return nil, ofptext.ErrAt(x.KeyPos, x.Key, "unknown controller argument")
		}
	}
	return c, nil
}

func formatController(b *strings.Builder, a *flowtable.Controller) {
	if a.Reason == 1 && a.ControllerID == 0 && len(a.UserData) == 0 && !a.Pause && a.MeterID == 0 {
		fmt.Fprintf(b, "CONTROLLER:%d", a.MaxLen)
		return
	}
	var parts []string
	if a.Reason != 1 {
		parts = append(parts, "reason="+ofptext.ReasonName(a.Reason))
	}
	if a.MaxLen != 0xffff {
		parts = append(parts, fmt.Sprintf("max_len=%d", a.MaxLen))
	}
	if a.ControllerID != 0 {
		parts = append(parts, fmt.Sprintf("id=%d", a.ControllerID))
	}
	if len(a.UserData) > 0 {
		var u []string
		for _, c := range a.UserData {
			u = append(u, fmt.Sprintf("%02x", c))
		}
		parts = append(parts, "userdata="+strings.Join(u, "."))
	}
	if a.Pause {
		parts = append(parts, "pause")
	}
	if a.MeterID != 0 {
		parts = append(parts, fmt.Sprintf("meter_id=%d", a.MeterID))
	}
	b.WriteString("controller(" + strings.Join(parts, ",") + ")")
}

func controller2(a *flowtable.Controller) *wire.ActionController2 {
	var props []wire.Property
	if a.MaxLen != 0xffff {
		props = append(props, wire.Property{Type: wire.NXAC2PT_MAX_LEN, Data: []byte{byte(a.MaxLen >> 8), byte(a.MaxLen)}})
	}
	if a.ControllerID != 0 {
		props = append(props, wire.Property{Type: wire.NXAC2PT_CONTROLLER_ID, Data: []byte{byte(a.ControllerID >> 8), byte(a.ControllerID)}})
	}
	if a.Reason != 1 {
		props = append(props, wire.Property{Type: wire.NXAC2PT_REASON, Data: []byte{a.Reason}})
	}
	if len(a.UserData) > 0 {
		props = append(props, wire.Property{Type: wire.NXAC2PT_USERDATA, Data: a.UserData})
	}
	if a.Pause {
		props = append(props, wire.Property{Type: wire.NXAC2PT_PAUSE})
	}
	if a.MeterID != 0 {
		m := a.MeterID
		props = append(props, wire.Property{Type: wire.NXAC2PT_METER_ID, Data: []byte{byte(m >> 24), byte(m >> 16), byte(m >> 8), byte(m)}})
	}
	return &wire.ActionController2{Props: props}
}
