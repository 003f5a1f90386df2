package vswitchd

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/govs-project/govs/datapath/netnstest"
)

// BenchmarkReconcile1000Internal: one reconciliation that adds 1,000
// internal ports (as one ovs-vsctl transaction asks), in a namespace.
func BenchmarkReconcile1000Internal(b *testing.B) {
	ns := netnstest.NewNS(b)
	want := State{Bridges: []BridgeConfig{{Name: "brb"}}}
	for i := 0; i < 1000; i++ {
		want.Bridges[0].Ports = append(want.Bridges[0].Ports, PortConfig{Name: fmt.Sprintf("bq%d", i), Type: "internal"})
	}
	for i := 0; i < b.N; i++ {
		err := ns.Do(func() error {
			runtime.LockOSThread() // the TAPs are made on this thread's namespace
			d := New(b.TempDir(), nil)
			d.dbMode = true
			b.StartTimer()
			res := d.Reconcile(want)
			b.StopTimer()
			if st := res.Ports["bq999"]; st.Err != nil {
				return st.Err
			}
			return d.Close()
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
