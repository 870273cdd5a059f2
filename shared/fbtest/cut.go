package fbtest

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// CommitCutter forwards Firebird connections and, when armed, cuts the flow
// at the client's next send: before forwarding it (nothing of it reaches
// the server) or after (the server gets it, its answer is lost). A write on
// a warm connection whose commit goes with its block (firebird's
// Session.Write) sends its begin, block, fetch and commit in one send: cut
// before, nothing is committed; after, it is, and its answer is lost.
type CommitCutter struct {
	ln    net.Listener
	armed atomic.Bool
	after atomic.Bool // forward the send before cutting
	cut   atomic.Int32
	// hold: the cut makes the link silent this long instead of closing
	// the flow (ArmSilent); silentUntil (Unix nanoseconds) is until when.
	hold, silentUntil atomic.Int64
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
		if c.silent() {
			// Born while the link is silent: nothing of it arrives.
			go io.Copy(io.Discard, client) //nolint:errcheck // a black hole
			return
		}
		l := &flow{}
		go c.toClient(client, server, l)
		go c.toServer(client, server, l)
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

// flow is what a flow's two directions share.
type flow struct {
	mute atomic.Bool // the server's answers are lost
	// lost is when the last answer was lost (UnixNano), 0 before one.
	lost atomic.Int64
}

// toClient forwards the server's answers until the flow is muted, and none
// while the link is silent.
func (c *CommitCutter) toClient(client, server net.Conn, l *flow) {
	buf := make([]byte, 64<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 && l.mute.Load() {
			l.lost.Store(time.Now().UnixNano())
		}
		if n > 0 && !l.mute.Load() && !c.silent() {
			if _, err := client.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (c *CommitCutter) toServer(client, server net.Conn, l *flow) {
	defer client.Close()
	defer server.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			if c.armed.CompareAndSwap(true, false) {
				c.cut.Add(1)
				if c.after.Load() {
					// The server gets the send; its answer is lost, once
					// the server has sent it whole (nothing more for 100
					// ms), so that what it commits is committed however
					// busy the machine is.
					l.mute.Store(true)
					server.Write(buf[:n]) //nolint:errcheck // cut once answered
					for waited := time.Now(); time.Since(waited) < 10*time.Second; time.Sleep(10 * time.Millisecond) {
						if lost := l.lost.Load(); lost != 0 && time.Since(time.Unix(0, lost)) > 100*time.Millisecond {
							break
						}
					}
				}
				if hold := c.hold.Load(); hold > 0 {
					// Neither end learns of the cut, and every flow
					// goes silent.
					c.silentUntil.Store(time.Now().UnixNano() + hold)
					io.Copy(io.Discard, client) //nolint:errcheck // a black hole
				}
				return
			}
			if c.silent() {
				continue
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

// Arm makes the cutter cut at the next send: after forwarding it (a write
// with its commit committed, its answer lost) or before (nothing
// committed).
func (c *CommitCutter) Arm(after bool) {
	c.hold.Store(0)
	c.after.Store(after)
	c.armed.Store(true)
}

// ArmSilent makes the cutter cut at the next send after forwarding it, as
// Arm(true), but silently, as a link that drops its flows does: from the
// cut, for hold, no flow forwards anything, none is closed, and a flow
// opened then never reaches the server.
func (c *CommitCutter) ArmSilent(hold time.Duration) {
	c.after.Store(true)
	c.hold.Store(int64(hold))
	c.armed.Store(true)
}

func (c *CommitCutter) silent() bool { return time.Now().UnixNano() < c.silentUntil.Load() }

// Cuts is how many commits were cut.
func (c *CommitCutter) Cuts() int { return int(c.cut.Load()) }
