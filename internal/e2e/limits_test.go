package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLimitFlags: govs-vswitchd's limit options are in force from the
// start (the conntrack ones as `ovs-appctl dpctl/ct-get-maxconns` and
// ct-get-limits show them, the flow and group ones as flow-mods and
// group-mods refused with OFPFMFC_TABLE_FULL / OFPGMFC_OUT_OF_GROUPS), and
// a bad value stops the daemon with an error naming the option.
func TestLimitFlags(t *testing.T) {
	n := startNode(t, "--flow-limit", "3", "--max-flows=4", "--max-groups", "1", "--ct-maxconns", "1234",
		"--ct-zone-limit", "default=50", "--ct-zone-limit", "zone=7,limit=5")
	if out, _ := n.appctl(t, "dpctl/ct-get-maxconns"); out != "1234\n" {
		t.Errorf("ct-get-maxconns: %q, want 1234", out)
	}
	if out, _ := n.appctl(t, "dpctl/ct-get-limits"); out != "default limit=50\nzone=7,limit=5,count=0\n" {
		t.Errorf("ct-get-limits:\n%s", out)
	}
	n.mustRun("add-br", "br0", "fail_mode=secure")
	target := "unix:" + filepath.Join(n.rundir, "br0.mgmt")
	add := func(args ...string) error {
		_, err := ofctl(target, append([]string{"-O", "OpenFlow13"}, args...)...)
		return err
	}
	for i, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"add-flow", "priority=1,ip,actions=drop"}, ""},
		{[]string{"add-flow", "priority=2,ip,actions=drop"}, ""},
		{[]string{"add-flow", "priority=3,ip,actions=drop"}, ""},
		{[]string{"add-flow", "priority=4,ip,actions=drop"}, "OFPFMFC_TABLE_FULL"},         // --flow-limit 3
		{[]string{"add-flow", "priority=3,ip,actions=output:1"}, ""},                       // replaces
		{[]string{"add-flow", "table=1,priority=1,ip,actions=drop"}, ""},                   // the fourth
		{[]string{"add-flow", "table=2,priority=1,ip,actions=drop"}, "OFPFMFC_TABLE_FULL"}, // --max-flows 4
		{[]string{"add-group", "group_id=1,type=all,bucket=actions=drop"}, ""},
		{[]string{"add-group", "group_id=2,type=all,bucket=actions=drop"}, "OFPGMFC_OUT_OF_GROUPS"}, // --max-groups 1
	} {
		err := add(tc.args...)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%d %v: %v", i, tc.args, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%d %v: %v, want %s", i, tc.args, err, tc.err)
		}
	}

	_, vswitchd := binaries(t)
	for _, tc := range []struct{ args, want string }{
		{"--flow-limit lots", "--flow-limit lots: want a positive number"},
		{"--ct-maxconns 0", "--ct-maxconns 0: want a positive number"},
		{"--ct-zone-limit zone=1,limit", `--ct-zone-limit "zone=1,limit": want default=N or zone=Z,limit=N`},
		{"--max-group 3", "unrecognized option '--max-group'"},
	} {
		cmd := exec.Command(vswitchd, append([]string{"--rundir", t.TempDir()}, strings.Fields(tc.args)...)...)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), tc.want) {
			t.Errorf("govs-vswitchd %s: %v, output %q, want status 1 and %q", tc.args, err, out, tc.want)
		}
	}
}

// TestOVSDBFlowLimit: a bridge's Flow_Table flow_limit (set with
// ovs-vsctl) limits that table in govs as in Open vSwitch 3.1, changes
// take effect on the running bridge, and other tables keep the default.
func TestOVSDBFlowLimit(t *testing.T) {
	results := map[string]string{}
	for _, sw := range []string{"govs", "ovs"} {
		r := newOVSDBRig(t)
		if sw == "govs" {
			r.startGovs()
		} else {
			r.startOVS()
		}
		r.vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev", "fail_mode=secure",
			"--", "--id=@ft", "create", "Flow_Table", "flow_limit=2", "--", "set", "bridge", "br0", "flow_tables:3=@ft")
		target := "unix:" + filepath.Join(r.dir, "br0.mgmt")
		var log []string
		step := func(args ...string) {
			_, err := ofctl(target, append([]string{"-O", "OpenFlow13"}, args...)...)
			res := "ok"
			if err != nil {
				res = "error"
				for _, code := range []string{"OFPFMFC_TABLE_FULL", "OFPFMFC_ALL_TABLES_FULL"} {
					if strings.Contains(err.Error(), code) {
						res = code
					}
				}
			}
			log = append(log, strings.Join(args[1:], " ")+": "+res)
		}
		for prio := 1; prio <= 3; prio++ {
			step("add-flow", "table=3,priority="+string(rune('0'+prio))+",ip,actions=drop")
			step("add-flow", "table=0,priority="+string(rune('0'+prio))+",ip,actions=drop")
		}
		r.vsctl("set", "Flow_Table", strings.TrimSpace(r.vsctl("get", "bridge", "br0", "flow_tables:3")), "flow_limit=3")
		step("add-flow", "table=3,priority=3,ip,actions=drop")
		step("add-flow", "table=3,priority=4,ip,actions=drop")
		r.vsctl("clear", "bridge", "br0", "flow_tables")
		step("add-flow", "table=3,priority=5,ip,actions=drop")
		results[sw] = strings.Join(log, "\n")
	}
	if results["govs"] != results["ovs"] {
		t.Errorf("govs:\n%s\nOpen vSwitch:\n%s", results["govs"], results["ovs"])
	}
	if !strings.Contains(results["govs"], "table=3,priority=3,ip,actions=drop: OFPFMFC_TABLE_FULL") {
		t.Errorf("flow_limit=2 did not refuse the third flow of table 3:\n%s", results["govs"])
	}
	t.Logf("both:\n%s", results["govs"])
}
