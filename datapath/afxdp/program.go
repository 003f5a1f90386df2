package afxdp

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// Mode is how the XDP program is attached and the socket bound, named as
// OVS's options:xdp-mode.
type Mode string

const (
	// ModeBestEffort tries ModeNative and falls back to ModeGeneric
	// when the driver has no XDP support (OVS's default).
	ModeBestEffort Mode = "best-effort"
	// ModeNative runs the program in the driver (XDP_FLAGS_DRV_MODE);
	// frames are copied into the UMEM (XDP_COPY).
	ModeNative Mode = "native"
	// ModeNativeZeroCopy is ModeNative with the driver writing straight
	// into the UMEM (XDP_ZEROCOPY). veth has no zero-copy support.
	ModeNativeZeroCopy Mode = "native-with-zerocopy"
	// ModeGeneric runs the program on the skb in the core stack
	// (XDP_FLAGS_SKB_MODE), for any device; frames are copied.
	ModeGeneric Mode = "generic"
)

// ParseMode reads an options:xdp-mode value; "" is ModeBestEffort.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return ModeBestEffort, nil
	case ModeBestEffort, ModeNative, ModeNativeZeroCopy, ModeGeneric:
		return m, nil
	}
	return "", fmt.Errorf("xdp-mode %q: want best-effort, native, native-with-zerocopy or generic", s)
}

// XDP actions (enum xdp_action) and the offset of rx_queue_index in
// struct xdp_md (data, data_end, data_meta, ingress_ifindex are before it).
const (
	xdpPass                 = 2
	xdpMdRxQueueIndexOffset = 16
)

// redirectProgram is the whole XDP program, the userspace datapath's only
// code in the kernel:
//
//	return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
//
// A frame of a queue with a socket in xsks goes to that socket; any other
// (a queue nobody serves) goes on to the kernel stack, as with no program.
func redirectProgram(xsks *ebpf.Map) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, xdpMdRxQueueIndexOffset, asm.Word),
		asm.LoadMapPtr(asm.R1, xsks.FD()),
		asm.Mov.Imm(asm.R3, xdpPass),
		asm.FnRedirectMap.Call(),
		asm.Return(),
	}
}

// xdpProgram is the redirect program attached to one interface and its
// XSKMAP, which maps an rx queue index to the AF_XDP socket serving it.
type xdpProgram struct {
	xsks *ebpf.Map
	prog *ebpf.Program
	link link.Link
	mode Mode // the mode the program is attached in: ModeNative or ModeGeneric
}

// loadProgram loads the program and attaches it to ifindex as mode asks.
// With ModeBestEffort it tries the driver first and reports in the
// result's mode which one took. The program is held by a bpf_link: it
// goes away when the link is closed, also when the process dies, so no
// stale program keeps swallowing frames.
func loadProgram(ifindex int, mode Mode, queues uint32) (x *xdpProgram, err error) {
	x = &xdpProgram{}
	defer func() {
		if err != nil {
			x.close()
		}
	}()
	x.xsks, err = ebpf.NewMap(&ebpf.MapSpec{
		Name:       "govs_xsks",
		Type:       ebpf.XSKMap,
		KeySize:    4, // rx queue index
		ValueSize:  4, // socket fd on update
		MaxEntries: queues,
	})
	if err != nil {
		return x, fmt.Errorf("create XSKMAP: %w", err)
	}
	x.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "govs_xsk_redir",
		Type:         ebpf.XDP,
		Instructions: redirectProgram(x.xsks),
		License:      "GPL",
	})
	if err != nil {
		return x, fmt.Errorf("load XDP redirect program: %w", err)
	}
	attach := func(flags link.XDPAttachFlags) error {
		l, err := link.AttachXDP(link.XDPOptions{Program: x.prog, Interface: ifindex, Flags: flags})
		if err != nil {
			return err
		}
		x.link = l
		return nil
	}
	switch mode {
	case ModeGeneric:
		if err := attach(link.XDPGenericMode); err != nil {
			return x, fmt.Errorf("attach XDP program in generic mode: %w", err)
		}
		x.mode = ModeGeneric
	case ModeNative, ModeNativeZeroCopy:
		if err := attach(link.XDPDriverMode); err != nil {
			return x, fmt.Errorf("attach XDP program in native mode (driver without XDP support? try xdp-mode=generic): %w", err)
		}
		x.mode = ModeNative
	case ModeBestEffort:
		nerr := attach(link.XDPDriverMode)
		if nerr == nil {
			x.mode = ModeNative
			break
		}
		if gerr := attach(link.XDPGenericMode); gerr != nil {
			return x, fmt.Errorf("attach XDP program: native mode: %w; generic mode: %w", nerr, gerr)
		}
		x.mode = ModeGeneric
	default:
		return x, fmt.Errorf("xdp-mode %q: not a mode", mode)
	}
	return x, nil
}

// register puts the socket fd into the XSKMAP slot of queue.
func (x *xdpProgram) register(queue uint32, fd int) error {
	if err := x.xsks.Update(queue, uint32(fd), ebpf.UpdateAny); err != nil {
		return fmt.Errorf("XSKMAP[%d] = socket: %w", queue, err)
	}
	return nil
}

// close detaches the program (closing the link) and frees program and map;
// safe on a partly loaded program.
func (x *xdpProgram) close() error {
	var errs []error
	if x.link != nil {
		if err := x.link.Close(); err != nil {
			errs = append(errs, fmt.Errorf("detach XDP program: %w", err))
		}
		x.link = nil
	}
	if x.prog != nil {
		if err := x.prog.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close XDP program: %w", err))
		}
		x.prog = nil
	}
	if x.xsks != nil {
		if err := x.xsks.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close XSKMAP: %w", err))
		}
		x.xsks = nil
	}
	return errors.Join(errs...)
}
