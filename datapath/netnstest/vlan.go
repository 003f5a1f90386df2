package netnstest

import (
	"fmt"
	"net"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// VLANTrunk makes ifname in ns the pod end of a trunk on VLAN vid, as a
// VLAN interface over it would (these test kernels have no 8021q
// module): every frame it sends gets an 802.1Q tag with vid, and it
// takes in only frames tagged vid, untagged, dropping the others (a
// missing or wrong tag loses the frame). Two small TCX programs do it;
// they go with the interface or at t.Cleanup. With txvlanOff the tag
// is put in the frame's data before the veth carries it (ethtool txvlan
// off), else the veth carries it aside (the skb's accelerated tag), as
// a VLAN interface over a veth does.
func VLANTrunk(t T, ns *NS, ifname string, vid uint16, txvlanOff bool) {
	t.Helper()
	if txvlanOff {
		ns.MustExec(t, "ethtool", "-K", ifname, "txvlan", "off")
	}
	const (
		skbVlanPresent = 20 // offsetof(struct __sk_buff, vlan_present)
		skbVlanTCI     = 24
		tcxPass        = 0
		tcxDrop        = 2
	)
	push := asm.Instructions{
		asm.Mov.Imm(asm.R2, 0x0081), // htons(ETH_P_8021Q)
		asm.Mov.Imm(asm.R3, int32(vid)),
		asm.FnSkbVlanPush.Call(),
		asm.Mov.Imm(asm.R0, tcxPass),
		asm.Return(),
	}
	pop := asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, skbVlanPresent, asm.Word),
		asm.JEq.Imm(asm.R2, 0, "drop"),
		asm.LoadMem(asm.R2, asm.R1, skbVlanTCI, asm.Word),
		asm.And.Imm(asm.R2, 0xfff),
		asm.JNE.Imm(asm.R2, int32(vid), "drop"),
		asm.FnSkbVlanPop.Call(),
		asm.Mov.Imm(asm.R0, tcxPass),
		asm.Return(),
		asm.Mov.Imm(asm.R0, tcxDrop).WithSymbol("drop"),
		asm.Return(),
	}
	err := ns.Do(func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		for _, p := range []struct {
			insns  asm.Instructions
			attach ebpf.AttachType
		}{{push, ebpf.AttachTCXEgress}, {pop, ebpf.AttachTCXIngress}} {
			prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.SchedCLS, Instructions: p.insns, License: "GPL"})
			if err != nil {
				return fmt.Errorf("load VLAN trunk program: %w", err)
			}
			l, err := link.AttachTCX(link.TCXOptions{Program: prog, Interface: ifi.Index, Attach: p.attach})
			prog.Close() // the link holds it
			if err != nil {
				return fmt.Errorf("attach VLAN trunk program to %s: %w", ifname, err)
			}
			t.Cleanup(func() { l.Close() })
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
