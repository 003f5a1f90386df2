package ifioctl

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// TestGetLinkSettings: a veth says what `ethtool` shows for it (10000Mb/s,
// full duplex, twisted pair, no autonegotiation); loopback has no link
// settings (EOPNOTSUPP, which OVS takes as no features); a name too long
// for ifreq is refused before the ioctl.
func TestGetLinkSettings(t *testing.T) {
	_, v, fd := vethInNS(t)
	got, err := GetLinkSettings(fd, v.Host)
	if err != nil {
		t.Fatal(err)
	}
	if want := (LinkSettings{Speed: 10000, Duplex: 1, Port: 0, Autoneg: 0}); got != want {
		t.Errorf("veth: got %+v, want %+v", got, want)
	}
	if _, err := GetLinkSettings(fd, "lo"); !errors.Is(err, unix.EOPNOTSUPP) {
		t.Errorf("lo: got %v, want EOPNOTSUPP", err)
	}
	if _, err := GetLinkSettings(fd, "a-name-of-16-byt"); err == nil {
		t.Error("a 16-byte name was accepted")
	}
}
