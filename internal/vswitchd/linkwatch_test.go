package vswitchd

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// linkMsg builds one rtnetlink message of type typ naming name (no
// IFLA_IFNAME when name is empty).
func linkMsg(typ uint16, index int32, name string) []byte {
	body := make([]byte, unix.SizeofIfInfomsg)
	binary.NativeEndian.PutUint32(body[4:], uint32(index))
	if name != "" {
		v := append([]byte(name), 0)
		attr := make([]byte, 4, 4+len(v)+3)
		binary.NativeEndian.PutUint16(attr[0:], uint16(4+len(v)))
		binary.NativeEndian.PutUint16(attr[2:], unix.IFLA_IFNAME)
		attr = append(attr, v...)
		for len(attr)%4 != 0 {
			attr = append(attr, 0)
		}
		body = append(body, attr...)
	}
	m := make([]byte, unix.SizeofNlMsghdr, unix.SizeofNlMsghdr+len(body))
	binary.NativeEndian.PutUint32(m[0:], uint32(unix.SizeofNlMsghdr+len(body)))
	binary.NativeEndian.PutUint16(m[4:], typ)
	return append(m, body...)
}

// TestLinkChangesNames: a batch names the interfaces of its RTM_NEWLINK
// and RTM_DELLINK messages, ignores other messages, and counts as
// changing every interface when a message can't be read.
func TestLinkChangesNames(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dgram []byte
		want  []string
		all   bool
	}{
		{"new and del", append(linkMsg(unix.RTM_NEWLINK, 7, "antrea-gw0"), linkMsg(unix.RTM_DELLINK, 9, "pod1-a1b2c3")...), []string{"antrea-gw0", "pod1-a1b2c3"}, false},
		{"address message ignored", linkMsg(unix.RTM_NEWADDR, 7, "eth0"), nil, false},
		{"no name", linkMsg(unix.RTM_NEWLINK, 7, ""), nil, true},
		{"truncated", linkMsg(unix.RTM_NEWLINK, 7, "eth0")[:20], nil, true},
	} {
		var c linkChanges
		c.add(tc.dgram)
		if c.all != tc.all || len(c.names) != len(tc.want) {
			t.Errorf("%s: names %v all %v, want %v all %v", tc.name, c.names, c.all, tc.want, tc.all)
		}
		for _, n := range tc.want {
			if !c.has(n) {
				t.Errorf("%s: %s not named", tc.name, n)
			}
		}
		if !tc.all && c.has("other0") {
			t.Errorf("%s: an interface no message named counts as changed", tc.name)
		}
	}
}

// TestLinkChangeLogFresh: a device fact stays good until a batch names
// its interface or all interfaces; the log forgets names past its bound
// by counting that batch as changing all.
func TestLinkChangeLogFresh(t *testing.T) {
	var l linkChangeLog
	g0 := l.current()
	l.record(&linkChanges{names: map[string]struct{}{"a": {}}})
	if l.fresh("a", g0) || !l.fresh("b", g0) {
		t.Fatalf("after a batch naming a: fresh(a) %v fresh(b) %v, want false true", l.fresh("a", g0), l.fresh("b", g0))
	}
	g1 := l.current()
	if !l.fresh("a", g1) {
		t.Fatal("a read after the batch is not fresh")
	}
	l.record(&linkChanges{all: true})
	if l.fresh("b", g1) || l.fresh("a", g1) {
		t.Fatal("a batch of lost notifications left facts fresh")
	}
	g2 := l.current()
	many := linkChanges{names: map[string]struct{}{}}
	for i := range maxLinkNames + 1 {
		many.names[string(rune('A'+i%26))+string(rune(i))] = struct{}{}
	}
	l.record(&many)
	if l.fresh("zzz", g2) || len(l.byName) != 0 {
		t.Fatalf("past the bound: fresh(zzz) %v, %d names kept; want false and none", l.fresh("zzz", g2), len(l.byName))
	}
}

// FuzzLinkChanges: any datagram read from the link notification socket
// names interfaces or marks all changed, never a panic; a name comes only
// from an RTM_NEWLINK or RTM_DELLINK message.
func FuzzLinkChanges(f *testing.F) {
	f.Add(linkMsg(unix.RTM_NEWLINK, 3, "eth0"))
	f.Add(append(linkMsg(unix.RTM_DELLINK, 9, "pod1-a1b2c3"), linkMsg(unix.RTM_NEWADDR, 1, "lo")...))
	f.Add(linkMsg(unix.RTM_NEWLINK, 3, "eth0")[:20])
	f.Fuzz(func(t *testing.T, b []byte) {
		var c linkChanges
		c.add(b)
		if len(c.names) > 0 && len(b) < unix.SizeofNlMsghdr+unix.SizeofIfInfomsg {
			t.Fatalf("%d bytes named %v", len(b), c.names)
		}
	})
}
