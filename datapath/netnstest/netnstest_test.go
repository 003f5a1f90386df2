package netnstest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestUniqueName(t *testing.T) {
	a, b := UniqueName("gvh"), UniqueName("gvh")
	if a == b {
		t.Fatalf("two calls gave the same name %q", a)
	}
	if len(a) != len("gvh")+8 || !strings.HasPrefix(a, "gvh") {
		t.Fatalf("UniqueName(gvh) = %q, want gvh + 8 hex digits", a)
	}
}

func TestVethBetweenNamespaces(t *testing.T) {
	var nsName, host string
	t.Run("create", func(t *testing.T) {
		ns := NewNS(t)
		hostMAC, _ := net.ParseMAC("02:00:00:aa:00:01")
		peerMAC, _ := net.ParseMAC("02:00:00:aa:00:02")
		v := NewVeth(t, nil, ns, VethOptions{HostMAC: hostMAC, PeerMAC: peerMAC, MTU: 1400, PeerAddr: "10.250.0.2/24"})
		nsName, host = ns.Name, v.Host

		tests := []struct {
			ns   *NS
			name string
			mac  string
		}{{nil, v.Host, "02:00:00:aa:00:01"}, {ns, v.Peer, "02:00:00:aa:00:02"}}
		for _, tc := range tests {
			l, err := LinkShow(tc.ns, tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if l.Address != tc.mac || l.MTU != 1400 || !l.HasFlag("UP") || l.LinkInfo.Kind != "veth" {
				t.Errorf("%s in %s: got %+v, want mac %s mtu 1400 UP veth", tc.name, tc.ns, l, tc.mac)
			}
		}
		if out := ns.MustExec(t, "ip", "-4", "-o", "addr", "show", "dev", v.Peer); !strings.Contains(out, "10.250.0.2/24") {
			t.Errorf("peer address missing: %q", out)
		}
		if _, err := LinkShow(nil, v.Peer); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("peer end visible in the host namespace: %v", err)
		}

		// A frame sent on one end arrives on the other, exactly.
		hs := NewRawSocket(t, nil, v.Host)
		ps := NewRawSocket(t, ns, v.Peer)
		frame := append(append(append([]byte{}, peerMAC...), hostMAC...), 0x88, 0xb5)
		frame = append(frame, bytes.Repeat([]byte{0x5a}, 50)...)
		if err := hs.Send(frame); err != nil {
			t.Fatal(err)
		}
		got, err := ps.RecvMatch(2*time.Second, func(b []byte) bool { return bytes.Equal(b, frame) })
		if err != nil {
			t.Fatalf("frame host->peer not received: %v", err)
		}
		if !bytes.Equal(got, frame) {
			t.Fatalf("got %x want %x", got, frame)
		}
	})
	// Cleanup of the subtest removed the namespace and the pair.
	if _, err := LinkShow(nil, host); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("veth %s still exists after cleanup: %v", host, err)
	}
	if out, _ := Run("ip", "netns", "list"); strings.Contains(out, nsName) {
		t.Errorf("namespace %s still exists after cleanup", nsName)
	}
}

func TestDoRunsInsideNamespace(t *testing.T) {
	ns := NewNS(t)
	v := NewVeth(t, nil, ns, VethOptions{})
	var inside, outside error
	err := ns.Do(func() error {
		_, inside = net.InterfaceByName(v.Peer)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_, outside = net.InterfaceByName(v.Peer)
	if inside != nil {
		t.Errorf("peer not found inside %s: %v", ns, inside)
	}
	if outside == nil {
		t.Errorf("peer %s visible outside its namespace: the caller's thread was switched", v.Peer)
	}
}

// TestRemoveStaleNamespaces: only namespaces whose creator is gone and in
// which nothing runs are deleted; those of live processes, with a process
// inside, or without a PID in their name stay.
func TestRemoveStaleNamespaces(t *testing.T) {
	RequireRoot(t)
	prefix := UniqueName("gstale") + "-"
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Process.Kill(); live.Wait() })
	names := map[string]bool{ // name -> removed
		fmt.Sprintf("%s%d-a", prefix, dead.Process.Pid): true,
		fmt.Sprintf("%s%d-b", prefix, dead.Process.Pid): false, // a process inside
		fmt.Sprintf("%s%d-c", prefix, live.Process.Pid): false,
		fmt.Sprintf("%s%d-d", prefix, os.Getpid()):      false,
		prefix + "nopid": false,
	}
	for name := range names {
		MustRun(t, "ip", "netns", "add", name)
		t.Cleanup(func() { Run("ip", "netns", "del", name) })
	}
	inside := exec.Command("ip", "netns", "exec", fmt.Sprintf("%s%d-b", prefix, dead.Process.Pid), "sleep", "60")
	if err := inside.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inside.Process.Kill(); inside.Wait() })
	time.Sleep(100 * time.Millisecond) // ip netns exec has entered it
	gone, err := RemoveStaleNamespaces(prefix)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range names {
		_, statErr := os.Stat("/run/netns/" + name)
		if removed := os.IsNotExist(statErr); removed != want {
			t.Errorf("%s: removed %v, want %v", name, removed, want)
		}
	}
	if len(gone) != 1 {
		t.Errorf("reported %v, want one name", gone)
	}
}
