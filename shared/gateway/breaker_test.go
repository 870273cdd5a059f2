package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nakagami/firebirdsql"

	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/gateway"
)

// TestBreakerPausesAHangingInstanceOnly: an instance whose server accepts and
// never answers costs a few deadlines, then is refused at once (12 or more
// of 20 sequential requests in under 100 ms) until a probe, which costs at
// most the probe's bound, finds it well again; another instance is served
// throughout.
func TestBreakerPausesAHangingInstanceOnly(t *testing.T) {
	const timeout, coolDown, probe = 400 * time.Millisecond, 500 * time.Millisecond, 200 * time.Millisecond
	proxy := newProxy(t, "127.0.0.1:3050")
	cfg := fbtest.Demo(t)
	cfg.Port = proxy.port()
	e := newEnv(t, gateway.Config{Timeout: timeout, OpenAPI: true, Breaker: gateway.BreakerConfig{Failures: 3, CoolDown: coolDown, ProbeSilence: probe}},
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
	// b warm before a hangs: its first connect must not eat into a's
	// cool-down, which the checks of a paused a below run within.
	expect("b, well", send("b"), 200, 0)

	proxy.hang(true)
	fast := 0
	for i := range 20 {
		a := send("a")
		if a.took < 100*time.Millisecond && a.Status == 503 && a.Body.CodError != nil && *a.Body.CodError == int(erp.CodePaused) {
			fast++
		}
		t.Logf("hanging, call %d: %d %s in %s", i+1, a.Status, a.Raw, a.took.Round(time.Millisecond))
	}
	if fast < 12 {
		t.Fatalf("%d of 20 sequential calls to a hanging database refused in under 100 ms, want 12 or more", fast)
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
	// The health check and the OpenAPI document, which read the database
	// too, are paused alike.
	for _, p := range []string{"/a/health", "/a/openapi.json"} {
		start := time.Now()
		r := do(t, e.h, http.MethodGet, p, "")
		if r.Status != 503 || *r.Body.CodError != int(erp.CodePaused) || r.Header.Get("Retry-After") == "" || time.Since(start) > 100*time.Millisecond {
			t.Fatalf("%s while paused: %d %s in %s", p, r.Status, r.Raw, time.Since(start))
		}
	}
	expect("b, while a is paused", send("b"), 200, 0)

	// After the cool-down one probe goes through, and costs its caller at
	// most the probe's bound; a call beside it is refused at once.
	time.Sleep(coolDown * 5 / 4)
	var wg sync.WaitGroup
	var probed answer
	wg.Go(func() { probed = send("a") })
	time.Sleep(50 * time.Millisecond)
	expect("a, beside the probe", send("a"), 503, erp.CodePaused)
	wg.Wait()
	expect("a, the probe", probed, 503, erp.CodePaused)
	if probed.took > probe+timeout/2 {
		t.Fatalf("the probe's caller waited %s, its bound is %s", probed.took, probe)
	}
	expect("a, after a failed probe", send("a"), 503, erp.CodePaused)

	// Well again: the next probe, a cool-down later (it never grows),
	// closes it.
	proxy.hang(false)
	time.Sleep(coolDown * 5 / 4)
	expect("a, probe after it healed", send("a"), 200, 0)
	expect("a, closed again", send("a"), 200, 0)
	if !strings.Contains(e.log.String(), "breaker opened") {
		t.Fatalf("no log line for the breaker:\n%s", e.log)
	}
}

// TestHealthChecksOfAHungDatabaseCount: a monitor polling /health while
// the database hangs must not keep the breaker shut. A health check that
// spent its deadline waiting for the description counts as a hung call, so
// three of them open the breaker as three calls do, and the next read is
// refused at once.
func TestHealthChecksOfAHungDatabaseCount(t *testing.T) {
	const timeout = 400 * time.Millisecond
	proxy := newProxy(t, "127.0.0.1:3050")
	cfg := fbtest.Demo(t)
	cfg.Port = proxy.port()
	e := newEnv(t, gateway.Config{Timeout: timeout, Breaker: gateway.BreakerConfig{Failures: 3, CoolDown: 30 * time.Second}},
		map[string]any{"a": anonymous(cfg)})
	read := `{"CLAVE":"Get_Terceros","CODIGO":"800000000"}`
	if r := e.post(t, path("a", "executequery"), read); r.Status != 200 {
		t.Fatalf("well: %d %s", r.Status, r.Raw)
	}
	proxy.hang(true)
	for i := range 3 {
		r := do(t, e.h, http.MethodGet, "/a/health", "")
		if r.Status != 503 || r.Body.CodError == nil || *r.Body.CodError != int(erp.CodeUnavailable) {
			t.Fatalf("health %d of a hung database: %d %s", i+1, r.Status, r.Raw)
		}
	}
	start := time.Now()
	r := e.post(t, path("a", "executequery"), read)
	if r.Status != 503 || r.Body.CodError == nil || *r.Body.CodError != int(erp.CodePaused) || time.Since(start) > timeout/2 {
		t.Fatalf("a read after three hung health checks: %d %s in %s, want 1205 at once\n%s", r.Status, r.Raw, time.Since(start), e.log)
	}
}

// TestRestartsAreNotLengthened: a refused connection costs nothing to try
// again, so a Firebird restart never opens the breaker. Under 8 reading
// clients no answer is paused and the first 200 comes soon after Firebird
// listens again (0.1 s measured; the test allows 3 s); after
// an idle restart, 8 concurrent inserts all succeed.
func TestRestartsAreNotLengthened(t *testing.T) {
	e := demoEnv(t, gateway.Config{Timeout: 5 * time.Second})
	read := `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`
	type result struct {
		at     time.Time
		status int
		body   string
	}
	var mu sync.Mutex
	var results []result
	stop := make(chan struct{})
	var clients sync.WaitGroup
	for range 8 {
		clients.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				status, body := serve(e.h, path("demo", "executequery"), read)
				mu.Lock()
				results = append(results, result{time.Now(), status, body})
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	down, up := restartFirebird(t)
	// The clients go on a second past the first 200 after the restart
	// (or 10 s, when none comes), so that a slow first attachment is
	// measured, not cut short.
	answered := func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range results {
			if r.status == 200 && r.at.After(up) {
				return true
			}
		}
		return false
	}
	for time.Since(up) < 10*time.Second && !answered() {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second)
	close(stop)
	clients.Wait()

	var first time.Time
	failed := 0
	for _, r := range results {
		if r.at.After(down) && r.status != 200 {
			failed++
		}
		// The property itself: a restart never pauses the instance.
		if strings.Contains(r.body, fmt.Sprintf(`"cod_error":%d`, erp.CodePaused)) {
			t.Fatalf("paused during a restart: %s", r.body)
		}
		if r.status == 200 && r.at.After(up) && (first.IsZero() || r.at.Before(first)) {
			first = r.at
		}
	}
	t.Logf("Firebird down %s; %d reads failed; first 200 %s after it listened again", up.Sub(down).Round(time.Millisecond), failed, first.Sub(up).Round(time.Millisecond))
	// Measured within 0.1 s; the bound leaves a busy machine room for
	// Firebird's own first attachment after its start.
	if first.IsZero() || first.Sub(up) > 3*time.Second {
		t.Fatalf("the first 200 came %s after Firebird listened again, want within 3 s", first.Sub(up))
	}
	if strings.Contains(e.log.String(), "breaker opened") {
		t.Fatalf("the restart opened the breaker:\n%s", e.log)
	}
	for _, r := range results[len(results)-8:] {
		if r.status != 200 {
			t.Fatalf("after the restart: %d %s", r.status, r.body)
		}
	}

	// Idle, then restarted: 8 concurrent inserts, none lost.
	restartFirebird(t)
	run := time.Now().UnixNano() % 1e8
	statuses := make([]string, 8)
	var inserts sync.WaitGroup
	for i := range statuses {
		inserts.Go(func() {
			code := fmt.Sprintf("R%d%d", run, i)
			status, body := serve(e.h, path("demo", "execute"), setTerceros(code))
			if status != 200 || !strings.Contains(body, `"CODIGO":"`+code+`"`) {
				statuses[i] = fmt.Sprintf("%d %s", status, body)
			}
		})
	}
	inserts.Wait()
	for i, s := range statuses {
		if s != "" {
			t.Fatalf("insert %d after an idle restart: %s", i, s)
		}
	}
}

// serve posts body to p and returns the status and body: safe in any
// goroutine.
func serve(h http.Handler, p, body string) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, p, strings.NewReader(body)))
	return rec.Code, rec.Body.String()
}

