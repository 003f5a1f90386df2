package sharedspec

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"os"
)

// CaptureMessage is one OpenFlow message found in a capture.
type CaptureMessage struct {
	Conn       string // "srcport>dstport", the direction it was sent in
	FromClient bool   // sent towards the side that answered the SYN
	Raw        []byte // the whole message, header included
}

// ReadCapture splits the TCP payloads of an Ethernet/IPv4 pcap.gz into
// OpenFlow messages (by the length in their header), per direction, in
// capture order. Retransmissions are dropped; a gap is an error.
func ReadCapture(path string) ([]CaptureMessage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	all, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(all) < 24 || binary.LittleEndian.Uint32(all) != 0xa1b2c3d4 || binary.LittleEndian.Uint32(all[20:]) != 1 {
		return nil, fmt.Errorf("%s: not a little-endian Ethernet pcap", path)
	}
	type stream struct {
		next    uint32
		started bool
		data    []byte
	}
	streams := map[string]*stream{}
	servers := map[uint16]bool{}
	var msgs []CaptureMessage
	for p := all[24:]; len(p) >= 16; {
		n := int(binary.LittleEndian.Uint32(p[8:]))
		if 16+n > len(p) {
			return nil, fmt.Errorf("%s: truncated pcap record", path)
		}
		pkt := p[16 : 16+n]
		p = p[16+n:]
		if len(pkt) < 14+20 || binary.BigEndian.Uint16(pkt[12:]) != 0x0800 {
			continue
		}
		ip := pkt[14:]
		ihl := int(ip[0]&0xf) * 4
		if ip[9] != 6 || len(ip) < ihl+20 {
			continue
		}
		if tot := int(binary.BigEndian.Uint16(ip[2:])); tot < len(ip) {
			ip = ip[:tot]
		}
		tcp := ip[ihl:]
		sport, dport := binary.BigEndian.Uint16(tcp), binary.BigEndian.Uint16(tcp[2:])
		seq, flags := binary.BigEndian.Uint32(tcp[4:]), tcp[13]
		payload := tcp[int(tcp[12]>>4)*4:]
		if flags&0x12 == 0x12 { // SYN+ACK: sport is the switch
			servers[sport] = true
		}
		key := fmt.Sprintf("%d>%d", sport, dport)
		s := streams[key]
		if s == nil {
			s = &stream{}
			streams[key] = s
		}
		if flags&0x02 != 0 {
			s.next, s.started = seq+1, true
			continue
		}
		if len(payload) == 0 {
			continue
		}
		if !s.started {
			s.next, s.started = seq, true
		}
		if d := int32(seq - s.next); d < 0 { // retransmission (possibly partial)
			if int(-d) >= len(payload) {
				continue
			}
			payload, seq = payload[-d:], s.next
		}
		if seq != s.next {
			return nil, fmt.Errorf("%s: gap in stream %s", path, key)
		}
		s.next += uint32(len(payload))
		s.data = append(s.data, payload...)
		for len(s.data) >= 8 {
			l := int(binary.BigEndian.Uint16(s.data[2:]))
			if l < 8 {
				return nil, fmt.Errorf("%s: stream %s: OpenFlow length %d", path, key, l)
			}
			if l > len(s.data) {
				break
			}
			msgs = append(msgs, CaptureMessage{Conn: key, FromClient: servers[dport], Raw: bytes.Clone(s.data[:l])})
			s.data = s.data[l:]
		}
	}
	return msgs, nil
}
