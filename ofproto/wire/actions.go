package wire

import (
	"fmt"
)

// Action is one decoded OpenFlow action. Concrete types are the Action*
// structs of this package; each knows how to encode itself in every version
// where OVS accepts it (e.g. ActionGroup is NX subtype 40 in OpenFlow 1.0
// and OFPAT_GROUP in 1.1+).
type Action interface {
	// Name is the wire name of the action in version, e.g. "OFPAT_OUTPUT".
	Name(version uint8) string
	appendTo(version uint8, b []byte) ([]byte, error)
}

// Standard action types (OFPAT_* for 1.1+, OFPAT10_* for 1.0).
const (
	OFPAT10_OUTPUT       uint16 = 0
	OFPAT10_SET_VLAN_VID uint16 = 1
	OFPAT10_SET_VLAN_PCP uint16 = 2
	OFPAT10_STRIP_VLAN   uint16 = 3
	OFPAT10_SET_DL_SRC   uint16 = 4
	OFPAT10_SET_DL_DST   uint16 = 5
	OFPAT10_SET_NW_SRC   uint16 = 6
	OFPAT10_SET_NW_DST   uint16 = 7
	OFPAT10_SET_NW_TOS   uint16 = 8
	OFPAT10_SET_TP_SRC   uint16 = 9
	OFPAT10_SET_TP_DST   uint16 = 10
	OFPAT10_ENQUEUE      uint16 = 11
	OFPAT10_VENDOR       uint16 = 0xffff

	OFPAT_OUTPUT         uint16 = 0
	OFPAT_SET_VLAN_VID   uint16 = 1 // OF1.1, deprecated in 1.2+
	OFPAT_SET_VLAN_PCP   uint16 = 2
	OFPAT_SET_DL_SRC     uint16 = 3
	OFPAT_SET_DL_DST     uint16 = 4
	OFPAT_SET_NW_SRC     uint16 = 5
	OFPAT_SET_NW_DST     uint16 = 6
	OFPAT_SET_NW_TOS     uint16 = 7
	OFPAT_SET_NW_ECN     uint16 = 8
	OFPAT_SET_TP_SRC     uint16 = 9
	OFPAT_SET_TP_DST     uint16 = 10
	OFPAT_COPY_TTL_OUT   uint16 = 11
	OFPAT_COPY_TTL_IN    uint16 = 12
	OFPAT_SET_MPLS_LABEL uint16 = 13
	OFPAT_SET_MPLS_TC    uint16 = 14
	OFPAT_SET_MPLS_TTL   uint16 = 15
	OFPAT_DEC_MPLS_TTL   uint16 = 16
	OFPAT_PUSH_VLAN      uint16 = 17
	OFPAT_POP_VLAN       uint16 = 18
	OFPAT_PUSH_MPLS      uint16 = 19
	OFPAT_POP_MPLS       uint16 = 20
	OFPAT_SET_QUEUE      uint16 = 21
	OFPAT_GROUP          uint16 = 22
	OFPAT_SET_NW_TTL     uint16 = 23
	OFPAT_DEC_NW_TTL     uint16 = 24
	OFPAT_SET_FIELD      uint16 = 25
	OFPAT_PUSH_PBB       uint16 = 26
	OFPAT_POP_PBB        uint16 = 27
	OFPAT_COPY_FIELD     uint16 = 28 // OF1.5
	OFPAT_METER          uint16 = 29 // OF1.5
	OFPAT_EXPERIMENTER   uint16 = 0xffff
)

