package gateway_test

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// tcpProxy forwards connections to target. blackhole makes the flows it has
// stop forwarding without closing them: what a NAT gateway or firewall that
// dropped a flow silently, or a half-open TCP connection, looks like to both
// ends. New flows forward normally.
type tcpProxy struct {
	t      testing.TB
	ln     net.Listener
	target string
	mu     sync.Mutex
	flows  []*atomic.Bool
	hung   atomic.Bool // new flows are accepted and never answered
}

func newProxy(t testing.TB, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{t: t, ln: ln, target: target}
	var conns []net.Conn
	var connsMu sync.Mutex
	t.Cleanup(func() {
		ln.Close()
		connsMu.Lock()
		defer connsMu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			if p.hung.Load() {
				connsMu.Lock()
				conns = append(conns, client)
				connsMu.Unlock()
				go io.Copy(io.Discard, client) //nolint:errcheck // swallowed until closed
				continue
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			connsMu.Lock()
			conns = append(conns, client, server)
			connsMu.Unlock()
			dead := &atomic.Bool{}
			p.mu.Lock()
			p.flows = append(p.flows, dead)
			p.mu.Unlock()
			go pipe(client, server, dead)
			go pipe(server, client, dead)
		}
	}()
	return p
}

// pipe copies until dst or src fails; once dead, it reads and discards, so
// neither end sees a close or a reset.
func pipe(dst, src net.Conn, dead *atomic.Bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !dead.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !dead.Load() {
				dst.Close()
			}
			return
		}
	}
}

func (p *tcpProxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// hang makes the proxy a server that accepts and never answers, for flows
// old and new (on), or forward new flows again (off).
func (p *tcpProxy) hang(on bool) {
	p.hung.Store(on)
	if on {
		p.blackhole()
	}
}

func (p *tcpProxy) blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range p.flows {
		f.Store(true)
	}
}

// firebirdPIDs lists the Firebird server processes (the one fbguard runs).
func firebirdPIDs(t testing.TB) []int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, d := range dirs {
		comm, err := os.ReadFile(filepath.Join(d, "comm"))
		if err != nil || strings.TrimSpace(string(comm)) != "firebird" {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		t.Fatal("no firebird server process: run the tests with `make test`")
	}
	return pids
}

// freeze stops the Firebird server (SIGSTOP) and returns a function that
// resumes it; the server is resumed when the test ends whatever happens.
func freeze(t testing.TB) (thaw func()) {
	t.Helper()
	pids := firebirdPIDs(t)
	var once sync.Once
	thaw = func() {
		once.Do(func() {
			for _, pid := range pids {
				if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
					t.Errorf("resuming firebird %d: %v", pid, err)
				}
			}
		})
	}
	t.Cleanup(thaw)
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatalf("stopping firebird %d: %v", pid, err)
		}
	}
	return thaw
}
