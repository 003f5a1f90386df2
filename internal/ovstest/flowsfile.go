package ovstest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// FlowsFile is a file in the `ovs-ofctl add-flows` format (one flow per line,
// '#' comments) with the header comments the seed files use:
//
//	# tlv-map: {class=0x104,type=0x80,len=4}->tun_metadata0   (add-tlv-map before the flows)
//	# group: group_id=5,type=select,bucket=...                (add-group before the flows)
//	# ovs: <one line of what ovs-ofctl printed on stderr>     (the next flow is rejected)
//
// ovs-ofctl itself treats all of these as comments.
type FlowsFile struct {
	TLVMaps []string // arguments for `ovs-ofctl add-tlv-map`, in file order
	Groups  []string // arguments for `ovs-ofctl add-group`, in file order
	Flows   []Flow
}

// Flow is one flow line of a FlowsFile.
type Flow struct {
	Line int    // 1-based line number in the file
	Text string // the line without surrounding whitespace
	// OVSError is the exact stderr ovs-ofctl printed when it rejected this
	// flow (the "# ovs: " lines before it joined with "\n", plus a final
	// "\n"), or "" for flows that OVS accepts.
	OVSError string
}

// Header comment prefixes (after "#" and optional spaces).
const (
	tlvMapPrefix = "tlv-map:"
	groupPrefix  = "group:"
	ovsPrefix    = "ovs:"
)

// ReadFlowsFile reads and parses a FlowsFile from path.
func ReadFlowsFile(path string) (*FlowsFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read flows file: %w", err)
	}
	defer f.Close()
	ff, err := ParseFlowsFile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ff, nil
}

// ParseFlowsFile parses the FlowsFile format from r. It checks only the
// header comments; flow lines are returned as text for OVS (or govs) to parse.
func ParseFlowsFile(r io.Reader) (*FlowsFile, error) {
	ff := &FlowsFile{}
	var pending []string // "# ovs: " lines waiting for their flow
	pendingLine := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20) // group lines can be long
	n := 0
	for sc.Scan() {
		n++
		raw := sc.Text()
		line := strings.TrimSpace(raw)
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "#") {
			fl := Flow{Line: n, Text: line}
			if pending != nil {
				fl.OVSError = strings.Join(pending, "\n") + "\n"
				pending = nil
			}
			ff.Flows = append(ff.Flows, fl)
			continue
		}
		body := strings.TrimLeft(line[1:], " \t")
		switch {
		case strings.HasPrefix(body, tlvMapPrefix):
			v := strings.TrimSpace(body[len(tlvMapPrefix):])
			if v == "" {
				return nil, fmt.Errorf("line %d: empty %q header", n, tlvMapPrefix)
			}
			ff.TLVMaps = append(ff.TLVMaps, v)
		case strings.HasPrefix(body, groupPrefix):
			v := strings.TrimSpace(body[len(groupPrefix):])
			if v == "" {
				return nil, fmt.Errorf("line %d: empty %q header", n, groupPrefix)
			}
			ff.Groups = append(ff.Groups, v)
		case strings.HasPrefix(body, ovsPrefix):
			// Keep the message byte for byte: drop only "ovs:" and the one
			// space that separates it from the message.
			msg := strings.TrimPrefix(body[len(ovsPrefix):], " ")
			if pending == nil {
				pendingLine = n
			}
			pending = append(pending, strings.TrimRight(msg, "\r"))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", n+1, err)
	}
	if pending != nil {
		return nil, fmt.Errorf("line %d: %q comment not followed by a flow line", pendingLine, "# "+ovsPrefix)
	}
	return ff, nil
}
