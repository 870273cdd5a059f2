package fbtest

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// FirebirdPIDs lists the Firebird server processes (the one fbguard runs).
func FirebirdPIDs(t testing.TB) []int {
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

// Freeze stops the Firebird server (SIGSTOP) and returns a function that
// resumes it; the server is resumed when the test ends whatever happens.
func Freeze(t testing.TB) (thaw func()) {
	t.Helper()
	pids := FirebirdPIDs(t)
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