// Nicira action subtypes (NXAST_*), vendor NX_VENDOR_ID.
const (
	NXAST_RESUBMIT          uint16 = 1
	NXAST_SET_TUNNEL        uint16 = 2
	NXAST_SET_QUEUE         uint16 = 4 // OF1.0 only
	NXAST_POP_QUEUE         uint16 = 5
	NXAST_REG_MOVE          uint16 = 6
	NXAST_REG_LOAD          uint16 = 7
	NXAST_NOTE              uint16 = 8
	NXAST_SET_TUNNEL64      uint16 = 9
	NXAST_MULTIPATH         uint16 = 10
	NXAST_BUNDLE            uint16 = 12
	NXAST_BUNDLE_LOAD       uint16 = 13
	NXAST_RESUBMIT_TABLE    uint16 = 14
	NXAST_OUTPUT_REG        uint16 = 15
	NXAST_LEARN             uint16 = 16
	NXAST_EXIT              uint16 = 17
	NXAST_DEC_TTL           uint16 = 18 // OF1.0 only
	NXAST_FIN_TIMEOUT       uint16 = 19
	NXAST_CONTROLLER        uint16 = 20
	NXAST_DEC_TTL_CNT_IDS   uint16 = 21
	NXAST_WRITE_METADATA    uint16 = 22
	NXAST_PUSH_MPLS         uint16 = 23 // OF1.0 only
	NXAST_POP_MPLS          uint16 = 24 // OF1.0 only
	NXAST_SET_MPLS_TTL      uint16 = 25 // OF1.0 only
	NXAST_DEC_MPLS_TTL      uint16 = 26 // OF1.0 only
	NXAST_STACK_PUSH        uint16 = 27
	NXAST_STACK_POP         uint16 = 28
	NXAST_SAMPLE            uint16 = 29
	NXAST_SET_MPLS_LABEL    uint16 = 30 // OF1.0 only
	NXAST_SET_MPLS_TC       uint16 = 31 // OF1.0 only
	NXAST_OUTPUT_REG2       uint16 = 32
	NXAST_REG_LOAD2         uint16 = 33
	NXAST_CONJUNCTION       uint16 = 34
	NXAST_CT                uint16 = 35
	NXAST_NAT               uint16 = 36
	NXAST_CONTROLLER2       uint16 = 37
	NXAST_SAMPLE2           uint16 = 38
	NXAST_OUTPUT_TRUNC      uint16 = 39
	NXAST_GROUP             uint16 = 40 // OF1.0 only: OVS's group action for 1.0
	NXAST_SAMPLE3           uint16 = 41
	NXAST_CLONE             uint16 = 42
	NXAST_CT_CLEAR          uint16 = 43
	NXAST_RESUBMIT_TABLE_CT uint16 = 44
	NXAST_LEARN2            uint16 = 45
	NXAST_ENCAP             uint16 = 46
	NXAST_DECAP             uint16 = 47
	NXAST_DEC_NSH_TTL       uint16 = 48
	NXAST_CHECK_PKT_LARGER  uint16 = 49
	NXAST_DELETE_FIELD      uint16 = 50
	NXAST_SAMPLE4           uint16 = 51

	ONFACT_COPY_FIELD uint16 = 3200 // ONF experimenter copy_field for OF1.3
)

// Version sets for the raw action table.
const (
	vs10  = 1 << 0
	vs13  = 1 << 1
	vs15  = 1 << 2
	vs11p = vs13 | vs15
	vsAll = vs10 | vs13 | vs15
	vsNX0 = vs10 | vs13 // "NX1.0-1.4": dropped in 1.5
)

func vsBit(version uint8) int {
	switch version {
	case OFP10:
		return vs10
	case OFP13:
		return vs13
	case OFP15:
		return vs15
	}
	return 0
}

type rawID uint8

// rawEnc is one (versions, vendor, type) encoding of a raw action.
type rawEnc struct {
	versions int
	vendor   uint32 // 0 for standard actions
	code     uint16 // OFPAT type or vendor subtype
}

// rawDef mirrors one entry of OVS's "enum ofp_raw_action_type": its
// encodings and its length rules (fixed when maxLen == minLen).
type rawDef struct {
	name   string
	encs   []rawEnc
	minLen int
	maxLen int
	decode func(d *Decoder, a []byte, def *rawDef) (Action, error)
}

