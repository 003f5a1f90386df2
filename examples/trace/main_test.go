package main

func Example() {
	main()
	// Output:
	// output to port 2: 60 bytes, ttl 63
	// 0. in_port=1, priority 100
	//     load:0x1->NXM_NX_REG0[0..15]
	//      -> reg0=0x1
	//     goto_table:10
	//     10. ip,nw_dst=10.0.0.2, priority 200
	//         dec_ttl
	//          -> nw_ttl=63
	//         set_field:02:00:00:00:00:02->eth_dst
	//          -> eth_dst=02:00:00:00:00:02
	//         output:2
	//          => output to port 2
}
