package datapath

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/port/porttest"
)

// TestHostileFrames sends malformed frames at full rate into the frontend
// port of worker 1's seed pipeline (with conntrack) while an established
// frontend -> backend1 connection keeps sending: every legitimate segment
// must come out of backend1's port, and the loop must survive (issue 15).
func TestHostileFrames(t *testing.T) {
	br, ps, data := establishedBridge(t, true)
	in, out := ps[portFrontend], ps[portBackend1]
	out.Sent() // the handshake
	// The segment as the pipeline forwards it.
	inject(t, br, ps, portFrontend, data)
	fwd := out.Sent()
	if len(fwd) != 1 {
		t.Fatalf("legitimate segment: backend1 sent %d frames, want 1", len(fwd))
	}
	want := fwd[0]
	rng := rand.New(rand.NewPCG(15, 8))
	var hostile [][]byte
	for _, f := range porttest.HostileFrames(rng, data) {
		if !bytes.Equal(f, data) { // an IHL of 5 changes nothing, for one
			hostile = append(hostile, f)
		}
	}
	if len(hostile) < 200 {
		t.Fatalf("only %d hostile frames", len(hostile))
	}
	const rounds, legitEvery = 200, 16
	start := time.Now()
	legit, sentHostile := 0, 0
	batch := make([][]byte, 0, len(hostile)+len(hostile)/legitEvery+1)
	for r := 0; r < rounds; r++ {
		batch = batch[:0]
		for i, f := range hostile {
			batch = append(batch, f)
			if i%legitEvery == 0 {
				batch = append(batch, data)
				legit++
			}
		}
		sentHostile += len(hostile)
		for len(batch) > 0 { // within the port's receive queue
			n := min(len(batch), 512)
			inject(t, br, ps, portFrontend, batch[:n]...)
			batch = batch[n:]
		}
	}
	elapsed := time.Since(start)
	got := 0
	for _, f := range out.Sent() {
		if bytes.Equal(f, want) {
			got++
		}
	}
	if got != legit {
		t.Errorf("backend1 forwarded %d of %d legitimate segments sent among the hostile frames", got, legit)
	}
	if st := in.Stats(); st.RxPackets < uint64(sentHostile+legit) {
		t.Errorf("frontend port received %d frames, want %d", st.RxPackets, sentHostile+legit)
	}
	t.Logf("%d hostile frames (%d kinds) and %d legitimate segments in %v (%.0f frames/s); all %d legitimate segments forwarded",
		sentHostile, len(hostile), legit, elapsed.Round(time.Millisecond), float64(sentHostile+legit)/elapsed.Seconds(), got)
}
