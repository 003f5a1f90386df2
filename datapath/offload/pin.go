package offload

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/govs-project/govs/conntrack"
)

// Pinning (docs/offload.md, "Restarts without a gap"): a datapath's maps
// and the links that attach its program to the ports live in bpffs under
// a directory of its own, so that established connections keep flowing
// in the kernel while govs-vswitchd stops, restarts or is upgraded:
//
//	<root>/<rundir>/<bridge>/v<layout>/flows       the entries
//	<root>/<rundir>/<bridge>/v<layout>/generation  the valid generation
//	<root>/<rundir>/<bridge>/v<layout>/govs_conns  each entry's connection
//	<root>/<rundir>/<bridge>/links/<port>          the XDP links
//
// The owner of every pin is the datapath the directory names: a clean
// stop keeps them, `ovs-appctl exit --cleanup`, a port's or bridge's
// deletion remove them, and a restart adopts them or (ports and bridges
// removed while govs was down) removes them.

// DefaultPinRoot is where govs-vswitchd pins its datapaths' kernel state.
const DefaultPinRoot = "/sys/fs/bpf/govs"

// PinDir is the bpffs directory of one datapath: the daemon's rundir
// (two daemons never share one) and the bridge. The rundir path becomes
// one directory name, '/' replaced by '_'.
func PinDir(root, rundir, bridge string) string {
	return filepath.Join(RundirPinDir(root, rundir), bridge)
}

// RundirPinDir is the bpffs directory of every datapath of one daemon.
func RundirPinDir(root, rundir string) string {
	abs, err := filepath.Abs(rundir)
	if err != nil {
		abs = rundir
	}
	name := strings.ReplaceAll(strings.Trim(abs, "/"), "/", "_")
	if name == "" {
		name = "_"
	}
	return filepath.Join(root, name)
}

// mountBPFFS makes sure dir is on a bpffs, mounting one at /sys/fs/bpf
// when dir is under it and it is not mounted yet (as iproute2 and cilium
// do). mounted tells that this process mounted it: in a mount namespace
// of its own (ip netns exec remounts /sys) the pins then last only as
// long as that namespace.
func mountBPFFS(dir string) (mounted bool, err error) {
	const mnt = "/sys/fs/bpf"
	p := dir
	for {
		var st unix.Statfs_t
		if err := unix.Statfs(p, &st); err == nil {
			if st.Type == unix.BPF_FS_MAGIC {
				return false, nil
			}
			break
		}
		if p == "/" || p == "." {
			break
		}
		p = filepath.Dir(p)
	}
	if dir != mnt && !strings.HasPrefix(dir, mnt+"/") {
		return false, fmt.Errorf("pin directory %s: not on a bpffs", dir)
	}
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		return false, fmt.Errorf("bpffs: %w", err)
	}
	if err := unix.Mount("bpf", mnt, "bpf", 0, "mode=0700"); err != nil {
		return false, fmt.Errorf("mount bpffs at %s: %w", mnt, err)
	}
	return true, nil
}

// privateMountNS tells whether this process has a mount namespace other
// than init's.
func privateMountNS() bool {
	self, err1 := os.Readlink("/proc/self/ns/mnt")
	init, err2 := os.Readlink("/proc/1/ns/mnt")
	return err1 == nil && err2 == nil && self != init
}

// layoutVersion names the layout of the pinned maps: a program whose maps
// have the same types, sizes and struct members can adopt them; any other
// gets maps of its own (a new v<layout> directory).
func layoutVersion(spec *ebpf.CollectionSpec) string {
	h := sha256.New()
	fmt.Fprintf(h, "conns %d\n", binary.Size(connInfo{}))
	for _, name := range pinnedMaps(spec) {
		m := spec.Maps[name]
		fmt.Fprintf(h, "%s %v %d %d %d\n", name, m.Type, m.KeySize, m.ValueSize, m.MaxEntries)
		for _, t := range []btf.Type{m.Key, m.Value} {
			if s, ok := t.(*btf.Struct); ok {
				for _, mb := range s.Members {
					fmt.Fprintf(h, " %s@%d", mb.Name, mb.Offset)
				}
			}
			fmt.Fprintln(h)
		}
	}
	return "v" + hex.EncodeToString(h.Sum(nil)[:6])
}