// restartFirebird restarts the server and returns when it stopped
// listening and when it listened again.
func restartFirebird(t *testing.T) (down, up time.Time) {
	t.Helper()
	watched := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		defer close(watched)
		for ctx.Err() == nil {
			c, err := net.DialTimeout("tcp", "127.0.0.1:3050", 50*time.Millisecond)
			now := time.Now()
			switch {
			case err != nil && down.IsZero():
				down = now
			case err == nil && !down.IsZero():
				c.Close()
				up = now
				return
			case err == nil:
				c.Close()
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	out, err := exec.Command("../../infra/firebird.sh", "restart").CombinedOutput()
	if err != nil {
		t.Fatalf("restarting Firebird: %v\n%s", err, out)
	}
	<-watched
	if up.IsZero() {
		t.Fatal("Firebird was not seen going down and up again")
	}
	return down, up
}

// TestABreakerClosesOverASlowLink: where a connect takes longer than the
// probe's bound (five round trips over a slow link) but a call fits its
// deadline, a breaker opened by a dropped link closes once the link is back:
// the probe fails on the database's silence, not on its length, so its
// connect completes while each round trip is answered.
func TestABreakerClosesOverASlowLink(t *testing.T) {
	const timeout, coolDown, probe, delay = 2 * time.Second, 300 * time.Millisecond, 200 * time.Millisecond, 30 * time.Millisecond
	cfg := fbtest.Demo(t)
	link := fbtest.NewLink(t, cfg, delay)
	e := newEnv(t, gateway.Config{Timeout: timeout, Breaker: gateway.BreakerConfig{Failures: 3, CoolDown: coolDown, ProbeSilence: probe}},
		map[string]any{"a": anonymous(link.Through(cfg))})
	read := `{"CLAVE":"Get_Terceros","CODIGO":"800000000"}`
	if r := e.post(t, path("a", "executequery"), read); r.Status != 200 {
		t.Fatalf("before: %d %s", r.Status, r.Raw)
	}
	// Down long enough for three calls to spend their deadlines on it.
	back := time.Now().Add(timeout * 5 / 4)
	link.Drop(time.Until(back))
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { e.post(t, path("a", "executequery"), read) })
	}
	wg.Wait()
	if r := e.post(t, path("a", "executequery"), read); r.Status != 503 || *r.Body.CodError != int(erp.CodePaused) {
		t.Fatalf("after three hung calls: %d %s", r.Status, r.Raw)
	}
	time.Sleep(time.Until(back))
	for {
		r := e.post(t, path("a", "executequery"), read)
		if r.Status == 200 {
			t.Logf("served again %s after the link came back", time.Since(back).Round(time.Millisecond))
			break
		}
		if time.Since(back) > 10*timeout {
			t.Fatalf("still refused %s after the link came back: %d %s", time.Since(back).Round(time.Millisecond), r.Status, r.Raw)
		}
		time.Sleep(coolDown / 3)
	}
}

