package flowtable

import (
	"testing"
	"time"
)

// TestLockStats: flow-mods count as write holds, a walk that meets a
// writer counts its wait (at least as long as the writer held the lock),
// an uncontended walk counts nothing, and a reset starts the maxima over.
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

	p.LockStats(true)
	const hold = 50 * time.Millisecond
	p.mu.Lock()
	started, done := make(chan struct{}), make(chan struct{})
	go func() {
		close(started)
		p.Run(&pkt, nil, nil)
		close(done)
	}()
	<-started
	time.Sleep(hold)
	p.unlockWrite(time.Now().Add(-hold))
	<-done
	s = p.LockStats(true)
	if s.ReadWaits != 1 || s.ReadWaitMax < hold/2 || s.WriteHolds != 1 || s.WriteHoldMax < hold {
		t.Fatalf("a walk behind a %v write hold: %+v", hold, s)
	}
	if s.WriteHoldLog2[25] != 1 { // 50 ms is in [2^25, 2^26) ns
		t.Errorf("histogram %v, want the hold in bucket 24", s.WriteHoldLog2)
	}
	if s = p.LockStats(false); s.ReadWaits != 0 || s.ReadWaitMax != 0 || s.WriteHoldMax != 0 {
		t.Errorf("after a reset: %+v", s)
	}
}
