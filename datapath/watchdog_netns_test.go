package datapath

import (
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/govs-project/govs/datapath/afpacket"
	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/port"
)

// The readers of a bridge's AF_PACKET ports.
const (
	pollThread  = iota // the bridge's poll thread (the default)
	portThreads        // a goroutine per port (--port-threads)
	pmdThread          // the PMD thread
)

// watchdogBridge is a cross-connect bridge with a watchdog of period
// over veth ports 1 and 2 (reopened by PortOptions.Reopen), served by
// readers (pollThread, portThreads or pmdThread), and the watchdog's
// warning and error log.
func watchdogBridge(t *testing.T, period time.Duration, readers int) (*Bridge, *netnstest.NS, *netnstest.Veth, *observer.ObservedLogs) {
	t.Helper()
	sw, nsA, nsB := netnstest.NewNS(t), netnstest.NewNS(t), netnstest.NewNS(t)
	va := netnstest.NewVeth(t, sw, nsA, netnstest.VethOptions{PeerAddr: "10.204.0.1/24"})
	vb := netnstest.NewVeth(t, sw, nsB, netnstest.VethOptions{PeerAddr: "10.204.0.2/24"})
	core, logs := observer.New(zap.WarnLevel)
	b := NewBridge("br-test", 1, newPipeline(t, "in_port=1,actions=output:2\nin_port=2,actions=output:1", false), zap.New(core))
	b.WatchdogPeriod = period
	b.PMD = PMDConfig{Enabled: readers == pmdThread, CPU: -1}
	b.PortThreads = readers == portThreads
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close bridge: %v", err)
		}
	})
	for i, v := range []*netnstest.Veth{va, vb} {
		open := func() (port.Port, error) {
			var p *afpacket.Port
			err := sw.Do(func() (err error) {
				p, err = afpacket.Open(v.Host, afpacket.Config{})
				return err
			})
			return p, err
		}
		p, err := open()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.AddPortWith(uint32(i+1), p, KindSystem, PortOptions{Reopen: open}); err != nil {
			p.Close()
			t.Fatal(err)
		}
	}
	return b, nsA, va, logs
}

// TestNetnsWatchdog, for the poll thread and for a goroutine per port:
// with a 200 ms watchdog period, idle and busy ports are never reported;
// a reader made to block forever before its read of port 1 (as a dead
// kernel thread would leave it) while frames wait is reported within two
// periods (an error log naming the port and the counter) and replaced
// (the poll thread by a new one over new sockets of both ports, a port
// goroutine by a new socket and goroutine) with the same OpenFlow port
// numbers and counters, and the ports forward again.
func TestNetnsWatchdog(t *testing.T) {
	for _, tc := range []struct {
		name    string
		readers int
		// stallLog is the stall's error; notReplaced the error when the
		// reader cannot be replaced.
		stallLog, notReplaced string
	}{
		{"poll thread", pollThread, "poll thread stalled: frames wait unread", "stalled poll thread not replaced"},
		{"port threads", portThreads, "port goroutine stalled: frames wait unread", "stalled port not replaced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testWatchdog(t, tc.readers, tc.stallLog, tc.notReplaced)
		})
	}
}