const varLen = 65528

func std(v int, code uint16) rawEnc { return rawEnc{versions: v, code: code} }
func nx(v int, code uint16) rawEnc  { return rawEnc{versions: v, vendor: NX_VENDOR_ID, code: code} }

const (
	rawNone rawID = iota
	rawOutput10
	rawOutput11
	rawSetVlanVid10
	rawSetVlanPcp10
	rawSetVlanVid11
	rawSetVlanPcp11
	rawPushVlan
	rawStripVlan10
	rawPopVlan
	rawSetDlSrc
	rawSetDlDst
	rawSetNwSrc
	rawSetNwDst
	rawSetNwTos
	rawSetNwEcn
	rawSetTpSrc
	rawSetTpDst
	rawEnqueue10
	rawSetMplsLabel
	rawSetMplsTc
	rawSetMplsTTL
	rawDecMplsTTL
	rawPushMpls
	rawPopMpls
	rawSetQueue
	rawGroup
	rawSetNwTTL
	rawDecNwTTL
	rawDecTTLCntIDs
	rawSetField12
	rawSetField15
	rawRegLoad
	rawRegLoad2
	rawCopyField15
	rawCopyField13
	rawRegMove
	rawMeter15
	rawResubmit
	rawResubmitTable
	rawResubmitTableCT
	rawSetTunnel
	rawSetTunnel64
	rawPopQueue
	rawNote
	rawMultipath
	rawBundle
	rawBundleLoad
	rawOutputReg
	rawOutputReg2
	rawLearn
	rawLearn2
	rawExit
	rawFinTimeout
	rawController
	rawController2
	rawWriteMetadata
	rawStackPush
	rawStackPop
	rawSample
	rawSample2
	rawSample3
	rawSample4
	rawConjunction
	rawCT
	rawNAT
	rawOutputTrunc
	rawClone
	rawCTClear
	rawEncap
	rawDecap
	rawDecNshTTL
	rawCheckPktLarger
	rawDeleteField
	rawCopyTTLOut
	rawCopyTTLIn
	rawCount
)

var rawDefs [rawCount]rawDef