// TestAClientThatLeavesDoesNotCancelItsCall: as in Lambda, where API
// Gateway holds the invocation, a call runs to its end whether or not its
// client waits for the answer. A write whose client left at once is
// written whole and answered as written; against a hanging instance, calls
// whose clients left are judged by the database like the others, and the
// breaker opens after three.
func TestAClientThatLeavesDoesNotCancelItsCall(t *testing.T) {
	const timeout = 300 * time.Millisecond
	proxy := newProxy(t, "127.0.0.1:3050")
	cfg := fbtest.Demo(t)
	cfg.Port = proxy.port()
	admin := fbtest.Open(t, fbtest.Admin(t, fbtest.Demo(t)))
	e := newEnv(t, gateway.Config{Timeout: timeout, Breaker: gateway.BreakerConfig{Failures: 3, CoolDown: time.Minute}}, map[string]any{"a": anonymous(cfg)})
	send := func(endpoint, body string, wait time.Duration) response {
		ctx, cancel := context.WithCancel(context.Background())
		defer time.AfterFunc(wait, cancel).Stop() // as net/http does when its client leaves
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, path("a", endpoint), strings.NewReader(body))
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		var r response
		r.Status, r.Raw = rec.Code, rec.Body.String()
		json.Unmarshal(rec.Body.Bytes(), &r.Body) //nolint:errcheck // checked by the caller
		return r
	}
	read := `{"CLAVE":"Get_Terceros","CODIGO":"800000000"}`
	code := fmt.Sprintf("9%09d", time.Now().UnixNano()%1e9)
	if r := send("execute", fbtest.SetTerceros(code, "Gone"), 0); r.Status != http.StatusOK || fbtest.ThirdParties(t, admin, code) != 1 {
		t.Fatalf("a write whose client left at once: %d %s, %d rows", r.Status, r.Raw, fbtest.ThirdParties(t, admin, code))
	}
	proxy.hang(true)
	for i := range 3 {
		start := time.Now()
		if r := send("executequery", read, 50*time.Millisecond); r.Status != http.StatusServiceUnavailable || time.Since(start) < timeout {
			t.Fatalf("call %d, its client gone after 50 ms: %d %s after %s", i+1, r.Status, r.Raw, time.Since(start))
		}
	}
	start := time.Now()
	if r := send("executequery", read, time.Minute); r.Body.CodError == nil || *r.Body.CodError != int(erp.CodePaused) || time.Since(start) > timeout/2 {
		t.Fatalf("after three calls that hung: %d %s in %v, want the breaker open", r.Status, r.Raw, time.Since(start))
	}
}

