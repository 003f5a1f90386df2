package flowtext_test

import (
	"fmt"

	"github.com/govs-project/govs/ofproto/flowtext"
)

// Parse a flow from seed 001 and print it as ovs-ofctl dump-flows does in
// OpenFlow 1.3 and 1.5 (where load: travels as set_field).
func ExampleParseFlow() {
	fm, err := flowtext.ParseFlow("table=40, priority=200,ip,nw_dst=10.96.0.0/12 actions=mod_dl_dst:4e:99:08:c1:53:be,load:0x2->NXM_NX_REG1[],load:0x1->NXM_NX_REG0[16],resubmit(,105)", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(flowtext.FormatFlow(&fm.Flow, &flowtext.PrintOptions{Version: flowtext.OF13}))
	fmt.Println(flowtext.FormatFlow(&fm.Flow, &flowtext.PrintOptions{Version: flowtext.OF15}))
	_, err = flowtext.ParseFlow("table=40, priority=200,ip,w_dst=10.96.0.0/12 actions=drop", nil)
	fmt.Println(err)
	// Output:
	// table=40, priority=200,ip,nw_dst=10.96.0.0/12 actions=set_field:4e:99:08:c1:53:be->eth_dst,load:0x2->NXM_NX_REG1[],load:0x1->NXM_NX_REG0[16],resubmit(,105)
	// table=40, priority=200,ip,nw_dst=10.96.0.0/12 actions=set_field:4e:99:08:c1:53:be->eth_dst,set_field:0x2->reg1,set_field:0x10000/0x10000->reg0,resubmit(,105)
	// column 27: w_dst: unknown field "w_dst"
}
