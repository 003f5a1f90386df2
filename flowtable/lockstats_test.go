package flowtable

import (
	"math/bits"
	"testing"
	"time"
)

// TestLockStats: flow-mods count as write holds, a walk beside a writer
// holding the lock neither waits nor counts a wait, and a reset starts
// the maxima over.
func TestLockStats(t *testing.T) {
	p := NewPipeline()
	f := &Flow{Table: 0, Priority: 100, Actions: []Action{&Output{Port: 2}}}
	ipv4(&f.Match)
	for i := 0; i < 3; i++ {
		if _, err := p.Apply([]FlowOp{{Kind: OpAdd, Flow: f}}); err != nil {
			t.Fatal(err)
		}
	}
	var pkt Packet
	pkt.Key.SetEthType(EthTypeIPv4)
	p.Run(&pkt, nil, nil)
	s := p.LockStats(false)
	if s.WriteHolds != 3 || s.WriteHoldMax <= 0 || s.WriteHold < s.WriteHoldMax || s.ReadWaits != 0 {
		t.Fatalf("after 3 flow-mods and a walk: %+v", s)
	}
	var n uint64
	for _, c := range s.WriteHoldLog2 {
		n += c
	}
	if n != 3 {
		t.Errorf("histogram holds %d, want 3", n)
	}
	if q := s.WriteHoldQuantile(0.99); q <= 0 || q > s.WriteHoldMax {
		t.Errorf("p99 hold %v, max %v", q, s.WriteHoldMax)
	}

	// A writer holding the lock for 50 ms holds up no walk: the walk
	// finishes while the writer still holds it.
	p.LockStats(true)
	const hold = 50 * time.Millisecond
	held := p.lockWrite()
	done := make(chan struct{})
	go func() {
		p.Run(&pkt, nil, nil)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a walk waited for a writer")
	}
	time.Sleep(time.Until(held.Add(hold)))
	p.unlockWrite(held)
	s = p.LockStats(true)
	if s.ReadWaits != 0 || s.WriteHolds != 1 || s.WriteHoldMax < hold {
		t.Fatalf("a walk beside a %v write hold: %+v", hold, s)
	}
	// The one hold lands in the bucket of its length: 50 ms is in
	// [2^25, 2^26) ns, a loaded machine may oversleep into the next.
	if b := bits.Len64(uint64(s.WriteHoldMax)) - 1; b < 25 || s.WriteHoldLog2[b] != 1 {
		t.Errorf("histogram %v, want the %v hold in bucket %d", s.WriteHoldLog2, s.WriteHoldMax, b)
	}
	if s = p.LockStats(false); s.ReadWaits != 0 || s.ReadWaitMax != 0 || s.WriteHoldMax != 0 {
		t.Errorf("after a reset: %+v", s)
	}
}
