package gateway_test

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// commitCutter forwards Firebird connections and, when armed, cuts the flow
// that sends a commit: before forwarding it (nothing committed) or after
// (committed, its answer lost). The wire is encrypted with a stream cipher,
// which keeps lengths: a commit is the client's write of 8 bytes (op_commit
// and the transaction's handle), and in a write on a warm connection, with
// no read transaction to end first, it is the only one.
type commitCutter struct {
	ln    net.Listener
	armed atomic.Bool
	after atomic.Bool // forward the commit before cutting
	cut   atomic.Int32
}

func newCommitCutter(t testing.TB, target string) *commitCutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &commitCutter{ln: ln}
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
	go func() {
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
			mu.Lock()
			conns = append(conns, client, server)
			mu.Unlock()
			mute := &atomic.Bool{}
			go toClient(client, server, mute)
			go c.toServer(client, server, mute)
		}
	}()
	return c
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

func (c *commitCutter) toServer(client, server net.Conn, mute *atomic.Bool) {
	defer client.Close()
	defer server.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			commit := n == 8
			if commit && c.armed.CompareAndSwap(true, false) {
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

// TestKeyResolvesACommitWhoseAnswerWasLost: the point of idempotency keys. A
// keyed write whose connection is cut at its commit answers 1204; sent again
// with its key it answers the kept answer when the commit happened and runs
// when it did not: one payment either way.
func TestKeyResolvesACommitWhoseAnswerWasLost(t *testing.T) {
	cfg := fbtest.Demo(t)
	admin := setupKeys(t, cfg)
	cut := newCommitCutter(t, fmt.Sprintf("%s:%d", cfg.Host, 3050))
	through := cfg
	through.Host, through.Port = "127.0.0.1", cut.ln.Addr().(*net.TCPAddr).Port
	e := newEnv(t, gateway.Config{}, map[string]any{"demo": tenants.Instance{Connection: through, Idempotency: true}})
	token := fbtest.Token(t, e.acc, "demo")
	for _, tt := range []struct {
		name      string
		after     bool
		committed int
	}{{"cut after the commit was sent", true, 1}, {"cut before the commit was sent", false, 0}} {
		t.Run(tt.name, func(t *testing.T) {
			code := fmt.Sprintf("X%d", time.Now().UnixNano()%1e12)
			// An identical keyed write on the warm connection: its last
			// write is its commit.
			// A warm connection, its statements prepared.
			if r := postKeyed(t, e.h, token, "warm-"+code, pago("W"+code, 1)); r.status != 200 {
				t.Fatalf("warm-up: %+v\n%s", r, e.log.String())
			}
			cut.after.Store(tt.after)
			cut.armed.Store(true)
			first := postKeyed(t, e.h, token, "pay-"+code, pago(code, 1))
			if first.status != 503 || !strings.Contains(first.body, fmt.Sprintf(`"cod_error":%d`, erp.CodeOutcomeUnknown)) || !strings.Contains(first.body, "same Idempotency-Key") {
				t.Fatalf("cut at the commit: %+v", first)
			}
			if n := payments(t, admin, code); n != tt.committed {
				t.Fatalf("%d payments after the cut, want %d", n, tt.committed)
			}
			var again keyed
			for range 50 { // until the server has seen the cut connection go
				if again = postKeyed(t, e.h, token, "pay-"+code, pago(code, 1)); again.status != 409 && again.status != 503 {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			want := `{"cod_error":0,"data":[{"CODIGO":"` + code + `","VECES":1}]}`
			wantReplayed := map[int]string{1: "true", 0: ""}[tt.committed]
			if again.status != 200 || again.body != want || again.replayed != wantReplayed {
				t.Fatalf("sent again: %+v, want %s replayed %q", again, want, wantReplayed)
			}
			if n := payments(t, admin, code); n != 1 {
				t.Fatalf("%d payments, want exactly 1", n)
			}
		})
	}
	if cut.cut.Load() != 2 {
		t.Fatalf("%d commits cut, want 2", cut.cut.Load())
	}
	assertNoOpenWrites(t, admin)
}
