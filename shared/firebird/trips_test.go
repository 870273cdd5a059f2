package firebird

import (
	"context"
	"io"
	"net"
	"testing"
	"time"
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

// TestWatchBoundsAWaitByTheContext: a read the server never answers ends
// abandonGrace after its context, the socket closed; a call that returns
// in time leaves its socket as it was, whether its context ends later or
// has no end.
func TestWatchBoundsAWaitByTheContext(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration // 0: no deadline
		answer  bool          // the server answers the read
	}{
		{"a silent server", 50 * time.Millisecond, false},
		{"an answer in time", time.Second, true},
		{"no deadline", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := net.Pipe()
			defer server.Close()
			w := &wire{Conn: client}
			ctx := context.Background()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			if tc.answer {
				go server.Write([]byte("ok")) //nolint:errcheck // the pipe is the test's
			}
			start := time.Now()
			release := w.watch(ctx)
			_, err := w.Read(make([]byte, 2))
			took := time.Since(start)
			closed := release()
			if closed != !tc.answer || (err == nil) != tc.answer {
				t.Fatalf("read: %v after %s, socket closed: %v", err, took, closed)
			}
			if !tc.answer && took > tc.timeout+abandonGrace+time.Second { // room for a busy machine
				t.Fatalf("the read ended %s after it began, want about %s", took, tc.timeout+abandonGrace)
			}
			if tc.answer {
				// Still open: the watch is over, whenever the context ends.
				if tc.timeout > 0 {
					time.Sleep(tc.timeout + abandonGrace + 100*time.Millisecond)
				}
				go server.Write([]byte("ok")) //nolint:errcheck // the pipe is the test's
				if _, err := w.Read(make([]byte, 2)); err != nil {
					t.Fatalf("after the watch: %v", err)
				}
			}
		})
	}
}

// TestAbortDiscardsWhatWasNotDelivered: a wire given up on never delivers
// what the server had not received yet, as a plain close would once the
// link came back: the server's read ends in a reset, short of what was
// sent. Given up on is closed by abort, or closed by anyone once the
// watched call's context has ended (the driver's own hard drop).
func TestAbortDiscardsWhatWasNotDelivered(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(*wire) error
	}{
		{"abort", (*wire).abort},
		{"closed after the call's context ended", func(w *wire) error {
			ctx, cancel := context.WithCancel(context.Background())
			release := w.watch(ctx)
			cancel()
			time.Sleep(50 * time.Millisecond) // within abandonGrace: the watch has not closed it
			err := w.Close()
			release()
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { discardsWhatWasNotDelivered(t, tc.end) })
	}
}

func discardsWhatWasNotDelivered(t *testing.T, end func(*wire) error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	w, err := dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	// The server reads nothing yet: the sends queue until the write blocks.
	w.SetWriteDeadline(time.Now().Add(300 * time.Millisecond)) //nolint:errcheck // the test's socket
	sent, buf := 0, make([]byte, 64<<10)
	for {
		n, err := w.Write(buf)
		sent += n
		if err != nil {
			break
		}
	}
	if err := end(w); err != nil {
		t.Fatal(err)
	}
	got, err := io.Copy(io.Discard, server)
	if err == nil || got >= int64(sent) {
		t.Fatalf("the server read %d of %d bytes sent, then %v: want a reset short of them", got, sent, err)
	}
}