func init() {
	fixed := func(id rawID, name string, n int, dec func(*Decoder, []byte, *rawDef) (Action, error), encs ...rawEnc) {
		rawDefs[id] = rawDef{name: name, encs: encs, minLen: n, maxLen: n, decode: dec}
	}
	variable := func(id rawID, name string, min int, dec func(*Decoder, []byte, *rawDef) (Action, error), encs ...rawEnc) {
		rawDefs[id] = rawDef{name: name, encs: encs, minLen: min, maxLen: varLen, decode: dec}
	}
	fixed(rawOutput10, "OFPAT_OUTPUT", 8, decodeOutput, std(vs10, OFPAT10_OUTPUT))
	fixed(rawOutput11, "OFPAT_OUTPUT", 16, decodeOutput, std(vs11p, OFPAT_OUTPUT))
	fixed(rawSetVlanVid10, "OFPAT_SET_VLAN_VID", 8, decodeArg, std(vs10, OFPAT10_SET_VLAN_VID))
	fixed(rawSetVlanPcp10, "OFPAT_SET_VLAN_PCP", 8, decodeArg, std(vs10, OFPAT10_SET_VLAN_PCP))
	fixed(rawSetVlanVid11, "OFPAT_SET_VLAN_VID", 8, decodeArg, std(vs11p, OFPAT_SET_VLAN_VID))
	fixed(rawSetVlanPcp11, "OFPAT_SET_VLAN_PCP", 8, decodeArg, std(vs11p, OFPAT_SET_VLAN_PCP))
	fixed(rawPushVlan, "OFPAT_PUSH_VLAN", 8, decodeArg, std(vs11p, OFPAT_PUSH_VLAN))
	fixed(rawStripVlan10, "OFPAT_STRIP_VLAN", 8, decodeArg, std(vs10, OFPAT10_STRIP_VLAN))
	fixed(rawPopVlan, "OFPAT_POP_VLAN", 8, decodeArg, std(vs11p, OFPAT_POP_VLAN))
	fixed(rawSetDlSrc, "OFPAT_SET_DL_SRC", 16, decodeDlAddr, std(vs10, OFPAT10_SET_DL_SRC), std(vs11p, OFPAT_SET_DL_SRC))
	fixed(rawSetDlDst, "OFPAT_SET_DL_DST", 16, decodeDlAddr, std(vs10, OFPAT10_SET_DL_DST), std(vs11p, OFPAT_SET_DL_DST))
	fixed(rawSetNwSrc, "OFPAT_SET_NW_SRC", 8, decodeArg, std(vs10, OFPAT10_SET_NW_SRC), std(vs11p, OFPAT_SET_NW_SRC))
	fixed(rawSetNwDst, "OFPAT_SET_NW_DST", 8, decodeArg, std(vs10, OFPAT10_SET_NW_DST), std(vs11p, OFPAT_SET_NW_DST))
	fixed(rawSetNwTos, "OFPAT_SET_NW_TOS", 8, decodeArg, std(vs10, OFPAT10_SET_NW_TOS), std(vs11p, OFPAT_SET_NW_TOS))
	fixed(rawSetNwEcn, "OFPAT_SET_NW_ECN", 8, decodeArg, std(vs11p, OFPAT_SET_NW_ECN))
	fixed(rawSetTpSrc, "OFPAT_SET_TP_SRC", 8, decodeArg, std(vs10, OFPAT10_SET_TP_SRC), std(vs11p, OFPAT_SET_TP_SRC))
	fixed(rawSetTpDst, "OFPAT_SET_TP_DST", 8, decodeArg, std(vs10, OFPAT10_SET_TP_DST), std(vs11p, OFPAT_SET_TP_DST))
	fixed(rawEnqueue10, "OFPAT_ENQUEUE", 16, decodeEnqueue, std(vs10, OFPAT10_ENQUEUE))
	fixed(rawSetMplsLabel, "OFPAT_SET_MPLS_LABEL", 0, decodeArg, nx(vs10, NXAST_SET_MPLS_LABEL), std(vs11p, OFPAT_SET_MPLS_LABEL))
	fixed(rawSetMplsTc, "OFPAT_SET_MPLS_TC", 0, decodeArg, nx(vs10, NXAST_SET_MPLS_TC), std(vs11p, OFPAT_SET_MPLS_TC))
	fixed(rawSetMplsTTL, "OFPAT_SET_MPLS_TTL", 0, decodeArg, nx(vs10, NXAST_SET_MPLS_TTL), std(vs11p, OFPAT_SET_MPLS_TTL))
	fixed(rawDecMplsTTL, "OFPAT_DEC_MPLS_TTL", 0, decodeArg, nx(vs10, NXAST_DEC_MPLS_TTL), std(vs11p, OFPAT_DEC_MPLS_TTL))
	// OpenFlow 1.1+ only; Open vSwitch does not implement them.
	fixed(rawCopyTTLOut, "OFPAT_COPY_TTL_OUT", 0, decodeArg, std(vs11p, OFPAT_COPY_TTL_OUT))
	fixed(rawCopyTTLIn, "OFPAT_COPY_TTL_IN", 0, decodeArg, std(vs11p, OFPAT_COPY_TTL_IN))
	fixed(rawPushMpls, "OFPAT_PUSH_MPLS", 0, decodeArg, nx(vs10, NXAST_PUSH_MPLS), std(vs11p, OFPAT_PUSH_MPLS))
	fixed(rawPopMpls, "OFPAT_POP_MPLS", 0, decodeArg, nx(vs10, NXAST_POP_MPLS), std(vs11p, OFPAT_POP_MPLS))
	fixed(rawSetQueue, "OFPAT_SET_QUEUE", 0, decodeArg, nx(vs10, NXAST_SET_QUEUE), std(vs11p, OFPAT_SET_QUEUE))
	fixed(rawGroup, "OFPAT_GROUP", 0, decodeArg, nx(vs10, NXAST_GROUP), std(vs11p, OFPAT_GROUP))
	fixed(rawSetNwTTL, "OFPAT_SET_NW_TTL", 8, decodeArg, std(vs11p, OFPAT_SET_NW_TTL))
	fixed(rawDecNwTTL, "OFPAT_DEC_NW_TTL", 0, decodeArg, nx(vs10, NXAST_DEC_TTL), std(vs11p, OFPAT_DEC_NW_TTL))
	variable(rawDecTTLCntIDs, "NXAST_DEC_TTL_CNT_IDS", 16, decodeCntIDs, nx(vsAll, NXAST_DEC_TTL_CNT_IDS))
	variable(rawSetField12, "OFPAT_SET_FIELD", 8, decodeSetField, std(vs13, OFPAT_SET_FIELD))
	variable(rawSetField15, "OFPAT_SET_FIELD", 8, decodeSetField, std(vs15, OFPAT_SET_FIELD))
	fixed(rawRegLoad, "NXAST_REG_LOAD", 24, decodeRegLoad, nx(vsNX0, NXAST_REG_LOAD))
	variable(rawRegLoad2, "NXAST_REG_LOAD2", 16, decodeSetField, nx(vsNX0, NXAST_REG_LOAD2))
	variable(rawCopyField15, "OFPAT_COPY_FIELD", 16, decodeRegMove, std(vs15, OFPAT_COPY_FIELD))
	variable(rawCopyField13, "ONFACT_COPY_FIELD", 24, decodeRegMove, rawEnc{versions: vs13, vendor: ONF_VENDOR_ID, code: ONFACT_COPY_FIELD})
	variable(rawRegMove, "NXAST_REG_MOVE", 16, decodeRegMove, nx(vsNX0, NXAST_REG_MOVE))
	fixed(rawMeter15, "OFPAT_METER", 8, decodeArg, std(vs15, OFPAT_METER))
	fixed(rawResubmit, "NXAST_RESUBMIT", 16, decodeResubmit, nx(vsAll, NXAST_RESUBMIT))
	fixed(rawResubmitTable, "NXAST_RESUBMIT_TABLE", 16, decodeResubmit, nx(vsAll, NXAST_RESUBMIT_TABLE))
	fixed(rawResubmitTableCT, "NXAST_RESUBMIT_TABLE_CT", 16, decodeResubmit, nx(vsAll, NXAST_RESUBMIT_TABLE_CT))
	fixed(rawSetTunnel, "NXAST_SET_TUNNEL", 16, decodeArg, nx(vsAll, NXAST_SET_TUNNEL))
	fixed(rawSetTunnel64, "NXAST_SET_TUNNEL64", 24, decodeArg, nx(vsAll, NXAST_SET_TUNNEL64))
	fixed(rawPopQueue, "NXAST_POP_QUEUE", 16, decodeArg, nx(vsAll, NXAST_POP_QUEUE))
	variable(rawNote, "NXAST_NOTE", 16, decodeNote, nx(vsAll, NXAST_NOTE))
	fixed(rawMultipath, "NXAST_MULTIPATH", 32, decodeMultipath, nx(vsAll, NXAST_MULTIPATH))
	variable(rawBundle, "NXAST_BUNDLE", 32, decodeRaw, nx(vsAll, NXAST_BUNDLE))
	variable(rawBundleLoad, "NXAST_BUNDLE_LOAD", 32, decodeRaw, nx(vsAll, NXAST_BUNDLE_LOAD))
	fixed(rawOutputReg, "NXAST_OUTPUT_REG", 24, decodeOutputReg, nx(vsAll, NXAST_OUTPUT_REG))
	variable(rawOutputReg2, "NXAST_OUTPUT_REG2", 24, decodeOutputReg, nx(vsAll, NXAST_OUTPUT_REG2))
	variable(rawLearn, "NXAST_LEARN", 32, decodeLearn, nx(vsAll, NXAST_LEARN))
	variable(rawLearn2, "NXAST_LEARN2", 40, decodeRaw, nx(vsAll, NXAST_LEARN2))
	fixed(rawExit, "NXAST_EXIT", 16, decodeArg, nx(vsAll, NXAST_EXIT))
	fixed(rawFinTimeout, "NXAST_FIN_TIMEOUT", 16, decodeFinTimeout, nx(vsAll, NXAST_FIN_TIMEOUT))
	fixed(rawController, "NXAST_CONTROLLER", 16, decodeController, nx(vsAll, NXAST_CONTROLLER))
	variable(rawController2, "NXAST_CONTROLLER2", 16, decodeController2, nx(vsAll, NXAST_CONTROLLER2))
	fixed(rawWriteMetadata, "NXAST_WRITE_METADATA", 32, decodeWriteMetadata, nx(vsAll, NXAST_WRITE_METADATA))
	fixed(rawStackPush, "NXAST_STACK_PUSH", 24, decodeStack, nx(vsAll, NXAST_STACK_PUSH))
	fixed(rawStackPop, "NXAST_STACK_POP", 24, decodeStack, nx(vsAll, NXAST_STACK_POP))
	fixed(rawSample, "NXAST_SAMPLE", 24, decodeSample, nx(vsAll, NXAST_SAMPLE))
	fixed(rawSample2, "NXAST_SAMPLE2", 32, decodeRaw, nx(vsAll, NXAST_SAMPLE2))
	fixed(rawSample3, "NXAST_SAMPLE3", 32, decodeRaw, nx(vsAll, NXAST_SAMPLE3))
	variable(rawSample4, "NXAST_SAMPLE4", 40, decodeRaw, nx(vsAll, NXAST_SAMPLE4))
	fixed(rawConjunction, "NXAST_CONJUNCTION", 16, decodeConjunction, nx(vsAll, NXAST_CONJUNCTION))
	variable(rawCT, "NXAST_CT", 24, decodeCT, nx(vsAll, NXAST_CT))
	variable(rawNAT, "NXAST_NAT", 16, decodeNAT, nx(vsAll, NXAST_NAT))
	fixed(rawOutputTrunc, "NXAST_OUTPUT_TRUNC", 16, decodeRaw, nx(vsAll, NXAST_OUTPUT_TRUNC))
	variable(rawClone, "NXAST_CLONE", 16, decodeRaw, nx(vsAll, NXAST_CLONE))
	fixed(rawCTClear, "NXAST_CT_CLEAR", 16, decodeArg, nx(vsAll, NXAST_CT_CLEAR))
	variable(rawEncap, "NXAST_ENCAP", 16, decodeRaw, nx(vs11p, NXAST_ENCAP))
	fixed(rawDecap, "NXAST_DECAP", 16, decodeRaw, nx(vs11p, NXAST_DECAP))
	fixed(rawDecNshTTL, "NXAST_DEC_NSH_TTL", 16, decodeArg, nx(vs11p, NXAST_DEC_NSH_TTL))
	variable(rawCheckPktLarger, "NXAST_CHECK_PKT_LARGER", 24, decodeRaw, nx(vsAll, NXAST_CHECK_PKT_LARGER))
	variable(rawDeleteField, "NXAST_DELETE_FIELD", 24, decodeRaw, nx(vsAll, NXAST_DELETE_FIELD))

	// Integer-argument actions whose size was left 0 above are 8 bytes in
	// their standard encoding and 16 (24 for 64-bit) in their NX encoding;
	// the per-encoding size is computed by argLayout.
	for _, v := range []uint8{OFP10, OFP13, OFP15} {
		vb := vsBit(v)
		for i := range rawDefs {
			for _, e := range rawDefs[i].encs {
				if e.versions&vb != 0 {
					rawLookup[lookupKey(vb, e.vendor, e.code)] = rawID(i)
				}
			}
		}
	}
}

