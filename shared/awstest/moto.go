package awstest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// Moto starts moto's server (moto_server, Python), an independent emulator
// of AWS widely used to test AWS code, on a free loopback port until the
// test ends, and returns its URL. It fails the test, never skips it, when
// moto is missing: these machines have it, and no registry serves it.
func Moto(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("moto_server")
	if err != nil {
		t.Fatalf("moto_server is missing (pip install 'moto[server]'): %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, path, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting moto_server: %v", err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() }) //nolint:errcheck // killed
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(url + "/moto-api/")
		if err == nil {
			resp.Body.Close()
			return url
		}
		if time.Now().After(deadline) {
			t.Fatalf("moto_server did not answer at %s: %v", url, err)
		}
	}
}
