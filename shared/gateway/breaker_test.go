package gateway_test

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/gateway"
)

// TestBreakerPausesAHangingInstanceOnly: an instance whose server accepts and
// never answers costs a few deadlines, then is refused at once until a probe
// finds it well again; another instance is served throughout.
func TestBreakerPausesAHangingInstanceOnly(t *testing.T) {
	const timeout, coolDown = 400 * time.Millisecond, 500 * time.Millisecond
	proxy := newProxy(t, "127.0.0.1:3050")
	cfg := fbtest.Demo(t)
	cfg.Port = proxy.port()
	e := newEnv(t, gateway.Config{Timeout: timeout, Breaker: gateway.BreakerConfig{Failures: 3, CoolDown: coolDown}},
		map[string]any{"a": anonymous(cfg), "b": anonymous(fbtest.Other(t))})
	read := `{"CLAVE":"Get_Terceros","CODIGO":"800000000"}`
	type answer struct {
		response
		retryAfter string
		took       time.Duration
	}
	send := func(instance string) answer {
		start := time.Now()
		r := e.post(t, path(instance, "executequery"), read)
		return answer{r, r.Header.Get("Retry-After"), time.Since(start)}
	}
	expect := func(what string, a answer, status int, code erp.Code) {
		t.Helper()
		if a.Status != status || (code != 0 && (a.Body.CodError == nil || *a.Body.CodError != int(code))) {
			t.Fatalf("%s: %d %s", what, a.Status, a.Raw)
		}
	}
	expect("a, well", send("a"), 200, 0)

	proxy.hang(true)
	for i := range 3 {
		a := send("a")
		expect("a, hanging", a, 503, erp.CodeUnavailable)
		t.Logf("hanging call %d: %s", i+1, a.took.Round(time.Millisecond))
	}
	calls := e.db.calls.Load()
	paused := send("a")
	expect("a, paused", paused, 503, erp.CodePaused)
	if s, err := strconv.Atoi(paused.retryAfter); err != nil || s < 1 {
		t.Fatalf("Retry-After %q", paused.retryAfter)
	}
	if e.db.calls.Load() != calls {
		t.Fatal("a paused call reached the database")
	}
	t.Logf("paused: refused in %s, Retry-After %s", paused.took, paused.retryAfter)
	expect("b, while a is paused", send("b"), 200, 0)

	// After the cool-down one probe goes through; a call beside it is
	// refused at once.
	time.Sleep(coolDown * 5 / 4)
	var wg sync.WaitGroup
	var probe answer
	wg.Go(func() { probe = send("a") })
	time.Sleep(50 * time.Millisecond)
	expect("a, beside the probe", send("a"), 503, erp.CodePaused)
	wg.Wait()
	expect("a, the probe", probe, 503, erp.CodeUnavailable)
	expect("a, after a failed probe", send("a"), 503, erp.CodePaused)

	// Well again: the next probe, after a doubled cool-down, closes it.
	proxy.hang(false)
	time.Sleep(2 * coolDown * 5 / 4)
	expect("a, probe after it healed", send("a"), 200, 0)
	expect("a, closed again", send("a"), 200, 0)
	if !strings.Contains(e.log.String(), "breaker opened") {
		t.Fatalf("no log line for the breaker:\n%s", e.log)
	}
}