// rawLookup maps (version bit, vendor, type) to the raw action.
var rawLookup = map[uint64]rawID{}

func rawKey(vs int, vendor uint32, code uint16) uint64 {
	return uint64(vs)<<48 | uint64(vendor)<<16 | uint64(code)
}
func lookupKey(vb int, vendor uint32, code uint16) uint64 { return rawKey(vb, vendor, code) }

// encFor returns the encoding of raw id in version.
func encFor(id rawID, version uint8) (rawEnc, bool) {
	vb := vsBit(version)
	for _, e := range rawDefs[id].encs {
		if e.versions&vb != 0 {
			return e, true
		}
	}
	return rawEnc{}, false
}

// argLayout returns, for integer-argument actions, the argument offset and
// width and the total length of the encoding e (OVS's generated layout:
// standard actions put the argument at offset 4 in 8 bytes; NX actions put
// it after the 10-byte header aligned to its size).
func argLayout(id rawID, e rawEnc) (off, width, total int) {
	width = rawArgWidth[id]
	if e.vendor == 0 {
		if width == 0 {
			return 4, 0, 8
		}
		return 4, width, 8
	}
	switch width {
	case 0:
		return 10, 0, 16
	case 1, 2:
		return 10, width, 16
	case 4:
		return 12, 4, 16
	default:
		return 16, 8, 24
	}
}