// TestAMaintenanceShutdownIsNotHeldBack: a DBA's shutdown that waits for
// transactions to end (gfix -shut full -tran N) succeeds while the gateway's
// connections are warm (their read transaction is pre-committed, and a
// write ends its own before answering). While the database is shut the
// gateway answers 1201 at once; once it is online again reads are served
// as before within the breaker's cool-down.
func TestAMaintenanceShutdownIsNotHeldBack(t *testing.T) {
	e := demoEnv(t, gateway.Config{})
	const read = `{"CLAVE":"Get_Terceros","CODIGO":"800000000"}`
	before := e.post(t, path("demo", "executequery"), read)
	if w := e.post(t, path("demo", "execute"), setTerceros(newCode())); before.Status != http.StatusOK || w.Status != http.StatusOK || w.Body.ExExecSQL != nil {
		t.Fatalf("warming up: %d %s; %d %s", before.Status, before.Raw, w.Status, w.Raw)
	}
	e.post(t, path("demo", "executequery"), read) // a read transaction open again

	admin := fbtest.Admin(t, fbtest.Demo(t))
	mm, err := firebirdsql.NewMaintenanceManager(net.JoinHostPort(admin.Host, strconv.Itoa(admin.Port)), admin.User, admin.Password, firebirdsql.GetDefaultServiceManagerOptions())
	if err != nil {
		t.Fatal(err)
	}
	shut := false
	online := func() error {
		shut = false
		return mm.OnlineEx(admin.Database, firebirdsql.OperationModeNormal)
	}
	t.Cleanup(func() {
		if was, err := shut, online(); was && err != nil {
			t.Errorf("bringing the database online again: %v", err)
		}
	})
	shut = true
	if err := mm.ShutdownEx(admin.Database, firebirdsql.OperationModeFull, firebirdsql.ShutdownModeExDenyNewTransactions, 5); err != nil {
		t.Fatalf("a shutdown waiting 5 s for transactions to end failed: %v", err)
	}
	for range 5 { // enough to open the instance's breaker
		start := time.Now()
		r := e.post(t, path("demo", "executequery"), read)
		if r.Status != http.StatusServiceUnavailable || r.Body.CodError == nil || *r.Body.CodError != 1201 || time.Since(start) > time.Second {
			t.Fatalf("while shut, after %v: %d %s", time.Since(start), r.Status, r.Raw)
		}
	}
	if err := online(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	for {
		r := e.post(t, path("demo", "executequery"), read)
		if r.Status == http.StatusOK {
			if r.Raw != before.Raw {
				t.Fatalf("back online: %s, before %s", r.Raw, before.Raw)
			}
			break
		}
		// A breaker the shutdown opened closes at its first probe, a
		// cool-down (±25 %) later; the rest is room for a busy machine.
		if time.Since(back) > gateway.DefaultCoolDown*5/4+2*time.Second {
			t.Fatalf("%v after the database came back online: %d %s", time.Since(back), r.Status, r.Raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("served %v after the database came back online", time.Since(back).Round(time.Millisecond))
}

// TestASlowLinkIsNotAHungDatabase: batches that run out of their deadline
// while the database is still answering them (a link of 100 ms a round
// trip, three reads of more round trips than the deadline holds) are
// refused with a message that says so, and never pause the instance; the
// same batches through a database that falls silent in their course
// (frozen) open the breaker after three.
func TestASlowLinkIsNotAHungDatabase(t *testing.T) {
	const timeout = 1200 * time.Millisecond
	cfg := fbtest.Demo(t)
	setupBlobs(t, cfg)
	link := fbtest.NewLink(t, cfg, 50*time.Millisecond)
	blobs := `{"CLAVE":"Get_Blobs","N":"50"}`
	batch := "[" + blobs + "," + blobs + "," + blobs + "]"
	newLinked := func() *env {
		return newEnv(t, gateway.Config{Timeout: timeout, BatchTimeout: timeout,
			Breaker: gateway.BreakerConfig{Failures: 3, CoolDown: 10 * time.Second}},
			map[string]any{"demo": anonymous(link.Through(cfg))})
	}
	refused := func(r sent, code erp.Code, text string) bool {
		var body struct {
			CodError  int    `json:"cod_error"`
			ExExecSQL string `json:"ex_execsql"`
		}
		return r.status == 503 && json.Unmarshal([]byte(r.body), &body) == nil && body.CodError == int(code) && strings.Contains(body.ExExecSQL, text)
	}

	// A connect, the prepare and three reads of 50 rows with BLOBs: 25
	// round trips or so, 2.5 s; a connect alone is 5 or more.
	e := newLinked()
	still := fmt.Sprintf("was still answering the batch when its deadline (%s) ran out", timeout)
	for i := range 5 {
		if r := send(t, e.h, "executequery", batch); !refused(r, erp.CodeUnavailable, still) {
			t.Fatalf("slow batch %d: %d %.300s, want 503 1201 %q", i+1, r.status, r.body, still)
		}
	}
	if strings.Contains(e.log.String(), "breaker opened") {
		t.Fatalf("the slow link opened the breaker:\n%s", e.log)
	}

	// The same batches, Firebird frozen a quarter of a second into each.
	e = newLinked()
	for i := range 3 {
		var wg sync.WaitGroup
		var r sent
		wg.Go(func() { r = send(t, e.h, "executequery", batch) })
		time.Sleep(250 * time.Millisecond)
		thaw := fbtest.Freeze(t)
		wg.Wait()
		thaw()
		if !refused(r, erp.CodeUnavailable, "did not run the batch within") {
			t.Fatalf("batch %d through a database that fell silent: %d %.300s", i+1, r.status, r.body)
		}
	}
	if r := send(t, e.h, "executequery", batch); !refused(r, erp.CodePaused, "paused") {
		t.Fatalf("after three batches through a silent database: %d %.300s, want 1205", r.status, r.body)
	}
}
