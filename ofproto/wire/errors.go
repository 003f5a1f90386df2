package wire

import (
	"fmt"
)

// Error types (ofp_error_msg.type). OpenFlow 1.0 numbers its types
// differently from 1.1+; the version-aware table below holds the exact
// numbers per version.
const (
	OFPET_HELLO_FAILED          uint16 = 0
	OFPET_BAD_REQUEST           uint16 = 1
	OFPET_BAD_ACTION            uint16 = 2
	OFPET_BAD_INSTRUCTION       uint16 = 3
	OFPET_BAD_MATCH             uint16 = 4
	OFPET_FLOW_MOD_FAILED       uint16 = 5
	OFPET_GROUP_MOD_FAILED      uint16 = 6
	OFPET_PORT_MOD_FAILED       uint16 = 7
	OFPET_TABLE_MOD_FAILED      uint16 = 8
	OFPET_QUEUE_OP_FAILED       uint16 = 9
	OFPET_SWITCH_CONFIG_FAILED  uint16 = 10
	OFPET_ROLE_REQUEST_FAILED   uint16 = 11
	OFPET_METER_MOD_FAILED      uint16 = 12
	OFPET_TABLE_FEATURES_FAILED uint16 = 13
	OFPET_BAD_PROPERTY          uint16 = 14 // OF1.4+
	OFPET_ASYNC_CONFIG_FAILED   uint16 = 15 // OF1.4+
	OFPET_FLOW_MONITOR_FAILED   uint16 = 16 // OF1.4+
	OFPET_BUNDLE_FAILED         uint16 = 17 // OF1.4+
	OFPET_EXPERIMENTER          uint16 = 0xffff

	OFPET10_FLOW_MOD_FAILED uint16 = 3
	OFPET10_PORT_MOD_FAILED uint16 = 4
	OFPET10_QUEUE_OP_FAILED uint16 = 5

	// NXET_VENDOR/NXVC_VENDOR_ERROR carry Nicira errors in OpenFlow 1.0 and
	// 1.1: the body starts with struct nx_vendor_error {vendor, type, code}.
	NXET_VENDOR       uint16 = 0xb0c2
	NXVC_VENDOR_ERROR uint16 = 0
)

// ErrorCode names one OpenFlow error the way Open vSwitch does (OFPERR_*
// without the prefix). Its wire encoding depends on the version.
type ErrorCode uint16

// errWire is the encoding of one error in one version.
type errWire struct {
	ok     bool
	vendor uint32 // 0 = standard error
	exp    bool   // OFPET_EXPERIMENTER form: typ is the exp_type
	typ    uint16
	code   uint16
}

func errStd(t, c uint16) errWire              { return errWire{ok: true, typ: t, code: c} }
func errVendor(v uint32, t, c uint16) errWire { return errWire{ok: true, vendor: v, typ: t, code: c} }
func errExp(v uint32, expType uint16) errWire {
	return errWire{ok: true, vendor: v, exp: true, typ: expType}
}

var errNone = errWire{}

type errorInfo struct {
	name string
	wire [3]errWire // OF1.0, OF1.3, OF1.5
}

func versionIndex(version uint8) int {
	switch version {
	case OFP10:
		return 0
	case OFP13:
		return 1
	case OFP15:
		return 2
	}
	return -1
}

// String returns the OVS name, e.g. "OFPBAC_BAD_LEN".
func (e ErrorCode) String() string {
	if int(e) < len(errorTable) && errorTable[e].name != "" {
		return errorTable[e].name
	}
	return fmt.Sprintf("ErrorCode(%d)", uint16(e))
}

// OFPError is an OpenFlow error as it goes on the wire in one version. For
// standard errors Type/Code are ofp_error_msg's type and code. For vendor
// errors Experimenter is the vendor id and Type/Code are the vendor's: in
// OpenFlow 1.3/1.5 those are sent as OFPET_EXPERIMENTER with code = exp_type
// (Type here, Code 0); in OpenFlow 1.0 as NXET_VENDOR + nx_vendor_error.
type OFPError struct {
	Version      uint8
	Code         uint16
	Type         uint16
	Experimenter uint32
	Sym          ErrorCode // symbolic name, 0 when unknown
	Detail       string    // what was wrong, for logs
}

// newErr builds the wire error for sym in version. When sym has no encoding
// in that version it falls back to NXBRC_UNENCODABLE_ERROR as OVS does.
func newErr(version uint8, sym ErrorCode) *OFPError {
	vi := versionIndex(version)
	if vi < 0 {
		vi = 0 // OVS falls back to the OF1.0 domain for unknown versions.
	}
	w := errorTable[sym].wire[vi]
	e := &OFPError{Version: version, Sym: sym}
	if !w.ok {
		e.Detail = sym.String() + " is not encodable in this version"
		w = errorTable[NXBRC_UNENCODABLE_ERROR].wire[vi]
	}
	e.Type, e.Code, e.Experimenter = w.typ, w.code, w.vendor
	return e
}

// errf is newErr with a detail message.
func errf(version uint8, sym ErrorCode, format string, args ...any) *OFPError {
	e := newErr(version, sym)
	e.Detail = fmt.Sprintf(format, args...)
	return e
}

// NewError returns the *OFPError for sym as encoded in version.
func NewError(version uint8, sym ErrorCode) *OFPError { return newErr(version, sym) }

