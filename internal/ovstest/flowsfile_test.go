package ovstest

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseFlowsFile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    *FlowsFile
		wantErr string
	}{
		{
			name: "headers comments and flows",
			in: "# plain comment\n" +
				"#tlv-map: {class=0x104,type=0x80,len=4}->tun_metadata0\n" +
				"# group:  group_id=5,type=all,bucket=actions=drop \n" +
				"\n" +
				"  table=1,actions=drop  \r\n" +
				"# ovs: first line\n" +
				"# ovs:   indented second line\n" +
				"in_port=1,actions=drop\n",
			want: &FlowsFile{
				TLVMaps: []string{"{class=0x104,type=0x80,len=4}->tun_metadata0"},
				Groups:  []string{"group_id=5,type=all,bucket=actions=drop"},
				Flows: []Flow{
					{Line: 5, Text: "table=1,actions=drop"},
					{Line: 8, Text: "in_port=1,actions=drop", OVSError: "first line\n  indented second line\n"},
				},
			},
		},
		{name: "empty", in: "", want: &FlowsFile{}},
		{name: "empty tlv-map", in: "# tlv-map:\n", wantErr: `line 1: empty "tlv-map:" header`},
		{name: "empty group", in: "#group:   \n", wantErr: `line 1: empty "group:" header`},
		{name: "dangling ovs error", in: "actions=drop\n# ovs: x\n# comment\n", wantErr: `line 2: "# ovs:" comment not followed by a flow line`},
		{name: "line too long", in: strings.Repeat("a", 2<<20), wantErr: "line 1: bufio.Scanner: token too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseFlowsFile(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestSeedFlowsFilesParse checks the committed seed files' headers without OVS.
func TestSeedFlowsFilesParse(t *testing.T) {
	for _, tc := range []struct {
		file            string
		tlvMaps, groups int
		minFlows        int
		rejected        bool
	}{
		{"worker1.flows", 1, 0, 70, false},
		{"worker2.flows", 1, 0, 50, false},
		{"antrea-reference.flows", 0, 1, 100, false},
		{"rejected.flows", 0, 0, 20, true},
	} {
		ff, err := ReadFlowsFile(filepath.Join(seedDir, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if len(ff.TLVMaps) != tc.tlvMaps || len(ff.Groups) != tc.groups || len(ff.Flows) < tc.minFlows {
			t.Errorf("%s: %d tlv-maps, %d groups, %d flows; want %d, %d, >= %d",
				tc.file, len(ff.TLVMaps), len(ff.Groups), len(ff.Flows), tc.tlvMaps, tc.groups, tc.minFlows)
		}
		for _, fl := range ff.Flows {
			if (fl.OVSError != "") != tc.rejected {
				t.Errorf("%s line %d: OVSError %q, rejected file = %v", tc.file, fl.Line, fl.OVSError, tc.rejected)
			}
			if strings.Contains(fl.Text, `in_port="`) && !tc.rejected {
				t.Errorf("%s line %d: port name in an accepted flow: %s", tc.file, fl.Line, fl.Text)
			}
		}
	}
}

func FuzzParseFlowsFile(f *testing.F) {
	f.Add("# tlv-map: {class=0x104,type=0x80,len=4}->tun_metadata0\ncookie=0x1, priority=0 actions=drop\n")
	f.Add("# ovs: ovs-ofctl: unknown keyword w_dst\ntable=40,w_dst=1.1.1.1 actions=drop\n")
	f.Add("# group:\n")
	f.Add("# ovs: dangling\n")
	f.Fuzz(func(t *testing.T, in string) {
		ff, err := ParseFlowsFile(strings.NewReader(in))
		if err != nil {
			if ff != nil {
				t.Fatalf("non-nil result with error %v", err)
			}
			return
		}
		for _, fl := range ff.Flows {
			if fl.Text == "" || strings.HasPrefix(fl.Text, "#") || fl.Text != strings.TrimSpace(fl.Text) {
				t.Fatalf("bad flow text %q", fl.Text)
			}
			if fl.OVSError != "" && !strings.HasSuffix(fl.OVSError, "\n") {
				t.Fatalf("OVSError %q lacks the final newline", fl.OVSError)
			}
		}
	})
}
