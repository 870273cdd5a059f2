package fbtest

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// CommitCutter forwards Firebird connections and, when armed, cuts the flow
// that sends a commit: before forwarding it (nothing committed) or after
// (committed, its answer lost). The wire is encrypted with a stream cipher,
// which keeps lengths: a commit is the client's write of 8 bytes (op_commit
// and the transaction's handle), or of 20 when the driver sends a cursor's
// deferred close (12 bytes) with it. In a write on a warm connection, with
// no read transaction to end first, the begin is the first write (20 bytes
// too) and no other write between it and the commit has either length.
type CommitCutter struct {
	ln    net.Listener
	armed atomic.Bool
	begun atomic.Bool // the armed write's begin has gone through
	after atomic.Bool // forward the commit before cutting
	cut   atomic.Int32
}

func CutCommits(t testing.TB, target string) *CommitCutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &CommitCutter{ln: ln}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, conn := range conns {
			conn.Close()
		}
	})
	go proxy(ln, target, func(client, server net.Conn) {
		mu.Lock()
		conns = append(conns, client, server)
		mu.Unlock()
		mute := &atomic.Bool{}
		go toClient(client, server, mute)
		go c.toServer(client, server, mute)
	})
	return c
}

// proxy connects each client ln accepts to target and hands both to serve,
// until ln is closed.
func proxy(ln net.Listener, target string, serve func(client, server net.Conn)) {
	for {
		client, err := ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", target)
		if err != nil {
			client.Close()
			continue
		}
		serve(client, server)
	}
}

// toClient forwards the server's answers until mute.
func toClient(client, server net.Conn, mute *atomic.Bool) {
	buf := make([]byte, 64<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 && !mute.Load() {
			if _, err := client.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (c *CommitCutter) toServer(client, server net.Conn, mute *atomic.Bool) {
	defer client.Close()
	defer server.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			begin := c.armed.Load() && c.begun.CompareAndSwap(false, true)
			if !begin && (n == 8 || n == 20) && c.armed.CompareAndSwap(true, false) {
				c.cut.Add(1)
				if c.after.Load() {
					// The server gets the commit; its answer is lost.
					mute.Store(true)
					server.Write(chunk) //nolint:errcheck // cut right after
					time.Sleep(100 * time.Millisecond)
				}
				return
			}
			if _, err := server.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Port is where the cutter listens.
func (c *CommitCutter) Port() int { return c.ln.Addr().(*net.TCPAddr).Port }

// Arm makes the cutter cut the next commit: after forwarding it (committed,
// its answer lost) or before (nothing committed).
func (c *CommitCutter) Arm(after bool) {
	c.after.Store(after)
	c.begun.Store(false)
	c.armed.Store(true)
}

// Cuts is how many commits were cut.
func (c *CommitCutter) Cuts() int { return int(c.cut.Load()) }
