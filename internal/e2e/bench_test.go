package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govs-project/govs/internal/ovstest"
)

// BenchmarkBundle100k installs 100,000 flows with
// `ovs-ofctl --bundle add-flows` and dumps them, into govs and into Open
// vSwitch in the same run (ns/op is per 100k-flow operation; ovs-ofctl's
// own parsing and printing are included on both sides).
//
//	go test -run '^$' -bench Bundle100k -benchtime 1x ./internal/e2e/
func BenchmarkBundle100k(b *testing.B) {
	var sb strings.Builder
	for i := 0; i < 100000; i++ {
		fmt.Fprintf(&sb, "table=%d,priority=%d,ip,nw_src=10.%d.%d.%d actions=load:%#x->NXM_NX_REG1[],goto_table:%d\n",
			i%3, 100+i%50, i/65536, i/256%256, i%256, i, 10+i%3)
	}
	file := filepath.Join(b.TempDir(), "100k.flows")
	os.WriteFile(file, []byte(sb.String()), 0o644)
	targets := map[string]string{}
	// govs
	{
		n := startNode(b)
		n.mustRun("add-br", "br-int")
		targets["govs"] = "unix:" + filepath.Join(n.rundir, "br-int.mgmt")
	}
	o := ovstest.Start(b, ovstest.Options{})
	targets["ovs"] = o.Target()
	for _, name := range []string{"govs", "ovs"} {
		target := targets[name]
		b.Run(name+"/bundle-add", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				if out, err := ofctl(target, "-O", "OpenFlow13", "del-flows"); err != nil {
					b.Fatal(err, out)
				}
				b.StartTimer()
				if out, err := ofctl(target, "-O", "OpenFlow13", "--bundle", "add-flows", file); err != nil {
					b.Fatal(err, out)
				}
			}
		})
		b.Run(name+"/dump", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				out, err := ofctl(target, "-O", "OpenFlow13", "dump-flows", "--no-stats")
				if err != nil {
					b.Fatal(err)
				}
				if n := strings.Count(out, "\n"); n < 100000 {
					b.Fatalf("dumped %d flows", n)
				}
			}
		})
	}
}