func (e *OFPError) Error() string {
	s := "openflow error " + e.Sym.String()
	if e.Experimenter != 0 {
		s += fmt.Sprintf(" (vendor %#x type %d code %d)", e.Experimenter, e.Type, e.Code)
	} else {
		s += fmt.Sprintf(" (type %d code %d)", e.Type, e.Code)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Is reports whether target is an *OFPError for the same symbolic error (or,
// if either lacks a symbol, the same wire triple).
func (e *OFPError) Is(target error) bool {
	t, ok := target.(*OFPError)
	if !ok {
		return false
	}
	if e.Sym != 0 && t.Sym != 0 {
		return e.Sym == t.Sym
	}
	return e.Type == t.Type && e.Code == t.Code && e.Experimenter == t.Experimenter
}

// LookupError maps a wire error back to its symbolic name. For vendor errors
// pass the vendor id and its (type, code); for OFPET_EXPERIMENTER errors pass
// exp_type as typ and 0 as code.
func LookupError(version uint8, vendor uint32, typ, code uint16) (ErrorCode, bool) {
	vi := versionIndex(version)
	if vi < 0 {
		return 0, false
	}
	for i := 1; i < len(errorTable); i++ {
		w := errorTable[i].wire[vi]
		if w.ok && w.vendor == vendor && w.typ == typ && w.code == code {
			return ErrorCode(i), true
		}
	}
	return 0, false
}

// ErrorMsg is OFPT_ERROR. Data usually holds (a prefix of) the offending
// request. For OpenFlow 1.0 vendor errors (NXET_VENDOR) and 1.3+
// OFPET_EXPERIMENTER errors the vendor part is decoded into Experimenter,
// VendorType and VendorCode (VendorCode is unused for OFPET_EXPERIMENTER).
type ErrorMsg struct {
	Type         uint16
	Code         uint16
	Experimenter uint32
	VendorType   uint16
	VendorCode   uint16
	Data         []byte
}

// ErrorDataLen is the most of a failed request an error reply can echo:
// OVS's ofperr_encode_reply quotes the whole request, as much of it as
// fits in the error message (64 KiB less the error's own header).
const ErrorDataLen = 0xffff - HeaderLen - 4

// ErrorMsgFor builds the ErrorMsg OVS would send for err (an *OFPError) in
// reply to request, which it quotes whole as far as it fits.
func ErrorMsgFor(e *OFPError, request []byte) *ErrorMsg {
	m := &ErrorMsg{}
	switch {
	case e.Experimenter == 0:
		m.Type, m.Code = e.Type, e.Code
	case e.Version == OFP10:
		m.Type, m.Code = NXET_VENDOR, NXVC_VENDOR_ERROR
		m.Experimenter, m.VendorType, m.VendorCode = e.Experimenter, e.Type, e.Code
	default:
		m.Type, m.Code = OFPET_EXPERIMENTER, e.Type
		m.Experimenter = e.Experimenter
	}
	room := ErrorDataLen
	switch {
	case m.Type == NXET_VENDOR && m.Code == NXVC_VENDOR_ERROR && e.Experimenter != 0:
		room -= 8 // nx_vendor_error
	case e.Experimenter != 0:
		room -= 4 // experimenter id
	}
	if len(request) > room {
		request = request[:room]
	}
	m.Data = request
	return m
}

// Err returns the *OFPError the message describes in version.
func (m *ErrorMsg) Err(version uint8) *OFPError {
	e := &OFPError{Version: version, Type: m.Type, Code: m.Code}
	switch {
	case m.Type == NXET_VENDOR && m.Code == NXVC_VENDOR_ERROR && version < OFP12:
		e.Experimenter, e.Type, e.Code = m.Experimenter, m.VendorType, m.VendorCode
	case m.Type == OFPET_EXPERIMENTER && version >= OFP12:
		e.Experimenter, e.Type, e.Code = m.Experimenter, m.Code, 0
	}
	e.Sym, _ = LookupError(version, e.Experimenter, e.Type, e.Code)
	return e
}

func (m *ErrorMsg) MessageType(version uint8) uint8 { return OFPT_ERROR }

func (m *ErrorMsg) EncodeBody(version uint8, b []byte) ([]byte, error) {
	b = put16(b, m.Type)
	b = put16(b, m.Code)
	switch {
	case m.Type == NXET_VENDOR && m.Code == NXVC_VENDOR_ERROR && version < OFP12:
		b = put32(b, m.Experimenter)
		b = put16(b, m.VendorType)
		b = put16(b, m.VendorCode)
	case m.Type == OFPET_EXPERIMENTER && version >= OFP12:
		b = put32(b, m.Experimenter)
	}
	return append(b, m.Data...), nil
}

func decodeErrorMsg(version uint8, body []byte) (*ErrorMsg, error) {
	if len(body) < 4 {
		return nil, errf(version, OFPBRC_BAD_LEN, "error message body %d bytes, need 4", len(body))
	}
	m := &ErrorMsg{Type: be16(body), Code: be16(body[2:])}
	body = body[4:]
	switch {
	case m.Type == NXET_VENDOR && m.Code == NXVC_VENDOR_ERROR && version < OFP12:
		if len(body) < 8 {
			return nil, errf(version, OFPBRC_BAD_LEN, "nx_vendor_error truncated")
		}
		m.Experimenter, m.VendorType, m.VendorCode = be32(body), be16(body[4:]), be16(body[6:])
		body = body[8:]
	case m.Type == OFPET_EXPERIMENTER && version >= OFP12:
		if len(body) < 4 {
			return nil, errf(version, OFPBRC_BAD_LEN, "experimenter error truncated")
		}
		m.Experimenter = be32(body)
		body = body[4:]
	}
	m.Data = body
	return m, nil
}

// Symbolic errors, named and numbered per Open vSwitch's ofp-errors.h.
const (
	OFPHFC_INCOMPATIBLE ErrorCode = iota + 1
	OFPHFC_EPERM
	OFPBRC_BAD_VERSION
	OFPBRC_BAD_TYPE
	OFPBRC_BAD_STAT
	OFPBRC_BAD_VENDOR
	OFPBRC_BAD_SUBTYPE
	OFPBRC_EPERM
	OFPBRC_BAD_LEN
	OFPBRC_BUFFER_EMPTY
	OFPBRC_BUFFER_UNKNOWN
	OFPBRC_BAD_TABLE_ID
	OFPBRC_IS_SECONDARY
	OFPBRC_BAD_PORT
	OFPBRC_BAD_PACKET
	OFPBRC_MULTIPART_BUFFER_OVERFLOW
	OFPBRC_MULTIPART_REQUEST_TIMEOUT
	OFPBRC_MULTIPART_REPLY_TIMEOUT
	OFPBRC_MULTIPART_BAD_SCHED
	OFPBRC_PIPELINE_FIELDS_ONLY
	OFPBRC_UNKNOWN
	NXBRC_NXM_INVALID
	NXBRC_NXM_BAD_TYPE
	NXBRC_MUST_BE_ZERO
	NXBRC_BAD_REASON
	NXBRC_FM_BAD_EVENT
	NXBRC_UNENCODABLE_ERROR
	OFPBAC_BAD_TYPE
	OFPBAC_BAD_LEN
	OFPBAC_BAD_VENDOR
	OFPBAC_BAD_VENDOR_TYPE
	OFPBAC_BAD_OUT_PORT
	OFPBAC_BAD_ARGUMENT
	OFPBAC_EPERM
	OFPBAC_TOO_MANY
	OFPBAC_BAD_QUEUE
	OFPBAC_BAD_OUT_GROUP
	OFPBAC_MATCH_INCONSISTENT
	OFPBAC_UNSUPPORTED_ORDER
	OFPBAC_BAD_TAG
	OFPBAC_BAD_SET_TYPE
	OFPBAC_BAD_SET_LEN
	OFPBAC_BAD_SET_ARGUMENT
	OFPBAC_BAD_SET_MASK
	OFPBAC_BAD_METER
	NXBAC_MUST_BE_ZERO
	NXBAC_BAD_CONJUNCTION
	NXBAC_BAD_HEADER_TYPE
	NXBAC_UNKNOWN_ED_PROP
	NXBAC_BAD_ED_PROP
	NXBAC_CT_DATAPATH_SUPPORT
	OFPBIC_UNKNOWN_INST
	OFPBIC_UNSUP_INST
	OFPBIC_BAD_TABLE_ID
	OFPBIC_UNSUP_METADATA
	OFPBIC_UNSUP_METADATA_MASK
	OFPBIC_BAD_EXPERIMENTER
	OFPBIC_BAD_EXP_TYPE
	OFPBIC_BAD_LEN
	OFPBIC_EPERM
	OFPBIC_DUP_INST
	OFPBMC_BAD_TYPE
	OFPBMC_BAD_LEN
	OFPBMC_BAD_TAG
	OFPBMC_BAD_DL_ADDR_MASK
	OFPBMC_BAD_NW_ADDR_MASK
	OFPBMC_BAD_WILDCARDS
	OFPBMC_BAD_FIELD
	OFPBMC_BAD_VALUE
	OFPBMC_BAD_MASK
	OFPBMC_BAD_PREREQ
	OFPBMC_DUP_FIELD
	OFPBMC_EPERM
	NXBMC_CT_DATAPATH_SUPPORT
	OFPFMFC_UNKNOWN
	OFPFMFC_TABLE_FULL
	OFPFMFC_BAD_TABLE_ID
	OFPFMFC_OVERLAP
	OFPFMFC_EPERM
	OFPFMFC_BAD_TIMEOUT
	OFPFMFC_BAD_EMERG_TIMEOUT
	OFPFMFC_BAD_COMMAND
	OFPFMFC_BAD_FLAGS
	OFPFMFC_CANT_SYNC
	OFPFMFC_BAD_PRIORITY
	OFPFMFC_IS_SYNC
	OFPFMFC_UNSUPPORTED
	NXFMFC_HARDWARE
	NXFMFC_BAD_TABLE_ID
	NXFMFC_INVALID_TLV_FIELD
	OFPGMFC_GROUP_EXISTS
	OFPGMFC_INVALID_GROUP
	OFPGMFC_WEIGHT_UNSUPPORTED
	OFPGMFC_OUT_OF_GROUPS
	OFPGMFC_OUT_OF_BUCKETS
	OFPGMFC_CHAINING_UNSUPPORTED
	OFPGMFC_WATCH_UNSUPPORTED
	OFPGMFC_LOOP
	OFPGMFC_UNKNOWN_GROUP
	OFPGMFC_CHAINED_GROUP
	OFPGMFC_BAD_TYPE
	OFPGMFC_BAD_COMMAND
	OFPGMFC_BAD_BUCKET
	OFPGMFC_BAD_WATCH
	OFPGMFC_EPERM
	OFPGMFC_UNKNOWN_BUCKET
	OFPGMFC_BUCKET_EXISTS
	OFPPMFC_BAD_PORT
	OFPPMFC_BAD_HW_ADDR
	OFPPMFC_BAD_CONFIG
	OFPPMFC_BAD_ADVERTISE
	OFPPMFC_EPERM
	OFPTMFC_BAD_TABLE
	OFPTMFC_BAD_CONFIG
	OFPTMFC_EPERM
	OFPQOFC_BAD_PORT
	OFPQOFC_BAD_QUEUE
	OFPQOFC_EPERM
	NXQOFC_QUEUE_ERROR
	OFPSCFC_BAD_FLAGS
	OFPSCFC_BAD_LEN
	OFPSCFC_EPERM
	OFPRRFC_STALE
	OFPRRFC_UNSUP
	OFPRRFC_BAD_ROLE
	OFPRRFC_ID_UNSUP
	OFPRRFC_ID_IN_USE
	OFPMMFC_UNKNOWN
	OFPMMFC_METER_EXISTS
	OFPMMFC_INVALID_METER
	OFPMMFC_UNKNOWN_METER
	OFPMMFC_BAD_COMMAND
	OFPMMFC_BAD_FLAGS
	OFPMMFC_BAD_RATE
	OFPMMFC_BAD_BURST
	OFPMMFC_BAD_BAND
	OFPMMFC_BAD_BAND_VALUE
	OFPMMFC_OUT_OF_METERS
	OFPMMFC_OUT_OF_BANDS
	OFPTFFC_BAD_TABLE
	OFPTFFC_BAD_METADATA
	OFPTFFC_EPERM
	OFPTFFC_BAD_CAPA
	OFPTFFC_BAD_MAX_ENT
	OFPTFFC_BAD_FEATURES
	OFPTFFC_BAD_COMMAND
	OFPTFFC_TOO_MANY
	NXTFFC_DUP_TABLE
	OFPBPC_BAD_TYPE
	OFPBPC_BAD_LEN
	OFPBPC_BAD_VALUE
	OFPBPC_TOO_MANY
	OFPBPC_DUP_TYPE
	OFPBPC_BAD_EXPERIMENTER
	OFPBPC_BAD_EXP_TYPE
	OFPBPC_BAD_EXP_VALUE
	OFPBPC_EPERM
	OFPACFC_INVALID
	OFPACFC_UNSUPPORTED
	OFPACFC_EPERM
	OFPBFC_UNKNOWN
	OFPBFC_EPERM
	OFPBFC_BAD_ID
	OFPBFC_BUNDLE_EXIST
	OFPBFC_BUNDLE_CLOSED
	OFPBFC_OUT_OF_BUNDLES
	OFPBFC_BAD_TYPE
	OFPBFC_BAD_FLAGS
	OFPBFC_MSG_BAD_LEN
	OFPBFC_MSG_BAD_XID
	OFPBFC_MSG_UNSUP
	OFPBFC_MSG_CONFLICT
	OFPBFC_MSG_TOO_MANY
	OFPBFC_MSG_FAILED
	OFPBFC_TIMEOUT
	OFPBFC_BUNDLE_IN_PROGRESS
	OFPBFC_SCHED_NOT_SUPPORTED
	OFPBFC_SCHED_FUTURE
	OFPBFC_SCHED_PAST
	OFPBFC_BAD_VERSION
	OFPMOFC_UNKNOWN
	OFPMOFC_MONITOR_EXISTS
	OFPMOFC_INVALID_MONITOR
	OFPMOFC_UNKNOWN_MONITOR
	OFPMOFC_BAD_COMMAND
	OFPMOFC_BAD_FLAGS
	OFPMOFC_BAD_TABLE_ID
	OFPMOFC_BAD_OUT
	NXTTMFC_BAD_COMMAND
	NXTTMFC_BAD_OPT_LEN
	NXTTMFC_BAD_FIELD_IDX
	NXTTMFC_TABLE_FULL
	NXTTMFC_ALREADY_MAPPED
	NXTTMFC_DUP_ENTRY
	NXTTMFC_INVALID_TLV_DEL
	NXR_NOT_SUPPORTED
	NXR_STALE
	NXST_NOT_CONFIGURED
)

var errorTable = [...]errorInfo{
	OFPHFC_INCOMPATIBLE:              {"OFPHFC_INCOMPATIBLE", [3]errWire{errStd(0, 0), errStd(0, 0), errStd(0, 0)}},
	OFPHFC_EPERM:                     {"OFPHFC_EPERM", [3]errWire{errStd(0, 1), errStd(0, 1), errStd(0, 1)}},
	OFPBRC_BAD_VERSION:               {"OFPBRC_BAD_VERSION", [3]errWire{errStd(1, 0), errStd(1, 0), errStd(1, 0)}},
	OFPBRC_BAD_TYPE:                  {"OFPBRC_BAD_TYPE", [3]errWire{errStd(1, 1), errStd(1, 1), errStd(1, 1)}},
	OFPBRC_BAD_STAT:                  {"OFPBRC_BAD_STAT", [3]errWire{errStd(1, 2), errStd(1, 2), errStd(1, 2)}},
	OFPBRC_BAD_VENDOR:                {"OFPBRC_BAD_VENDOR", [3]errWire{errStd(1, 3), errStd(1, 3), errStd(1, 3)}},
	OFPBRC_BAD_SUBTYPE:               {"OFPBRC_BAD_SUBTYPE", [3]errWire{errStd(1, 4), errStd(1, 4), errStd(1, 4)}},
	OFPBRC_EPERM:                     {"OFPBRC_EPERM", [3]errWire{errStd(1, 5), errStd(1, 5), errStd(1, 5)}},
	OFPBRC_BAD_LEN:                   {"OFPBRC_BAD_LEN", [3]errWire{errStd(1, 6), errStd(1, 6), errStd(1, 6)}},
	OFPBRC_BUFFER_EMPTY:              {"OFPBRC_BUFFER_EMPTY", [3]errWire{errStd(1, 7), errStd(1, 7), errStd(1, 7)}},
	OFPBRC_BUFFER_UNKNOWN:            {"OFPBRC_BUFFER_UNKNOWN", [3]errWire{errStd(1, 8), errStd(1, 8), errStd(1, 8)}},
	OFPBRC_BAD_TABLE_ID:              {"OFPBRC_BAD_TABLE_ID", [3]errWire{errVendor(0x2320, 1, 512), errStd(1, 9), errStd(1, 9)}},
	OFPBRC_IS_SECONDARY:              {"OFPBRC_IS_SECONDARY", [3]errWire{errStd(1, 5), errStd(1, 10), errStd(1, 10)}},
	OFPBRC_BAD_PORT:                  {"OFPBRC_BAD_PORT", [3]errWire{errVendor(0x2320, 1, 514), errStd(1, 11), errStd(1, 11)}},
	OFPBRC_BAD_PACKET:                {"OFPBRC_BAD_PACKET", [3]errWire{errNone, errStd(1, 12), errStd(1, 12)}},
	OFPBRC_MULTIPART_BUFFER_OVERFLOW: {"OFPBRC_MULTIPART_BUFFER_OVERFLOW", [3]errWire{errNone, errStd(1, 13), errStd(1, 13)}},
	OFPBRC_MULTIPART_REQUEST_TIMEOUT: {"OFPBRC_MULTIPART_REQUEST_TIMEOUT", [3]errWire{errNone, errExp(0x4f4e4600, 2640), errStd(1, 14)}},
	OFPBRC_MULTIPART_REPLY_TIMEOUT:   {"OFPBRC_MULTIPART_REPLY_TIMEOUT", [3]errWire{errNone, errExp(0x4f4e4600, 2641), errStd(1, 15)}},
	OFPBRC_MULTIPART_BAD_SCHED:       {"OFPBRC_MULTIPART_BAD_SCHED", [3]errWire{errNone, errNone, errStd(1, 16)}},
	OFPBRC_PIPELINE_FIELDS_ONLY:      {"OFPBRC_PIPELINE_FIELDS_ONLY", [3]errWire{errNone, errNone, errStd(1, 17)}},
	OFPBRC_UNKNOWN:                   {"OFPBRC_UNKNOWN", [3]errWire{errNone, errNone, errStd(1, 18)}},
	NXBRC_NXM_INVALID:                {"NXBRC_NXM_INVALID", [3]errWire{errVendor(0x2320, 1, 256), errExp(0x2320, 2), errExp(0x2320, 2)}},
	NXBRC_NXM_BAD_TYPE:               {"NXBRC_NXM_BAD_TYPE", [3]errWire{errVendor(0x2320, 1, 257), errExp(0x2320, 3), errExp(0x2320, 3)}},
	NXBRC_MUST_BE_ZERO:               {"NXBRC_MUST_BE_ZERO", [3]errWire{errVendor(0x2320, 1, 515), errExp(0x2320, 4), errExp(0x2320, 4)}},
	NXBRC_BAD_REASON:                 {"NXBRC_BAD_REASON", [3]errWire{errVendor(0x2320, 1, 516), errExp(0x2320, 5), errExp(0x2320, 5)}},
	NXBRC_FM_BAD_EVENT:               {"NXBRC_FM_BAD_EVENT", [3]errWire{errVendor(0x2320, 1, 520), errExp(0x2320, 9), errExp(0x2320, 9)}},
	NXBRC_UNENCODABLE_ERROR:          {"NXBRC_UNENCODABLE_ERROR", [3]errWire{errVendor(0x2320, 1, 521), errExp(0x2320, 10), errExp(0x2320, 10)}},
	OFPBAC_BAD_TYPE:                  {"OFPBAC_BAD_TYPE", [3]errWire{errStd(2, 0), errStd(2, 0), errStd(2, 0)}},
	OFPBAC_BAD_LEN:                   {"OFPBAC_BAD_LEN", [3]errWire{errStd(2, 1), errStd(2, 1), errStd(2, 1)}},
	OFPBAC_BAD_VENDOR:                {"OFPBAC_BAD_VENDOR", [3]errWire{errStd(2, 2), errStd(2, 2), errStd(2, 2)}},
	OFPBAC_BAD_VENDOR_TYPE:           {"OFPBAC_BAD_VENDOR_TYPE", [3]errWire{errStd(2, 3), errStd(2, 3), errStd(2, 3)}},
	OFPBAC_BAD_OUT_PORT:              {"OFPBAC_BAD_OUT_PORT", [3]errWire{errStd(2, 4), errStd(2, 4), errStd(2, 4)}},
	OFPBAC_BAD_ARGUMENT:              {"OFPBAC_BAD_ARGUMENT", [3]errWire{errStd(2, 5), errStd(2, 5), errStd(2, 5)}},
	OFPBAC_EPERM:                     {"OFPBAC_EPERM", [3]errWire{errStd(2, 6), errStd(2, 6), errStd(2, 6)}},
	OFPBAC_TOO_MANY:                  {"OFPBAC_TOO_MANY", [3]errWire{errStd(2, 7), errStd(2, 7), errStd(2, 7)}},
	OFPBAC_BAD_QUEUE:                 {"OFPBAC_BAD_QUEUE", [3]errWire{errStd(2, 8), errStd(2, 8), errStd(2, 8)}},
	OFPBAC_BAD_OUT_GROUP:             {"OFPBAC_BAD_OUT_GROUP", [3]errWire{errVendor(0x2320, 2, 9), errStd(2, 9), errStd(2, 9)}},
	OFPBAC_MATCH_INCONSISTENT:        {"OFPBAC_MATCH_INCONSISTENT", [3]errWire{errVendor(0x2320, 1, 522), errStd(2, 10), errStd(2, 10)}},
	OFPBAC_UNSUPPORTED_ORDER:         {"OFPBAC_UNSUPPORTED_ORDER", [3]errWire{errNone, errStd(2, 11), errStd(2, 11)}},
	OFPBAC_BAD_TAG:                   {"OFPBAC_BAD_TAG", [3]errWire{errNone, errStd(2, 12), errStd(2, 12)}},
	OFPBAC_BAD_SET_TYPE:              {"OFPBAC_BAD_SET_TYPE", [3]errWire{errVendor(0x2320, 1, 523), errStd(2, 13), errStd(2, 13)}},
	OFPBAC_BAD_SET_LEN:               {"OFPBAC_BAD_SET_LEN", [3]errWire{errVendor(0x2320, 1, 524), errStd(2, 14), errStd(2, 14)}},
	OFPBAC_BAD_SET_ARGUMENT:          {"OFPBAC_BAD_SET_ARGUMENT", [3]errWire{errVendor(0x2320, 1, 525), errStd(2, 15), errStd(2, 15)}},
	OFPBAC_BAD_SET_MASK:              {"OFPBAC_BAD_SET_MASK", [3]errWire{errNone, errExp(0x4f4e4600, 4250), errStd(2, 16)}},
	OFPBAC_BAD_METER:                 {"OFPBAC_BAD_METER", [3]errWire{errNone, errNone, errStd(2, 17)}},
	NXBAC_MUST_BE_ZERO:               {"NXBAC_MUST_BE_ZERO", [3]errWire{errVendor(0x2320, 2, 256), errExp(0x2320, 11), errExp(0x2320, 11)}},
	NXBAC_BAD_CONJUNCTION:            {"NXBAC_BAD_CONJUNCTION", [3]errWire{errVendor(0x2320, 2, 526), errExp(0x2320, 15), errExp(0x2320, 15)}},
	NXBAC_BAD_HEADER_TYPE:            {"NXBAC_BAD_HEADER_TYPE", [3]errWire{errNone, errExp(0x2320, 39), errExp(0x2320, 39)}},
	NXBAC_UNKNOWN_ED_PROP:            {"NXBAC_UNKNOWN_ED_PROP", [3]errWire{errNone, errExp(0x2320, 40), errExp(0x2320, 40)}},
	NXBAC_BAD_ED_PROP:                {"NXBAC_BAD_ED_PROP", [3]errWire{errNone, errExp(0x2320, 41), errExp(0x2320, 41)}},
	NXBAC_CT_DATAPATH_SUPPORT:        {"NXBAC_CT_DATAPATH_SUPPORT", [3]errWire{errVendor(0x2320, 1, 265), errExp(0x2320, 42), errExp(0x2320, 42)}},
	OFPBIC_UNKNOWN_INST:              {"OFPBIC_UNKNOWN_INST", [3]errWire{errNone, errStd(3, 0), errStd(3, 0)}},
	OFPBIC_UNSUP_INST:                {"OFPBIC_UNSUP_INST", [3]errWire{errVendor(0x2320, 2, 257), errStd(3, 1), errStd(3, 1)}},
	OFPBIC_BAD_TABLE_ID:              {"OFPBIC_BAD_TABLE_ID", [3]errWire{errNone, errStd(3, 2), errStd(3, 2)}},
	OFPBIC_UNSUP_METADATA:            {"OFPBIC_UNSUP_METADATA", [3]errWire{errNone, errStd(3, 3), errStd(3, 3)}},
	OFPBIC_UNSUP_METADATA_MASK:       {"OFPBIC_UNSUP_METADATA_MASK", [3]errWire{errNone, errStd(3, 4), errStd(3, 4)}},
	OFPBIC_BAD_EXPERIMENTER:          {"OFPBIC_BAD_EXPERIMENTER", [3]errWire{errNone, errStd(3, 5), errStd(3, 5)}},
	OFPBIC_BAD_EXP_TYPE:              {"OFPBIC_BAD_EXP_TYPE", [3]errWire{errNone, errStd(3, 6), errStd(3, 6)}},
	OFPBIC_BAD_LEN:                   {"OFPBIC_BAD_LEN", [3]errWire{errNone, errStd(3, 7), errStd(3, 7)}},
	OFPBIC_EPERM:                     {"OFPBIC_EPERM", [3]errWire{errNone, errStd(3, 8), errStd(3, 8)}},
	OFPBIC_DUP_INST:                  {"OFPBIC_DUP_INST", [3]errWire{errNone, errExp(0x4f4e4600, 2600), errStd(3, 9)}},
	OFPBMC_BAD_TYPE:                  {"OFPBMC_BAD_TYPE", [3]errWire{errNone, errStd(4, 0), errStd(4, 0)}},
	OFPBMC_BAD_LEN:                   {"OFPBMC_BAD_LEN", [3]errWire{errNone, errStd(4, 1), errStd(4, 1)}},
	OFPBMC_BAD_TAG:                   {"OFPBMC_BAD_TAG", [3]errWire{errNone, errStd(4, 2), errStd(4, 2)}},
	OFPBMC_BAD_DL_ADDR_MASK:          {"OFPBMC_BAD_DL_ADDR_MASK", [3]errWire{errNone, errStd(4, 3), errStd(4, 3)}},
	OFPBMC_BAD_NW_ADDR_MASK:          {"OFPBMC_BAD_NW_ADDR_MASK", [3]errWire{errNone, errStd(4, 4), errStd(4, 4)}},
	OFPBMC_BAD_WILDCARDS:             {"OFPBMC_BAD_WILDCARDS", [3]errWire{errVendor(0x2320, 1, 262), errStd(4, 5), errStd(4, 5)}},
	OFPBMC_BAD_FIELD:                 {"OFPBMC_BAD_FIELD", [3]errWire{errVendor(0x2320, 0, 263), errStd(4, 6), errStd(4, 6)}},
	OFPBMC_BAD_VALUE:                 {"OFPBMC_BAD_VALUE", [3]errWire{errVendor(0x2320, 1, 258), errStd(4, 7), errStd(4, 7)}},
	OFPBMC_BAD_MASK:                  {"OFPBMC_BAD_MASK", [3]errWire{errVendor(0x2320, 1, 259), errStd(4, 8), errStd(4, 8)}},
	OFPBMC_BAD_PREREQ:                {"OFPBMC_BAD_PREREQ", [3]errWire{errVendor(0x2320, 1, 260), errStd(4, 9), errStd(4, 9)}},
	OFPBMC_DUP_FIELD:                 {"OFPBMC_DUP_FIELD", [3]errWire{errVendor(0x2320, 1, 261), errStd(4, 10), errStd(4, 10)}},
	OFPBMC_EPERM:                     {"OFPBMC_EPERM", [3]errWire{errNone, errStd(4, 11), errStd(4, 11)}},
	NXBMC_CT_DATAPATH_SUPPORT:        {"NXBMC_CT_DATAPATH_SUPPORT", [3]errWire{errVendor(0x2320, 1, 264), errExp(0x2320, 43), errExp(0x2320, 43)}},
	OFPFMFC_UNKNOWN:                  {"OFPFMFC_UNKNOWN", [3]errWire{errNone, errStd(5, 0), errStd(5, 0)}},
	OFPFMFC_TABLE_FULL:               {"OFPFMFC_TABLE_FULL", [3]errWire{errStd(3, 0), errStd(5, 1), errStd(5, 1)}},
	OFPFMFC_BAD_TABLE_ID:             {"OFPFMFC_BAD_TABLE_ID", [3]errWire{errNone, errStd(5, 2), errStd(5, 2)}},
	OFPFMFC_OVERLAP:                  {"OFPFMFC_OVERLAP", [3]errWire{errStd(3, 1), errStd(5, 3), errStd(5, 3)}},
	OFPFMFC_EPERM:                    {"OFPFMFC_EPERM", [3]errWire{errStd(3, 2), errStd(5, 4), errStd(5, 4)}},
	OFPFMFC_BAD_TIMEOUT:              {"OFPFMFC_BAD_TIMEOUT", [3]errWire{errNone, errStd(5, 5), errStd(5, 5)}},
	OFPFMFC_BAD_EMERG_TIMEOUT:        {"OFPFMFC_BAD_EMERG_TIMEOUT", [3]errWire{errStd(3, 3), errNone, errNone}},
	OFPFMFC_BAD_COMMAND:              {"OFPFMFC_BAD_COMMAND", [3]errWire{errStd(3, 4), errStd(5, 6), errStd(5, 6)}},
	OFPFMFC_BAD_FLAGS:                {"OFPFMFC_BAD_FLAGS", [3]errWire{errVendor(0x2320, 3, 258), errStd(5, 7), errStd(5, 7)}},
	OFPFMFC_CANT_SYNC:                {"OFPFMFC_CANT_SYNC", [3]errWire{errNone, errNone, errStd(5, 8)}},
	OFPFMFC_BAD_PRIORITY:             {"OFPFMFC_BAD_PRIORITY", [3]errWire{errNone, errExp(0x4f4e4600, 2360), errStd(5, 9)}},
	OFPFMFC_IS_SYNC:                  {"OFPFMFC_IS_SYNC", [3]errWire{errNone, errNone, errStd(5, 10)}},
	OFPFMFC_UNSUPPORTED:              {"OFPFMFC_UNSUPPORTED", [3]errWire{errStd(3, 5), errNone, errNone}},
	NXFMFC_HARDWARE:                  {"NXFMFC_HARDWARE", [3]errWire{errVendor(0x2320, 5, 256), errExp(0x2320, 12), errExp(0x2320, 12)}},
	NXFMFC_BAD_TABLE_ID:              {"NXFMFC_BAD_TABLE_ID", [3]errWire{errVendor(0x2320, 5, 257), errExp(0x2320, 13), errExp(0x2320, 13)}},
	NXFMFC_INVALID_TLV_FIELD:         {"NXFMFC_INVALID_TLV_FIELD", [3]errWire{errVendor(0x2320, 1, 536), errExp(0x2320, 37), errExp(0x2320, 37)}},
	OFPGMFC_GROUP_EXISTS:             {"OFPGMFC_GROUP_EXISTS", [3]errWire{errVendor(0x2320, 6, 0), errStd(6, 0), errStd(6, 0)}},
	OFPGMFC_INVALID_GROUP:            {"OFPGMFC_INVALID_GROUP", [3]errWire{errVendor(0x2320, 6, 1), errStd(6, 1), errStd(6, 1)}},
	OFPGMFC_WEIGHT_UNSUPPORTED:       {"OFPGMFC_WEIGHT_UNSUPPORTED", [3]errWire{errVendor(0x2320, 6, 2), errStd(6, 2), errStd(6, 2)}},
	OFPGMFC_OUT_OF_GROUPS:            {"OFPGMFC_OUT_OF_GROUPS", [3]errWire{errVendor(0x2320, 6, 3), errStd(6, 3), errStd(6, 3)}},
	OFPGMFC_OUT_OF_BUCKETS:           {"OFPGMFC_OUT_OF_BUCKETS", [3]errWire{errVendor(0x2320, 6, 4), errStd(6, 4), errStd(6, 4)}},
	OFPGMFC_CHAINING_UNSUPPORTED:     {"OFPGMFC_CHAINING_UNSUPPORTED", [3]errWire{errVendor(0x2320, 6, 5), errStd(6, 5), errStd(6, 5)}},
	OFPGMFC_WATCH_UNSUPPORTED:        {"OFPGMFC_WATCH_UNSUPPORTED", [3]errWire{errVendor(0x2320, 6, 6), errStd(6, 6), errStd(6, 6)}},
	OFPGMFC_LOOP:                     {"OFPGMFC_LOOP", [3]errWire{errVendor(0x2320, 6, 7), errStd(6, 7), errStd(6, 7)}},
	OFPGMFC_UNKNOWN_GROUP:            {"OFPGMFC_UNKNOWN_GROUP", [3]errWire{errVendor(0x2320, 6, 8), errStd(6, 8), errStd(6, 8)}},
	OFPGMFC_CHAINED_GROUP:            {"OFPGMFC_CHAINED_GROUP", [3]errWire{errVendor(0x2320, 6, 9), errStd(6, 9), errStd(6, 9)}},
	OFPGMFC_BAD_TYPE:                 {"OFPGMFC_BAD_TYPE", [3]errWire{errVendor(0x2320, 6, 10), errStd(6, 10), errStd(6, 10)}},
	OFPGMFC_BAD_COMMAND:              {"OFPGMFC_BAD_COMMAND", [3]errWire{errVendor(0x2320, 6, 11), errStd(6, 11), errStd(6, 11)}},
	OFPGMFC_BAD_BUCKET:               {"OFPGMFC_BAD_BUCKET", [3]errWire{errVendor(0x2320, 6, 12), errStd(6, 12), errStd(6, 12)}},
	OFPGMFC_BAD_WATCH:                {"OFPGMFC_BAD_WATCH", [3]errWire{errVendor(0x2320, 6, 13), errStd(6, 13), errStd(6, 13)}},
	OFPGMFC_EPERM:                    {"OFPGMFC_EPERM", [3]errWire{errVendor(0x2320, 6, 14), errStd(6, 14), errStd(6, 14)}},
	OFPGMFC_UNKNOWN_BUCKET:           {"OFPGMFC_UNKNOWN_BUCKET", [3]errWire{errVendor(0x2320, 6, 15), errNone, errStd(6, 15)}},
	OFPGMFC_BUCKET_EXISTS:            {"OFPGMFC_BUCKET_EXISTS", [3]errWire{errVendor(0x2320, 6, 16), errNone, errStd(6, 16)}},
	OFPPMFC_BAD_PORT:                 {"OFPPMFC_BAD_PORT", [3]errWire{errStd(4, 0), errStd(7, 0), errStd(7, 0)}},
	OFPPMFC_BAD_HW_ADDR:              {"OFPPMFC_BAD_HW_ADDR", [3]errWire{errStd(4, 1), errStd(7, 1), errStd(7, 1)}},
	OFPPMFC_BAD_CONFIG:               {"OFPPMFC_BAD_CONFIG", [3]errWire{errNone, errStd(7, 2), errStd(7, 2)}},
	OFPPMFC_BAD_ADVERTISE:            {"OFPPMFC_BAD_ADVERTISE", [3]errWire{errNone, errStd(7, 3), errStd(7, 3)}},
	OFPPMFC_EPERM:                    {"OFPPMFC_EPERM", [3]errWire{errNone, errStd(7, 4), errStd(7, 4)}},
	OFPTMFC_BAD_TABLE:                {"OFPTMFC_BAD_TABLE", [3]errWire{errNone, errStd(8, 0), errStd(8, 0)}},
	OFPTMFC_BAD_CONFIG:               {"OFPTMFC_BAD_CONFIG", [3]errWire{errNone, errStd(8, 1), errStd(8, 1)}},
	OFPTMFC_EPERM:                    {"OFPTMFC_EPERM", [3]errWire{errNone, errStd(8, 2), errStd(8, 2)}},
	OFPQOFC_BAD_PORT:                 {"OFPQOFC_BAD_PORT", [3]errWire{errStd(5, 0), errStd(9, 0), errStd(9, 0)}},
	OFPQOFC_BAD_QUEUE:                {"OFPQOFC_BAD_QUEUE", [3]errWire{errStd(5, 1), errStd(9, 1), errStd(9, 1)}},
	OFPQOFC_EPERM:                    {"OFPQOFC_EPERM", [3]errWire{errStd(5, 2), errStd(9, 2), errStd(9, 2)}},
	NXQOFC_QUEUE_ERROR:               {"NXQOFC_QUEUE_ERROR", [3]errWire{errNone, errNone, errExp(0x2320, 23)}},
	OFPSCFC_BAD_FLAGS:                {"OFPSCFC_BAD_FLAGS", [3]errWire{errNone, errStd(10, 0), errStd(10, 0)}},
	OFPSCFC_BAD_LEN:                  {"OFPSCFC_BAD_LEN", [3]errWire{errNone, errStd(10, 1), errStd(10, 1)}},
	OFPSCFC_EPERM:                    {"OFPSCFC_EPERM", [3]errWire{errNone, errStd(10, 2), errStd(10, 2)}},
	OFPRRFC_STALE:                    {"OFPRRFC_STALE", [3]errWire{errNone, errStd(11, 0), errStd(11, 0)}},
	OFPRRFC_UNSUP:                    {"OFPRRFC_UNSUP", [3]errWire{errNone, errStd(11, 1), errStd(11, 1)}},
	OFPRRFC_BAD_ROLE:                 {"OFPRRFC_BAD_ROLE", [3]errWire{errVendor(0x2320, 1, 513), errStd(11, 2), errStd(11, 2)}},
	OFPRRFC_ID_UNSUP:                 {"OFPRRFC_ID_UNSUP", [3]errWire{errNone, errNone, errStd(11, 3)}},
	OFPRRFC_ID_IN_USE:                {"OFPRRFC_ID_IN_USE", [3]errWire{errNone, errNone, errStd(11, 4)}},
	OFPMMFC_UNKNOWN:                  {"OFPMMFC_UNKNOWN", [3]errWire{errNone, errStd(12, 0), errStd(12, 0)}},
	OFPMMFC_METER_EXISTS:             {"OFPMMFC_METER_EXISTS", [3]errWire{errNone, errStd(12, 1), errStd(12, 1)}},
	OFPMMFC_INVALID_METER:            {"OFPMMFC_INVALID_METER", [3]errWire{errNone, errStd(12, 2), errStd(12, 2)}},
	OFPMMFC_UNKNOWN_METER:            {"OFPMMFC_UNKNOWN_METER", [3]errWire{errNone, errStd(12, 3), errStd(12, 3)}},
	OFPMMFC_BAD_COMMAND:              {"OFPMMFC_BAD_COMMAND", [3]errWire{errNone, errStd(12, 4), errStd(12, 4)}},
	OFPMMFC_BAD_FLAGS:                {"OFPMMFC_BAD_FLAGS", [3]errWire{errNone, errStd(12, 5), errStd(12, 5)}},
	OFPMMFC_BAD_RATE:                 {"OFPMMFC_BAD_RATE", [3]errWire{errNone, errStd(12, 6), errStd(12, 6)}},
	OFPMMFC_BAD_BURST:                {"OFPMMFC_BAD_BURST", [3]errWire{errNone, errStd(12, 7), errStd(12, 7)}},
	OFPMMFC_BAD_BAND:                 {"OFPMMFC_BAD_BAND", [3]errWire{errNone, errStd(12, 8), errStd(12, 8)}},
	OFPMMFC_BAD_BAND_VALUE:           {"OFPMMFC_BAD_BAND_VALUE", [3]errWire{errNone, errStd(12, 9), errStd(12, 9)}},
	OFPMMFC_OUT_OF_METERS:            {"OFPMMFC_OUT_OF_METERS", [3]errWire{errNone, errStd(12, 10), errStd(12, 10)}},
	OFPMMFC_OUT_OF_BANDS:             {"OFPMMFC_OUT_OF_BANDS", [3]errWire{errNone, errStd(12, 11), errStd(12, 11)}},
	OFPTFFC_BAD_TABLE:                {"OFPTFFC_BAD_TABLE", [3]errWire{errNone, errStd(13, 0), errStd(13, 0)}},
	OFPTFFC_BAD_METADATA:             {"OFPTFFC_BAD_METADATA", [3]errWire{errNone, errStd(13, 1), errStd(13, 1)}},
	OFPTFFC_EPERM:                    {"OFPTFFC_EPERM", [3]errWire{errNone, errStd(13, 5), errStd(13, 5)}},
	OFPTFFC_BAD_CAPA:                 {"OFPTFFC_BAD_CAPA", [3]errWire{errNone, errNone, errStd(13, 6)}},
	OFPTFFC_BAD_MAX_ENT:              {"OFPTFFC_BAD_MAX_ENT", [3]errWire{errNone, errNone, errStd(13, 7)}},
	OFPTFFC_BAD_FEATURES:             {"OFPTFFC_BAD_FEATURES", [3]errWire{errNone, errNone, errStd(13, 8)}},
	OFPTFFC_BAD_COMMAND:              {"OFPTFFC_BAD_COMMAND", [3]errWire{errNone, errNone, errStd(13, 9)}},
	OFPTFFC_TOO_MANY:                 {"OFPTFFC_TOO_MANY", [3]errWire{errNone, errNone, errStd(13, 10)}},
	NXTFFC_DUP_TABLE:                 {"NXTFFC_DUP_TABLE", [3]errWire{errNone, errExp(0x2320, 44), errExp(0x2320, 44)}},
	OFPBPC_BAD_TYPE:                  {"OFPBPC_BAD_TYPE", [3]errWire{errVendor(0x2320, 13, 2), errStd(13, 2), errStd(14, 0)}},
	OFPBPC_BAD_LEN:                   {"OFPBPC_BAD_LEN", [3]errWire{errVendor(0x2320, 13, 3), errStd(13, 3), errStd(14, 1)}},
	OFPBPC_BAD_VALUE:                 {"OFPBPC_BAD_VALUE", [3]errWire{errVendor(0x2320, 13, 4), errStd(13, 4), errStd(14, 2)}},
	OFPBPC_TOO_MANY:                  {"OFPBPC_TOO_MANY", [3]errWire{errVendor(0x2320, 14, 3), errExp(0x4f4e4600, 4443), errStd(14, 3)}},
	OFPBPC_DUP_TYPE:                  {"OFPBPC_DUP_TYPE", [3]errWire{errVendor(0x2320, 14, 4), errExp(0x4f4e4600, 4444), errStd(14, 4)}},
	OFPBPC_BAD_EXPERIMENTER:          {"OFPBPC_BAD_EXPERIMENTER", [3]errWire{errVendor(0x2320, 14, 5), errExp(0x4f4e4600, 4445), errStd(14, 5)}},
	OFPBPC_BAD_EXP_TYPE:              {"OFPBPC_BAD_EXP_TYPE", [3]errWire{errVendor(0x2320, 14, 6), errExp(0x4f4e4600, 4446), errStd(14, 6)}},
	OFPBPC_BAD_EXP_VALUE:             {"OFPBPC_BAD_EXP_VALUE", [3]errWire{errVendor(0x2320, 14, 7), errExp(0x4f4e4600, 4447), errStd(14, 7)}},
	OFPBPC_EPERM:                     {"OFPBPC_EPERM", [3]errWire{errVendor(0x2320, 14, 8), errExp(0x4f4e4600, 4448), errStd(14, 8)}},
	OFPACFC_INVALID:                  {"OFPACFC_INVALID", [3]errWire{errNone, errExp(0x4f4e4600, 2370), errStd(15, 0)}},
	OFPACFC_UNSUPPORTED:              {"OFPACFC_UNSUPPORTED", [3]errWire{errNone, errExp(0x4f4e4600, 2371), errStd(15, 1)}},
	OFPACFC_EPERM:                    {"OFPACFC_EPERM", [3]errWire{errNone, errExp(0x4f4e4600, 2372), errStd(15, 2)}},
	OFPBFC_UNKNOWN:                   {"OFPBFC_UNKNOWN", [3]errWire{errNone, errExp(0x4f4e4600, 2300), errStd(17, 0)}},
	OFPBFC_EPERM:                     {"OFPBFC_EPERM", [3]errWire{errNone, errExp(0x4f4e4600, 2301), errStd(17, 1)}},
	OFPBFC_BAD_ID:                    {"OFPBFC_BAD_ID", [3]errWire{errNone, errExp(0x4f4e4600, 2302), errStd(17, 2)}},
	OFPBFC_BUNDLE_EXIST:              {"OFPBFC_BUNDLE_EXIST", [3]errWire{errNone, errExp(0x4f4e4600, 2303), errStd(17, 3)}},
	OFPBFC_BUNDLE_CLOSED:             {"OFPBFC_BUNDLE_CLOSED", [3]errWire{errNone, errExp(0x4f4e4600, 2304), errStd(17, 4)}},
	OFPBFC_OUT_OF_BUNDLES:            {"OFPBFC_OUT_OF_BUNDLES", [3]errWire{errNone, errExp(0x4f4e4600, 2305), errStd(17, 5)}},
	OFPBFC_BAD_TYPE:                  {"OFPBFC_BAD_TYPE", [3]errWire{errNone, errExp(0x4f4e4600, 2306), errStd(17, 6)}},
	OFPBFC_BAD_FLAGS:                 {"OFPBFC_BAD_FLAGS", [3]errWire{errNone, errExp(0x4f4e4600, 2307), errStd(17, 7)}},
	OFPBFC_MSG_BAD_LEN:               {"OFPBFC_MSG_BAD_LEN", [3]errWire{errNone, errExp(0x4f4e4600, 2308), errStd(17, 8)}},
	OFPBFC_MSG_BAD_XID:               {"OFPBFC_MSG_BAD_XID", [3]errWire{errNone, errExp(0x4f4e4600, 2309), errStd(17, 9)}},
	OFPBFC_MSG_UNSUP:                 {"OFPBFC_MSG_UNSUP", [3]errWire{errNone, errExp(0x4f4e4600, 2310), errStd(17, 10)}},
	OFPBFC_MSG_CONFLICT:              {"OFPBFC_MSG_CONFLICT", [3]errWire{errNone, errExp(0x4f4e4600, 2311), errStd(17, 11)}},
	OFPBFC_MSG_TOO_MANY:              {"OFPBFC_MSG_TOO_MANY", [3]errWire{errNone, errExp(0x4f4e4600, 2312), errStd(17, 12)}},
	OFPBFC_MSG_FAILED:                {"OFPBFC_MSG_FAILED", [3]errWire{errNone, errExp(0x4f4e4600, 2313), errStd(17, 13)}},
	OFPBFC_TIMEOUT:                   {"OFPBFC_TIMEOUT", [3]errWire{errNone, errExp(0x4f4e4600, 2314), errStd(17, 14)}},
	OFPBFC_BUNDLE_IN_PROGRESS:        {"OFPBFC_BUNDLE_IN_PROGRESS", [3]errWire{errNone, errExp(0x4f4e4600, 2315), errStd(17, 15)}},
	OFPBFC_SCHED_NOT_SUPPORTED:       {"OFPBFC_SCHED_NOT_SUPPORTED", [3]errWire{errNone, errNone, errStd(17, 16)}},
	OFPBFC_SCHED_FUTURE:              {"OFPBFC_SCHED_FUTURE", [3]errWire{errNone, errNone, errStd(17, 17)}},
	OFPBFC_SCHED_PAST:                {"OFPBFC_SCHED_PAST", [3]errWire{errNone, errNone, errStd(17, 18)}},
	OFPBFC_BAD_VERSION:               {"OFPBFC_BAD_VERSION", [3]errWire{errNone, errNone, errExp(0x2320, 22)}},
	OFPMOFC_UNKNOWN:                  {"OFPMOFC_UNKNOWN", [3]errWire{errNone, errNone, errStd(16, 0)}},
	OFPMOFC_MONITOR_EXISTS:           {"OFPMOFC_MONITOR_EXISTS", [3]errWire{errVendor(0x2320, 1, 517), errExp(0x2320, 6), errStd(16, 1)}},
	OFPMOFC_INVALID_MONITOR:          {"OFPMOFC_INVALID_MONITOR", [3]errWire{errNone, errNone, errStd(16, 2)}},
	OFPMOFC_UNKNOWN_MONITOR:          {"OFPMOFC_UNKNOWN_MONITOR", [3]errWire{errVendor(0x2320, 1, 519), errExp(0x2320, 8), errStd(16, 3)}},
	OFPMOFC_BAD_COMMAND:              {"OFPMOFC_BAD_COMMAND", [3]errWire{errNone, errNone, errStd(16, 4)}},
	OFPMOFC_BAD_FLAGS:                {"OFPMOFC_BAD_FLAGS", [3]errWire{errVendor(0x2320, 1, 518), errExp(0x2320, 7), errStd(16, 5)}},
	OFPMOFC_BAD_TABLE_ID:             {"OFPMOFC_BAD_TABLE_ID", [3]errWire{errNone, errNone, errStd(16, 6)}},
	OFPMOFC_BAD_OUT:                  {"OFPMOFC_BAD_OUT", [3]errWire{errNone, errNone, errStd(16, 7)}},
	NXTTMFC_BAD_COMMAND:              {"NXTTMFC_BAD_COMMAND", [3]errWire{errVendor(0x2320, 1, 527), errExp(0x2320, 16), errExp(0x2320, 16)}},
	NXTTMFC_BAD_OPT_LEN:              {"NXTTMFC_BAD_OPT_LEN", [3]errWire{errVendor(0x2320, 1, 528), errExp(0x2320, 17), errExp(0x2320, 17)}},
	NXTTMFC_BAD_FIELD_IDX:            {"NXTTMFC_BAD_FIELD_IDX", [3]errWire{errVendor(0x2320, 1, 529), errExp(0x2320, 18), errExp(0x2320, 18)}},
	NXTTMFC_TABLE_FULL:               {"NXTTMFC_TABLE_FULL", [3]errWire{errVendor(0x2320, 1, 530), errExp(0x2320, 19), errExp(0x2320, 19)}},
	NXTTMFC_ALREADY_MAPPED:           {"NXTTMFC_ALREADY_MAPPED", [3]errWire{errVendor(0x2320, 1, 531), errExp(0x2320, 20), errExp(0x2320, 20)}},
	NXTTMFC_DUP_ENTRY:                {"NXTTMFC_DUP_ENTRY", [3]errWire{errVendor(0x2320, 1, 532), errExp(0x2320, 21), errExp(0x2320, 21)}},
	NXTTMFC_INVALID_TLV_DEL:          {"NXTTMFC_INVALID_TLV_DEL", [3]errWire{errVendor(0x2320, 1, 537), errExp(0x2320, 38), errExp(0x2320, 38)}},
	NXR_NOT_SUPPORTED:                {"NXR_NOT_SUPPORTED", [3]errWire{errVendor(0x2320, 1, 533), errExp(0x2320, 34), errExp(0x2320, 34)}},
	NXR_STALE:                        {"NXR_STALE", [3]errWire{errVendor(0x2320, 1, 534), errExp(0x2320, 35), errExp(0x2320, 35)}},
	NXST_NOT_CONFIGURED:              {"NXST_NOT_CONFIGURED", [3]errWire{errVendor(0x2320, 1, 535), errExp(0x2320, 36), errExp(0x2320, 36)}},
}
