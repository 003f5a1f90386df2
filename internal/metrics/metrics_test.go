package metrics

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestServeProfiles: the metrics listener serves /metrics and Go's heap
// profile.
func TestServeProfiles(t *testing.T) {
	ln, err := Serve("127.0.0.1:0", func() Snapshot { return Snapshot{} })
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for path, want := range map[string]string{
		"/metrics":                  "go_goroutines",
		"/debug/pprof/heap?debug=1": "heap profile:",
		"/debug/pprof/":             "goroutine",
	} {
		resp, err := http.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Errorf("%s: status %d, body lacks %q:\n%.300s", path, resp.StatusCode, want, body)
		}
	}
}