var rawArgWidth = map[rawID]int{
	rawSetVlanVid10: 2, rawSetVlanPcp10: 1, rawSetVlanVid11: 2, rawSetVlanPcp11: 1,
	rawPushVlan: 2, rawSetNwSrc: 4, rawSetNwDst: 4, rawSetNwTos: 1, rawSetNwEcn: 1,
	rawSetTpSrc: 2, rawSetTpDst: 2, rawSetMplsLabel: 4, rawSetMplsTc: 1, rawSetMplsTTL: 1,
	rawPushMpls: 2, rawPopMpls: 2, rawSetQueue: 4, rawGroup: 4, rawSetNwTTL: 1,
	rawMeter15: 4, rawSetTunnel: 4, rawSetTunnel64: 8,
}

// actionHeader appends type/len(/vendor/subtype) for encoding e with total
// length n (patched later for variable actions when n == 0).
func actionHeader(b []byte, e rawEnc, n int) []byte {
	if e.vendor == 0 {
		b = put16(b, e.code)
		return put16(b, uint16(n))
	}
	b = put16(b, OFPAT_EXPERIMENTER)
	b = put16(b, uint16(n))
	b = put32(b, e.vendor)
	return put16(b, e.code)
}

// beginAction starts an action of raw id in version and returns b and the
// start offset; finishAction pads to 8 and stores the length.
func beginAction(b []byte, id rawID, version uint8) ([]byte, int, error) {
	e, ok := encFor(id, version)
	if !ok {
		return b, 0, fmt.Errorf("%s cannot be encoded in OpenFlow version %#x", rawDefs[id].name, version)
	}
	start := len(b)
	return actionHeader(b, e, 0), start, nil
}

