package gateway_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// cutterEnv is a handler with cfg whose demo instance, keys installed, reaches
// Firebird through a CommitCutter.
func cutterEnv(t *testing.T, cfg gateway.Config) (e *env, token string, admin *sql.DB, cut *fbtest.CommitCutter) {
	t.Helper()
	db := fbtest.Demo(t)
	admin = setupKeys(t, db)
	cut = fbtest.CutCommits(t, fmt.Sprintf("%s:%d", db.Host, 3050))
	through := db
	through.Host, through.Port = "127.0.0.1", cut.Port()
	e = newEnv(t, cfg, map[string]any{"demo": tenants.Instance{Connection: through, Idempotency: true}})
	return e, fbtest.Token(t, e.acc, "demo"), admin, cut
}

// sendAgain sends a keyed write again until it is no longer refused as
// held or unavailable: until the server has seen the cut connection go.
func sendAgain(t *testing.T, e *env, token, key, body string) keyed {
	t.Helper()
	var again keyed
	for range 50 {
		if again = postKeyed(t, e.h, token, key, body); again.status != 409 && again.status != 503 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return again
}

// TestKeyResolvesACommitWhoseAnswerWasLost: the point of idempotency keys. A
// keyed write whose connection is cut at its commit answers 1204; sent again
// with its key it answers the kept answer when the commit happened and runs
// when it did not: one payment either way.
func TestKeyResolvesACommitWhoseAnswerWasLost(t *testing.T) {
	e, token, admin, cut := cutterEnv(t, gateway.Config{})
	for _, tt := range []struct {
		name      string
		after     bool
		committed int
	}{{"cut after the commit was sent", true, 1}, {"cut before the commit was sent", false, 0}} {
		t.Run(tt.name, func(t *testing.T) {
			code := fmt.Sprintf("X%d", time.Now().UnixNano()%1e12)
			// An identical keyed write on the warm connection, its
			// statements prepared: the next write is one send, its
			// commit with its block.
			if r := postKeyed(t, e.h, token, "warm-"+code, pago("W"+code, 1)); r.status != 200 {
				t.Fatalf("warm-up: %+v\n%s", r, e.log.String())
			}
			cut.Arm(tt.after)
			first := postKeyed(t, e.h, token, "pay-"+code, pago(code, 1))
			if first.status != 503 || !strings.Contains(first.body, fmt.Sprintf(`"cod_error":%d`, erp.CodeOutcomeUnknown)) || !strings.Contains(first.body, "same Idempotency-Key") {
				t.Fatalf("cut at the commit: %+v", first)
			}
			if n := payments(t, admin, code); n != tt.committed {
				t.Fatalf("%d payments after the cut, want %d", n, tt.committed)
			}
			again := sendAgain(t, e, token, "pay-"+code, pago(code, 1))
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
	if cut.Cuts() != 2 {
		t.Fatalf("%d commits cut, want 2", cut.Cuts())
	}
	assertNoOpenWrites(t, admin)
}

// TestKeyedCommitLostSilently: a keyed write whose commit reached the
// server while the link went silent (its answer lost, and every new
// connection too, so the key's probe cannot tell) answers 1204, "send it
// again with the same key", never 1201 "nothing was written": it was.
// Sent again once the link is back, the key replays it.
func TestKeyedCommitLostSilently(t *testing.T) {
	const timeout = 3 * time.Second
	e, token, admin, cut := cutterEnv(t, gateway.Config{Timeout: timeout, BatchTimeout: timeout})
	code := fmt.Sprintf("S%d", time.Now().UnixNano()%1e12)
	if r := postKeyed(t, e.h, token, "warm-"+code, pago("W"+code, 1)); r.status != 200 {
		t.Fatalf("warm-up: %+v\n%s", r, e.log.String())
	}
	const hold = 5 * time.Second
	cut.ArmSilent(hold)
	first := postKeyed(t, e.h, token, "pay-"+code, pago(code, 1))
	if first.status != 503 || !strings.Contains(first.body, fmt.Sprintf(`"cod_error":%d`, erp.CodeOutcomeUnknown)) || !strings.Contains(first.body, "same Idempotency-Key") {
		t.Fatalf("commit sent, link silent: %+v\n%s", first, e.log.String())
	}
	if n := payments(t, admin, code); n != 1 {
		t.Fatalf("%d payments after the cut, want 1 (the commit reached the server)", n)
	}
	time.Sleep(hold)
	want := `{"cod_error":0,"data":[{"CODIGO":"` + code + `","VECES":1}]}`
	again := sendAgain(t, e, token, "pay-"+code, pago(code, 1))
	if again.status != 200 || again.body != want || again.replayed != "true" {
		t.Fatalf("sent again: %+v, want %s replayed", again, want)
	}
	if n := payments(t, admin, code); n != 1 {
		t.Fatalf("%d payments, want exactly 1", n)
	}
	assertNoOpenWrites(t, admin)
}

// TestAWriteAfterARestartRunsAgain: a write on a connection whose server
// restarted a moment after its last answer runs again on a fresh
// connection and is answered, keyed or not, where its commit sent with its
// block would have answered 1204 with nothing written: the socket the
// server closed is seen before anything is sent on it.
func TestAWriteAfterARestartRunsAgain(t *testing.T) {
	cfg := fbtest.Demo(t)
	admin := setupKeys(t, cfg)
	e := newEnv(t, gateway.Config{}, map[string]any{"demo": tenants.Instance{Connection: cfg, Idempotency: true}})
	token := fbtest.Token(t, e.acc, "demo")
	for _, key := range []string{"", "restart"} {
		code := fmt.Sprintf("R%d", time.Now().UnixNano()%1e12)
		// The restart must leave the connection within its 5 s of
		// freshness (a busy machine's may not: the cycle runs again).
		for try := 1; ; try++ {
			if r := postKeyed(t, e.h, token, "", pago(fmt.Sprintf("W%d%s", try, code), 1)); r.status != 200 {
				t.Fatalf("warm-up: %+v\n%s", r, e.log.String())
			}
			warm := time.Now()
			fbtest.KillFirebird(t)
			time.Sleep(100 * time.Millisecond) // the killed server's sockets closed
			fbtest.WaitForFirebird(t, admin)
			took := time.Since(warm)
			if took <= 4*time.Second {
				break
			}
			if try == 3 {
				t.Fatalf("the restart took %s: the write after it would not send its commit with its block (5 s)", took)
			}
			t.Logf("the restart took %s; again", took)
		}
		k := ""
		if key != "" {
			k = key + "-" + code
		}
		want := `{"cod_error":0,"data":[{"CODIGO":"` + code + `","VECES":1}]}`
		if r := postKeyed(t, e.h, token, k, pago(code, 1)); r.status != 200 || r.body != want {
			t.Fatalf("write after the restart (key %q): %+v\n%s", k, r, e.log.String())
		}
		if n := payments(t, admin, code); n != 1 {
			t.Fatalf("%d payments, want 1", n)
		}
	}
}
