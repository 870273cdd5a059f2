package firebird

import (
	"net"
	"testing"
)

// TestWireCountsRoundTrips: a round trip is a send after the server spoke,
// however many writes the send takes.
func TestWireCountsRoundTrips(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	w := &wire{Conn: client}
	w.serverLast.Store(true)
	go func() {
		buf := make([]byte, 16)
		for {
			if _, err := server.Read(buf); err != nil {
				return
			}
		}
	}()
	talk := func(sends ...string) {
		for _, s := range sends {
			if _, err := w.Write([]byte(s)); err != nil {
				t.Fatal(err)
			}
		}
	}
	answer := func() {
		go server.Write([]byte("ok")) //nolint:errcheck // the pipe is the test's
		if _, err := w.Read(make([]byte, 2)); err != nil {
			t.Fatal(err)
		}
	}
	talk("execute", "fetch", "commit")
	answer()
	talk("execute")
	answer()
	answer() // a second answer to one send
	talk("") // an empty write sends nothing
	if got := w.Trips(); got != 2 {
		t.Fatalf("%d round trips, want 2", got)
	}
	talk("free")
	if got := w.Trips(); got != 3 {
		t.Fatalf("%d round trips, want 3", got)
	}
}