func finishAction(b []byte, start int) ([]byte, error) {
	b = pad8(b, start)
	return b, setLen16(b, start+2, start)
}

// DecodeActions decodes an action list (no pooling).
func DecodeActions(version uint8, b []byte) ([]Action, error) {
	d := Decoder{version: version}
	return d.DecodeActions(b)
}

// DecodeActions decodes an OpenFlow action list of exactly len(b) bytes in
// the decoder's current version, following ofpacts_decode(): every action's
// length must fit, be a multiple of 8 and be valid for its type.
func (d *Decoder) DecodeActions(b []byte) ([]Action, error) {
	if len(b)%8 != 0 {
		return nil, errf(d.version, OFPBRC_BAD_LEN, "actions length %d is not a multiple of 8", len(b))
	}
	n := countActions(b)
	out := sliceIn(d.actionArena(), n)
	i := 0
	for off := 0; off < len(b); {
		a, l, err := d.decodeAction(b[off:])
		if err != nil {
			return nil, fmt.Errorf("action at offset %d: %w", off, err)
		}
		out[i] = a
		i++
		off += l
	}
	return out[:i], nil
}

func countActions(b []byte) int {
	n := 0
	for len(b) >= 4 {
		l := int(be16(b[2:]))
		if l < 8 || l > len(b) {
			return n + 1
		}
		b = b[l:]
		n++
	}
	return n
}