func testWatchdog(t *testing.T, readers int, stallLog, notReplaced string) {
	const period = 200 * time.Millisecond
	b, nsA, va, logs := watchdogBridge(t, period, readers)
	stalls := func() uint64 { s, _ := b.WatchdogStats(); return s }

	ping(t, nsA, "10.204.0.2")
	t.Run("idle ports", func(t *testing.T) {
		time.Sleep(6 * period)
		if n := stalls(); n != 0 {
			t.Fatalf("%d stalls reported on idle ports", n)
		}
	})
	t.Run("busy ports", func(t *testing.T) {
		// About 12 watchdog periods of a steady stream.
		out, err := nsA.Exec("ping", "-c", "150", "-i", "0.01", "-q", "10.204.0.2")
		// A few losses are allowed (-race on a loaded machine): what is
		// tested is that a busy port is not reported.
		if err != nil || !strings.Contains(out, " 0% packet loss") && !strings.Contains(out, " 1% packet loss") && !strings.Contains(out, " 2% packet loss") {
			t.Fatalf("ping: %v\n%s", err, out)
		}
		if n := stalls(); n != 0 {
			t.Fatalf("%d stalls reported on busy ports", n)
		}
	})

	t.Run("stalled port replaced", func(t *testing.T) {
		stuck, other := b.ports.Load().byNo[1], b.ports.Load().byNo[2]
		before, _ := b.Port(1)
		release := make(chan struct{})
		var once sync.Once
		blocked := make(chan struct{})
		hook := func(bp *bridgePort) {
			if bp == stuck {
				once.Do(func() { close(blocked) })
				<-release
			}
		}
		stallHookFn.Store(&hook)
		t.Cleanup(func() {
			stallHookFn.Store(nil)
			close(release) // the abandoned goroutine finds its port closed and exits
		})
		// The loop sits in its read: the next frame wakes it, it forwards
		// that one and blocks in the hook before the next read.
		go nsA.Exec("ping", "-c", "20", "-i", "0.05", "-W", "1", "10.204.0.2")
		select {
		case <-blocked:
		case <-time.After(5 * time.Second):
			t.Fatal("the port goroutine never reached the hook")
		}
		start := time.Now()
		for stalls() == 0 && time.Since(start) < 50*period {
			time.Sleep(period / 10)
		}
		took := time.Since(start)
		b.mu.Lock() // the tick that counted it has finished
		b.mu.Unlock()
		if stalls() != 1 {
			t.Fatalf("%d stalls after %v, want 1", stalls(), took)
		}
		t.Logf("stall reported %v after the goroutine blocked (period %v)", took, period)
		// Frames wait from the next ping on (up to 50 ms later); the
		// watchdog needs them readable at two ticks: three periods
		// plus scheduling slack.
		if took > 5*period {
			t.Errorf("stall reported after %v, want within about two periods of %v", took, period)
		}
		if _, reopened := b.WatchdogStats(); reopened != 1 {
			t.Errorf("%d ports replaced, want 1", reopened)
		}
		if e := logs.FilterMessage(stallLog).All(); len(e) != 1 || e[0].Level != zap.ErrorLevel || !namesPort(e[0].ContextMap(), va.Host) {
			t.Errorf("stall log entries %v, want one error naming %s", e, va.Host)
		}
		if b.ports.Load().byNo[1] == stuck {
			t.Fatal("port 1 was not replaced")
		}
		if readers == pollThread {
			// The new thread serves both ports, over new sockets.
			if np := b.ports.Load().byNo[1]; np.poller == nil || b.pmd == nil || !b.pmd.poll {
				t.Fatal("port 1 is not served by a poll thread after the replacement")
			}
			if b.ports.Load().byNo[2] == other {
				t.Error("port 2 kept the stalled thread's socket")
			}
		}
		ping(t, nsA, "10.204.0.2")
		after, ok := b.Port(1)
		if !ok || after.Name != va.Host {
			t.Fatalf("port 1 after the replacement: %+v", after)
		}
		if after.Stats.RxPackets <= before.Stats.RxPackets || after.Stats.TxPackets <= before.Stats.TxPackets {
			t.Errorf("port 1's counters did not carry over: before %+v, after %+v", before.Stats, after.Stats)
		}
		time.Sleep(4 * period)
		if n := stalls(); n != 1 {
			for _, e := range logs.All() {
				t.Logf("%s %v", e.Message, e.ContextMap())
			}
			t.Errorf("%d stalls after the replacement, want 1", n)
		}
	})

	// A port that cannot be opened again is reported once per stall,
	// and it forwards again by itself once its goroutine moves.
	t.Run("stalled port reported only", func(t *testing.T) {
		b.mu.Lock()
		b.ports.Load().byNo[1].reopen = nil
		b.mu.Unlock()
		stallReportedOnly(t, b, nsA, logs, period, notReplaced)
	})
}

// namesPort tells whether a stall log entry's fields name port: "port"
// for a port goroutine, among "ports" for a thread.
func namesPort(fields map[string]any, port string) bool {
	if fields["port"] == port {
		return true
	}
	names, _ := fields["ports"].([]any)
	for _, n := range names {
		if n == port {
			return true
		}
	}
	return false
}

// TestNetnsWatchdogPMD: ports the PMD thread serves are watched too; a
// stalled PMD thread is reported once per stall and never replaced, and
// the ports forward again once it moves.
func TestNetnsWatchdogPMD(t *testing.T) {
	const period = 200 * time.Millisecond
	b, nsA, _, logs := watchdogBridge(t, period, pmdThread)
	ping(t, nsA, "10.204.0.2")
	time.Sleep(4 * period)
	if s, _ := b.WatchdogStats(); s != 0 {
		t.Fatalf("%d stalls reported on idle PMD ports", s)
	}
	stallReportedOnly(t, b, nsA, logs, period, "stalled PMD thread not replaced")
}

// stallReportedOnly blocks the goroutine or thread that reads port 1 and
// checks that the stall is reported once in 8 periods, logged with
// notReplaced, the port not replaced, and that it forwards once the
// block ends.
func stallReportedOnly(t *testing.T, b *Bridge, nsA *netnstest.NS, logs *observer.ObservedLogs, period time.Duration, notReplaced string) {
	t.Helper()
	stuck := b.ports.Load().byNo[1]
	before, reopenedBefore := b.WatchdogStats()
	notBefore := logs.FilterMessage(notReplaced).Len()
	release := make(chan struct{})
	blocked := make(chan struct{})
	var once sync.Once
	hook := func(bp *bridgePort) {
		if bp == stuck {
			once.Do(func() { close(blocked) })
			<-release
		}
	}
	stallHookFn.Store(&hook)
	defer stallHookFn.Store(nil)
	go nsA.Exec("ping", "-c", "20", "-i", "0.05", "-W", "1", "10.204.0.2")
	select {
	case <-blocked:
	case <-time.After(5 * time.Second):
		t.Fatal("port 1's reader never reached the hook")
	}
	time.Sleep(8 * period)
	stalls, reopened := b.WatchdogStats()
	if n := stalls - before; n != 1 {
		t.Errorf("%d stalls reported in 8 periods of one stall, want 1", n)
	}
	if reopened != reopenedBefore {
		t.Errorf("the port was replaced")
	}
	if n := logs.FilterMessage(notReplaced).Len() - notBefore; n != 1 {
		t.Errorf("%d %q log entries, want 1", n, notReplaced)
	}
	stallHookFn.Store(nil)
	close(release)
	ping(t, nsA, "10.204.0.2")
	if b.ports.Load().byNo[1] != stuck {
		t.Errorf("port 1 was replaced")
	}
}
