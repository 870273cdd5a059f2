package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// server is the local server, run as a subprocess.
type server struct {
	cmd    *exec.Cmd
	addr   string
	exited chan error
	log    *os.File
}

// startServer starts the local server on a free port and waits until it
// accepts connections. Its log goes to a file: it writes a line per request.
func startServer(o options) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(o.serverLog), 0o755); err != nil {
		return nil, err
	}
	log, err := os.Create(o.serverLog)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(o.server, "-addr", addr, "-instances", o.instances, "-access", o.access)
	cmd.Env = os.Environ()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("local server (go build -o bin/localserver ./infra/localserver): %w", err)
	}
	s := &server{cmd: cmd, addr: addr, exited: make(chan error, 1), log: log}
	go func() { s.exited <- cmd.Wait() }()
	if err := s.waitListening(10 * time.Second); err != nil {
		s.stop()
		return nil, fmt.Errorf("local server: %w (its log: %s)", err, o.serverLog)
	}
	return s, nil
}

// freeAddr asks the kernel for a free port. Another process may take it
// before the server listens on it; the server then fails to start, loudly.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func (s *server) waitListening(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case err := <-s.exited:
			s.exited <- err // for stop
			return fmt.Errorf("exited before listening: %w", err)
		default:
		}
		if conn, err := net.DialTimeout("tcp", s.addr, time.Second); err == nil {
			conn.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not listening on %s after %s", s.addr, limit)
}

// stop asks the server to shut down gracefully (it allows itself 10 s) and
// kills it if it takes longer.
func (s *server) stop() {
	defer s.log.Close()
	s.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited already
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		s.cmd.Process.Kill() //nolint:errcheck // best effort on the way out
		<-s.exited
	}
}

// sysdbaDSN is the instance's DSN with SYSDBA's credentials, for the
// monitoring tables, which show a user only their own attachments.
func sysdbaDSN(instanceDSN, password string) (string, error) {
	u, err := url.Parse(instanceDSN)
	if err != nil {
		// The error would quote the DSN, and with it the password.
		return "", errors.New("the instance's DSN does not parse as a URL")
	}
	u.User = url.UserPassword("SYSDBA", password)
	u.RawQuery = url.Values{"charset": {"UTF8"}}.Encode()
	return u.String(), nil
}