// decodeAction decodes one action at the start of b, returning its length.
func (d *Decoder) decodeAction(b []byte) (Action, int, error) {
	v := d.version
	if len(b) < 8 {
		return nil, 0, errf(v, OFPBAC_BAD_LEN, "action header truncated (%d bytes)", len(b))
	}
	typ := be16(b)
	var vendor uint32
	code := typ
	if typ == OFPAT_EXPERIMENTER {
		vendor = be32(b[4:])
		if vendor != NX_VENDOR_ID && vendor != ONF_VENDOR_ID {
			return nil, 0, errf(v, OFPBAC_BAD_VENDOR, "unknown action vendor %#x", vendor)
		}
		if len(b) < 16 {
			return nil, 0, errf(v, OFPBAC_BAD_LEN, "vendor action header truncated (%d bytes)", len(b))
		}
		code = be16(b[8:])
	}
	id, ok := rawLookup[lookupKey(vsBit(v), vendor, code)]
	if !ok {
		if vendor != 0 {
			return nil, 0, errf(v, OFPBAC_BAD_VENDOR_TYPE, "unknown action for vendor %#x and type %d in version %#x", vendor, code, v)
		}
		return nil, 0, errf(v, OFPBAC_BAD_TYPE, "unknown action type %d in version %#x", code, v)
	}
	def := &rawDefs[id]
	l := int(be16(b[2:]))
	minL, maxL := def.minLen, def.maxLen
	if minL == 0 { // integer-argument action: size depends on the encoding
		e, _ := encFor(id, v)
		_, _, total := argLayout(id, e)
		minL, maxL = total, total
	}
	if l > len(b) {
		return nil, 0, errf(v, OFPBAC_BAD_LEN, "%s length %d exceeds the %d bytes left", def.name, l, len(b))
	}
	if l < minL || l > maxL {
		return nil, 0, errf(v, OFPBAC_BAD_LEN, "%s length %d not in valid range [%d,%d]", def.name, l, minL, maxL)
	}
	if l%8 != 0 {
		return nil, 0, errf(v, OFPBAC_BAD_LEN, "%s length %d is not a multiple of 8", def.name, l)
	}
	a, err := def.decode(d, b[:l], def)
	if err != nil {
		return nil, 0, err
	}
	return a, l, nil
}

// AppendActions encodes actions in version.
func AppendActions(b []byte, version uint8, actions []Action) ([]byte, error) {
	for i, a := range actions {
		var err error
		if b, err = a.appendTo(version, b); err != nil {
			return b, fmt.Errorf("action %d (%T): %w", i, a, err)
		}
	}
	return b, nil
}

// rawOf finds which raw id a decoded action buffer corresponds to.
func (d *Decoder) rawOf(a []byte) rawID {
	typ := be16(a)
	var vendor uint32
	code := typ
	if typ == OFPAT_EXPERIMENTER {
		vendor, code = be32(a[4:]), be16(a[8:])
	}
	return rawLookup[lookupKey(vsBit(d.version), vendor, code)]
}
