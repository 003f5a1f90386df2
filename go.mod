module github.com/govs-project/govs

go 1.26.0

require golang.org/x/sys v0.49.0

require github.com/gopacket/gopacket v1.7.7