// pinnedMaps names the program's maps that are pinned: all but the
// sections of its global variables (.rodata, .data, .bss), which belong
// to one loaded program.
func pinnedMaps(spec *ebpf.CollectionSpec) []string {
	var names []string
	for name := range spec.Maps {
		if !strings.HasPrefix(name, ".") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// connInfo is the conntrack entry of a kernel entry's connection, pinned
// next to it (the conns map) so that a restarted daemon's conntrack can
// adopt the connection: the kernel entry alone has neither the zone nor
// the mark, the label or the other direction's NAT.
type connInfo struct {
	OrigSrc, OrigDst       [4]byte
	OrigSport, OrigDport   uint16
	ReplySrc, ReplyDst     [4]byte
	ReplySport, ReplyDport uint16
	Mark                   uint32
	Zone                   uint16
	Proto                  uint8
	_                      uint8
	LabelHi, LabelLo       uint64
}

func connInfoOf(e *conntrack.Entry) connInfo {
	return connInfo{
		OrigSrc: e.Orig.Src.As4(), OrigDst: e.Orig.Dst.As4(), OrigSport: e.Orig.SrcPort, OrigDport: e.Orig.DstPort,
		ReplySrc: e.Reply.Src.As4(), ReplyDst: e.Reply.Dst.As4(), ReplySport: e.Reply.SrcPort, ReplyDport: e.Reply.DstPort,
		Mark: e.Mark, Zone: e.Zone, Proto: e.Orig.Proto, LabelHi: e.Label.Hi, LabelLo: e.Label.Lo,
	}
}

func (c *connInfo) entry() conntrack.Entry {
	return conntrack.Entry{
		Orig: conntrack.Tuple{Src: netip.AddrFrom4(c.OrigSrc), Dst: netip.AddrFrom4(c.OrigDst), Proto: c.Proto,
			SrcPort: c.OrigSport, DstPort: c.OrigDport},
		Reply: conntrack.Tuple{Src: netip.AddrFrom4(c.ReplySrc), Dst: netip.AddrFrom4(c.ReplyDst), Proto: c.Proto,
			SrcPort: c.ReplySport, DstPort: c.ReplyDport},
		Zone: c.Zone, Mark: c.Mark, Label: conntrack.Label{Hi: c.LabelHi, Lo: c.LabelLo},
	}
}

// pins is the pinned side of a Kernel (nil: nothing pinned, the state
// dies with the process).
type pins struct {
	dir     string // the datapath's directory
	version string // v<layout>
	adopted bool   // the maps were there: another process's state
	// ownMount: this process mounted the bpffs in a mount namespace of
	// its own; the pins go with that namespace.
	ownMount bool
	// retain: closing keeps the pins (a clean stop that is not --cleanup).
	retain atomic.Bool

	mu      sync.Mutex
	claimed map[string]*portLink // the port links of this process, by pin name
	// hold are the programs without keepalives the links run while no
	// process can take them (nil: the links run the Kernel's programs).
	hold *programs
}

func (p *pins) mapDir() string  { return filepath.Join(p.dir, p.version) }
func (p *pins) linkDir() string { return filepath.Join(p.dir, "links") }

// loadPinned loads the program with its maps pinned in dir, adopting
// them when a previous process left maps of the same layout there; maps
// of other layouts are unpinned (the links still using them keep them
// until they are moved to the new program).
func (k *Kernel) loadPinned(spec *ebpf.CollectionSpec, dir string) error {
	mounted, err := mountBPFFS(dir)
	if err != nil {
		return err
	}
	p := &pins{dir: dir, version: layoutVersion(spec), claimed: map[string]*portLink{}, ownMount: mounted && privateMountNS()}
	if err := os.MkdirAll(p.mapDir(), 0o700); err != nil {
		return fmt.Errorf("pin directory: %w", err)
	}
	if err := os.MkdirAll(p.linkDir(), 0o700); err != nil {
		return fmt.Errorf("pin directory: %w", err)
	}
	old, _ := os.ReadDir(dir)
	for _, e := range old {
		if e.IsDir() && e.Name() != p.version && strings.HasPrefix(e.Name(), "v") {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("unpin maps of another layout: %w", err)
			}
		}
	}
	_, err = os.Stat(filepath.Join(p.mapDir(), offloadMapFlows))
	p.adopted = err == nil
	for _, name := range pinnedMaps(spec) {
		spec.Maps[name].Pinning = ebpf.PinByName
	}
	opts := &ebpf.CollectionOptions{Maps: ebpf.MapOptions{PinPath: p.mapDir()}}
	err = spec.LoadAndAssign(&k.objs, opts)
	if errors.Is(err, ebpf.ErrMapIncompatible) {
		// Same layout hash, yet the kernel's maps differ (flags, a
		// hand-made pin): start over with maps of our own.
		if err := os.RemoveAll(p.mapDir()); err != nil {
			return fmt.Errorf("unpin incompatible maps: %w", err)
		}
		if err := os.MkdirAll(p.mapDir(), 0o700); err != nil {
			return fmt.Errorf("pin directory: %w", err)
		}
		p.adopted = false
		err = spec.LoadAndAssign(&k.objs, opts)
	}
	if err != nil {
		return err
	}
	k.conns, err = ebpf.NewMapWithOptions(&ebpf.MapSpec{
		Name: "govs_conns", Type: ebpf.Hash, Pinning: ebpf.PinByName,
		KeySize: uint32(binary.Size(offloadFlowKey{})), ValueSize: uint32(binary.Size(connInfo{})),
		MaxEntries: spec.Maps[offloadMapFlows].MaxEntries,
	}, ebpf.MapOptions{PinPath: p.mapDir()})
	if err != nil {
		k.objs.Close()
		return fmt.Errorf("conns map: %w", err)
	}
	k.pins, k.spec = p, spec
	return nil
}

// PinsOutliveProcess tells whether the pinned state can outlive the
// process (false: not pinned, or on a bpffs private to its mount
// namespace).
func (k *Kernel) PinsOutliveProcess() bool { return k.pins != nil && !k.pins.ownMount }

// Adopted tells whether the maps are a previous process's, with the
// entries it installed.
func (k *Kernel) Adopted() bool { return k.pins != nil && k.pins.adopted }

// portLink is a port's attachment of the program.
type portLink struct {
	l       link.Link
	path    string // its pin ("" when not pinned)
	p       *pins  // nil: not pinned
	kind    linkKind
	k       *Kernel
	ifindex int
}

// Close detaches the program from the port, unless the datapath retains
// its pins (a clean stop): then only this process's handle goes.
func (pl *portLink) Close() error {
	pl.k.veth.Delete(uint32(pl.ifindex))
	if pl.p != nil {
		pl.p.mu.Lock()
		delete(pl.p.claimed, filepath.Base(pl.path))
		pl.p.mu.Unlock()
		if !pl.p.retain.Load() {
			if err := pl.l.Unpin(); err != nil {
				pl.l.Close()
				return fmt.Errorf("unpin offload link: %w", err)
			}
		}
	}
	return pl.l.Close()
}

// attachPinned attaches the program to port name (interface ifindex)
// through its pinned link: a link a previous process left on that
// interface is moved to this program in one step (bpf_link_update: the
// interface is never without a program), any other is replaced.
func (k *Kernel) attachPinned(ifindex int, name string, kd linkKind) (io.Closer, error) {
	p := k.pins
	if name == "" || strings.ContainsRune(name, '/') {
		return nil, fmt.Errorf("attach offload program: bad port name %q", name)
	}
	path := filepath.Join(p.linkDir(), name)
	pl := &portLink{path: path, p: p, kind: kd, k: k, ifindex: ifindex}
	var old link.Link
	if l, err := link.LoadPinnedLink(path, nil); err == nil {
		if linkOn(l, ifindex, kd.tcx()) {
			if err := l.Update(k.linkProgram(kd)); err == nil {
				pl.l = l
				return p.claim(pl), nil
			}
		}
		// Another interface of that name, the other attach mode (an
		// older govs put XDP where this one uses tc, or the port's
		// offload metadata changed), or a link the kernel cannot move:
		// detach it, attach anew.
		old = l
	} else if !errors.Is(err, os.ErrNotExist) {
		os.Remove(path)
	}
	if old != nil && !kd.tcx() {
		// To XDP, the old link goes first: the port's socket runs no
		// filter, so in between every frame reaches it once, while a
		// TCX program left next to XDP would forward, deciding alone,
		// frames the socket got too.
		closeLink(old)
		old = nil
	}
	l, err := k.attachLink(ifindex, kd, k.linkProgram(kd))
	if err != nil && old != nil {
		closeLink(old)
		old = nil
		l, err = k.attachLink(ifindex, kd, k.linkProgram(kd))
	}
	if err != nil {
		return nil, err
	}
	// To TCX, the old link goes only once the new one is attached: in
	// between, frames would reach neither an output nor the port's
	// socket, which is bound for upcalls already (they would go to the
	// host's stack). With both, an old XDP program redirects first and
	// what it passes meets the TCX program, which decides it once (of
	// two TCX programs, the first ends the chain with its verdict).
	if old != nil {
		closeLink(old)
	}
	if err := l.Pin(path); err != nil {
		l.Close()
		return nil, fmt.Errorf("pin offload link of %s: %w", name, err)
	}
	pl.l = l
	return p.claim(pl), nil
}

// closeLink unpins and detaches a link.
func closeLink(l link.Link) {
	l.Unpin()
	l.Close()
}

// linkOn tells whether l is the program's link of that mode on ifindex.
func linkOn(l link.Link, ifindex int, tc bool) bool {
	info, err := l.Info()
	if err != nil {
		return false
	}
	if tc {
		return info.Type == link.TCXType && info.TCX() != nil && int(info.TCX().Ifindex) == ifindex &&
			uint32(info.TCX().AttachType) == uint32(ebpf.AttachTCXIngress)
	}
	return info.Type == link.XDPType && info.XDP() != nil && int(info.XDP().Ifindex) == ifindex
}

func (p *pins) claim(pl *portLink) *portLink {
	p.mu.Lock()
	p.claimed[filepath.Base(pl.path)] = pl
	p.mu.Unlock()
	return pl
}

// linkProgram is the program new links of a kind run: the hold program
// while there is one.
func (k *Kernel) linkProgram(kd linkKind) *ebpf.Program {
	if k.pins != nil {
		k.pins.mu.Lock()
		defer k.pins.mu.Unlock()
		if k.pins.hold != nil {
			return k.pins.hold.of(kd)
		}
	}
	return k.programs().of(kd)
}

// Hold moves the ports' links (and those attached later) to a copy of
// the program that passes no keepalives to userspace: while no process
// can take them (between a clean stop and the next process's
// revalidation) they would be lost, one packet per entry, direction and
// second. The entries forward as before.
func (k *Kernel) Hold() error {
	if k.pins == nil {
		return nil
	}
	spec := k.spec.Copy()
	if err := spec.Variables[offloadVarPassIntervalNs].Set(uint64(math.MaxUint64)); err != nil {
		return fmt.Errorf("hold program: %w", err)
	}
	// The same maps: the pinned ones, by their pins.
	replace := map[string]*ebpf.Map{}
	defer func() {
		for _, m := range replace {
			m.Close()
		}
	}()
	for _, name := range pinnedMaps(spec) {
		m, err := ebpf.LoadPinnedMap(filepath.Join(k.pins.mapDir(), name), nil)
		if err != nil {
			return fmt.Errorf("hold program: %w", err)
		}
		replace[name] = m
	}
	var objs struct {
		Prog         *ebpf.Program `ebpf:"govs_offload"`
		ProgTC       *ebpf.Program `ebpf:"govs_offload_tc"`
		ProgUnderlay *ebpf.Program `ebpf:"govs_underlay_tc"`
	}
	if err := spec.LoadAndAssign(&objs, &ebpf.CollectionOptions{MapReplacements: replace}); err != nil {
		return fmt.Errorf("load hold program: %w", err)
	}
	// The held flag stops the keepalives of whichever program runs (a
	// next process's too, while it has not revalidated).
	hold := &programs{xdp: objs.Prog, tc: objs.ProgTC, underlay: objs.ProgUnderlay}
	if err := k.objs.Generation.Put(uint32(1), uint64(1)); err != nil {
		hold.close()
		return fmt.Errorf("hold offload links: %w", err)
	}
	p := k.pins
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeHoldLocked()
	p.hold = hold
	return p.updateLinksLocked(*hold)
}

func (p *pins) closeHoldLocked() {
	if p.hold != nil {
		p.hold.close()
	}
	p.hold = nil
}

// Release moves the links back to the Kernel's program, with keepalives.
func (k *Kernel) Release() error {
	if k.pins == nil {
		return nil
	}
	p := k.pins
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hold == nil {
		return nil
	}
	err := p.updateLinksLocked(k.programs())
	p.closeHoldLocked()
	if perr := k.objs.Generation.Put(uint32(1), uint64(0)); perr != nil {
		err = errors.Join(err, fmt.Errorf("release offload links: %w", perr))
	}
	return err
}

func (p *pins) updateLinksLocked(ps programs) error {
	var errs []error
	for name, pl := range p.claimed {
		if err := pl.l.Update(ps.of(pl.kind)); err != nil {
			errs = append(errs, fmt.Errorf("move the offload link of %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// SweepLinks unpins the links no port of this process claimed: ports
// deleted while govs-vswitchd was down. Their programs are detached.
func (k *Kernel) SweepLinks() []string {
	if k.pins == nil {
		return nil
	}
	p := k.pins
	p.mu.Lock()
	defer p.mu.Unlock()
	var gone []string
	es, _ := os.ReadDir(p.linkDir())
	for _, e := range es {
		if p.claimed[e.Name()] == nil {
			if os.Remove(filepath.Join(p.linkDir(), e.Name())) == nil {
				gone = append(gone, e.Name())
			}
		}
	}
	return gone
}

// Retain makes Close (and the ports' links' Close) keep the pins: the
// program stays attached and the entries keep forwarding for the next
// process to adopt.
func (k *Kernel) Retain() {
	if k.pins != nil {
		k.pins.retain.Store(true)
	}
}

func (k *Kernel) retained() bool { return k.pins != nil && k.pins.retain.Load() }

// unpin removes the maps' pins and the datapath's directory (the links'
// pins are the ports', removed when they close). Empty parents go too.
func (k *Kernel) unpin() error {
	p := k.pins
	var errs []error
	if err := k.conns.Unpin(); err != nil {
		errs = append(errs, err)
	}
	for _, name := range pinnedMaps(k.spec) {
		if err := os.Remove(filepath.Join(p.mapDir(), name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("unpin offload map: %w", err))
		}
	}
	for _, d := range []string{p.mapDir(), p.linkDir(), p.dir, filepath.Dir(p.dir)} {
		os.Remove(d) // fails while another datapath still uses it
	}
	return errors.Join(errs...)
}

// RemovePins removes a datapath's (or a daemon's) pinned state that no
// running process owns: its maps are freed and its programs detached
// once the last pin goes.
func RemovePins(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove pinned offload state: %w", err)
	}
	return nil
}
