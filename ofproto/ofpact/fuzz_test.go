package ofpact_test

import (
	"testing"

	"github.com/govs-project/govs/ofproto/ofpact"
	"github.com/govs-project/govs/ofproto/ofptext"
	"github.com/govs-project/govs/ofproto/wire"
)

// FuzzParseActions: any text either fails with an error or parses to
// actions that print and parse again to the same printout.
func FuzzParseActions(f *testing.F) {
	for _, s := range samples {
		f.Add(s.text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		acts, err := ofpact.Parser{}.ParseActions(text, 0)
		if err != nil {
			return
		}
		o := &ofptext.PrintOptions{Version: ofptext.OF15}
		printed := ofpact.ActionsString(acts, o)
		again, err := ofpact.Parser{}.ParseActions(printed, 0)
		if err != nil {
			t.Fatalf("%q printed as %q, which does not parse: %v", text, printed, err)
		}
		if p2 := ofpact.ActionsString(again, o); p2 != printed {
			t.Fatalf("%q printed as %q, then as %q", text, printed, p2)
		}
	})
}

// FuzzActionsFromWire: any bytes either fail to decode or translate with
// an error, or give actions that encode again in the same version.
func FuzzActionsFromWire(f *testing.F) {
	// clone() around the MPLS and TTL actions: nested decoding.
	texts := []string{
		"clone(push_mpls:0x8847,set_mpls_ttl(9),dec_mpls_ttl,copy_ttl_out,output:1),output:2",
		"clone(clone(push_mpls:0x8848,output:1),pop_vlan),output:2",
	}
	for _, text := range texts {
		if _, err := (ofpact.Parser{}).ParseActions(text, 0); err != nil {
			f.Fatalf("seed %q: %v", text, err)
		}
	}
	for _, s := range samples {
		texts = append(texts, s.text)
	}
	for _, text := range texts {
		acts, err := ofpact.Parser{}.ParseActions(text, 0)
		if err != nil {
			continue
		}
		for _, v := range []uint8{wire.OFP10, wire.OFP13, wire.OFP15} {
			w, err := ofpact.ActionsToWire(v, acts, nil)
			if err != nil {
				continue
			}
			if b, err := wire.AppendActions(nil, v, w); err == nil {
				f.Add(v, b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, v uint8, b []byte) {
		switch v {
		case wire.OFP10, wire.OFP13, wire.OFP15:
		default:
			return
		}
		dw, err := wire.DecodeActions(v, b)
		if err != nil {
			return
		}
		acts, err := ofpact.ActionsFromWire(v, dw, nil)
		if err != nil {
			return
		}
		if _, err := ofpact.ActionsToWire(v, acts, nil); err != nil {
			t.Logf("decoded %v but cannot encode back in %#x: %v", ofpact.ActionsString(acts, nil), v, err)
		}
	})
}
