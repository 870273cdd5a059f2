package gateway_test

// Being a good guest in the customer's database (infra/docs/internals.md#connections):
// transactions that end, statements prepared once, deadlines that hold.

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/gateway"
)

// gatewayState is what the gateway's user holds in the database.
type gatewayState struct {
	transactions, readWrite, statements, attachments, nextMinusOAT int
}

func stateOf(t testing.TB, admin *sql.DB) gatewayState {
	t.Helper()
	const user = "(SELECT a.MON$ATTACHMENT_ID FROM MON$ATTACHMENTS a WHERE a.MON$USER = 'GATEWAY')"
	return gatewayState{
		transactions: count(t, admin, "SELECT COUNT(*) FROM MON$TRANSACTIONS WHERE MON$ATTACHMENT_ID IN "+user),
		readWrite:    count(t, admin, "SELECT COUNT(*) FROM MON$TRANSACTIONS WHERE MON$READ_ONLY = 0 AND MON$ATTACHMENT_ID IN "+user),
		statements:   count(t, admin, "SELECT COUNT(*) FROM MON$STATEMENTS WHERE MON$ATTACHMENT_ID IN "+user),
		attachments:  count(t, admin, "SELECT COUNT(*) FROM MON$ATTACHMENTS WHERE MON$USER = 'GATEWAY'"),
		nextMinusOAT: count(t, admin, "SELECT MON$NEXT_TRANSACTION - MON$OLDEST_ACTIVE FROM MON$DATABASE"),
	}
}

// noGatewayAttachments waits for the attachments earlier tests dropped to
// leave, so the counts below are this test's.
func noGatewayAttachments(t testing.TB, admin *sql.DB) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if count(t, admin, "SELECT COUNT(*) FROM MON$ATTACHMENTS WHERE MON$USER = 'GATEWAY'") == 0 {
			return
		}
	}
	t.Fatal("attachments of GATEWAY from earlier tests are still there")
}

func TestMixedLoadLeavesNoTransactionOpen(t *testing.T) {
	admin := fbtest.Open(t, fbtest.Admin(t, fbtest.Demo(t)))
	noGatewayAttachments(t, admin)
	e := newEnv(t, gateway.Config{}, map[string]any{"demo": anonymous(fbtest.Demo(t))})
	srv := httptest.NewServer(e.h)
	defer srv.Close()

	// Found, not found, inserts, duplicates and refusals, 16 at a time.
	dup := newCode()
	mixed := func(i int) (endpoint, body string, status int) {
		switch i % 6 {
		case 0:
			return "executequery", `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`, 200
		case 1:
			return "executequery", fmt.Sprintf(`{"CLAVE":"Get_Terceros","CODIGO":"NADIE%d"}`, i), 200
		case 2:
			return "executequery", `{"CLAVE":"Get_Gestion_Primario","TIPO":"FV","PREFIJO":"FE","NUMERO":"1000"}`, 200
		case 3:
			return "execute", setTerceros(newCode()), 200
		case 4:
			return "execute", setTerceros(dup), 200
		}
		return "executequery", `{"CLAVE":"Get_Terceros","CODIGO":12}`, 400
	}
	load := func(n int) {
		t.Helper()
		var wg sync.WaitGroup
		next := make(chan int)
		for range 16 {
			wg.Go(func() {
				for i := range next {
					endpoint, body, want := mixed(i)
					resp, err := http.Post(srv.URL+path("demo", endpoint), "application/json", strings.NewReader(body))
					if err != nil {
						t.Error(err)
						continue
					}
					resp.Body.Close()
					if resp.StatusCode != want {
						t.Errorf("%s: status %d, want %d", body, resp.StatusCode, want)
					}
				}
			})
		}
		for i := range n {
			next <- i
		}
		close(next)
		wg.Wait()
	}

	load(600)
	time.Sleep(time.Second)
	first := stateOf(t, admin)
	load(600)
	time.Sleep(time.Second)
	second := stateOf(t, admin)
	t.Logf("after 600 mixed requests: %+v; after 600 more: %+v", first, second)

	// The three reads, Set_Terceros' block, and the query of procedures'
	// signatures the block is written from; the default pool cap.
	const operations, maxConns = 5, 4
	for _, s := range []gatewayState{first, second} {
		// At most each connection's read transaction, read-only and
		// pre-committed; never a read-write one.
		if s.readWrite != 0 || s.transactions > s.attachments {
			t.Errorf("the gateway keeps %d transactions open (%d read-write) on %d attachments", s.transactions, s.readWrite, s.attachments)
		}
		if s.nextMinusOAT > 5 {
			t.Errorf("NEXT - OAT = %d: something pins the oldest active transaction", s.nextMinusOAT)
		}
		if s.statements > operations*maxConns {
			t.Errorf("%d open statements, more than %d operations x %d connections", s.statements, operations, maxConns)
		}
		if s.attachments > maxConns {
			t.Errorf("%d attachments, over the pool cap %d", s.attachments, maxConns)
		}
	}
	if second.statements > first.statements {
		t.Errorf("open statements grew with requests: %d, then %d", first.statements, second.statements)
	}
}

// timed posts body and reports the answer and how long it took.
func timed(t testing.TB, h http.Handler, p, body string) (response, time.Duration) {
	start := time.Now()
	r := do(t, h, http.MethodPost, p, body)
	return r, time.Since(start)
}

func TestFrozenServerAnswersWithinTheDeadline(t *testing.T) {
	const timeout, coolDown = 2 * time.Second, 300 * time.Millisecond
	e := newEnv(t, gateway.Config{Timeout: timeout, Breaker: gateway.BreakerConfig{CoolDown: coolDown}}, map[string]any{"demo": anonymous(fbtest.Demo(t))})
	read := `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`
	// Warm connections, so that some requests meet a frozen server mid-call
	// on a pooled connection and others wait for or dial a new one.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { e.post(t, path("demo", "executequery"), read) })
	}
	wg.Wait()

	thaw := fbtest.Freeze(t)
	for i := range 8 {
		wg.Go(func() {
			p, body := path("demo", "executequery"), read
			if i%2 == 1 {
				p, body = path("demo", "execute"), setTerceros(newCode())
			}
			r, took := timed(t, e.h, p, body)
			if r.Status != http.StatusServiceUnavailable || *r.Body.CodError != int(erp.CodeUnavailable) || took > timeout+answerSlack {
				t.Errorf("frozen server: %d %s after %s", r.Status, r.Raw, took)
			}
		})
	}
	wg.Wait()
	thaw()

	// The failures opened the instance's breaker (TestBreaker...): after
	// its cool-down, the first call finds the server well.
	time.Sleep(coolDown * 5 / 4)
	r, took := timed(t, e.h, path("demo", "executequery"), read)
	t.Logf("first request after SIGCONT and the cool-down: %d in %s", r.Status, took)
	if r.Status != http.StatusOK || took > time.Second {
		t.Fatalf("after SIGCONT: %d %s after %s", r.Status, r.Raw, took)
	}
}

func TestLockWaitInsideAProcedureAnswersWithinTheDeadline(t *testing.T) {
	// Well under the lock timeout Firebird fires at 1 to 3 s: the deadline,
	// not the server's refusal, must end the wait.
	const timeout = 500 * time.Millisecond
	e := newEnv(t, gateway.Config{Timeout: timeout}, map[string]any{"demo": anonymous(fbtest.Demo(t))})
	admin := fbtest.Open(t, fbtest.Admin(t, fbtest.Demo(t)))
	code := newCode()
	// An ERP user inserts the same code and does not commit: our insert
	// waits for that lock inside REST_INSERT_TERCEROS.
	ctx := context.Background()
	tx, err := admin.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "INSERT INTO TERCEROS (CODIGO, NATURALEZA, DV, CODSOCIEDAD, CODIDENTIDAD, CODMUNICIPIO, CODPAIS) VALUES (?, 'N', '1', 'PN', 'CC', '05001', 'CO')", code); err != nil {
		t.Fatal(err)
	}
	// The write's commit went with its block (one round trip). Whether the
	// server reads the cancel while the block waits depends on whether it
	// had read the queued commit yet (measured: both happen): cancelled,
	// the block fails and nothing is written (1201); not cancelled, the
	// deadline holds by dropping the connection and the outcome is unknown
	// (1204). Either answer comes within the deadline and tells the truth.
	r, took := timed(t, e.h, path("demo", "execute"), setTerceros(code))
	cancelled := r.Body.CodError != nil && *r.Body.CodError == int(erp.CodeUnavailable) && strings.Contains(r.Raw, "nothing was written") && !strings.Contains(r.Raw, "locked by another transaction")
	unknown := r.Body.CodError != nil && *r.Body.CodError == int(erp.CodeOutcomeUnknown)
	if r.Status != http.StatusServiceUnavailable || !cancelled && !unknown || took > timeout+answerSlack {
		t.Fatalf("lock wait: %d %s after %s", r.Status, r.Raw, took)
	}
	if cancelled {
		if n := fbtest.ThirdParties(t, admin, code); n != 0 {
			t.Fatalf("%d third parties %s after %s", n, code, r.Raw)
		}
	}
	waiting := stateOf(t, admin).readWrite
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	t.Logf("read-write transactions of the gateway while the ERP user held the lock: %d; after: %d", waiting, stateOf(t, admin).readWrite)
	// Once the lock is gone the third party exists once: written by the
	// write that answered 1204, or by this one.
	r = e.post(t, path("demo", "execute"), setTerceros(code))
	if done := r.Status == http.StatusOK && len(r.Body.Data) == 1 || r.Status == http.StatusOK && strings.Contains(r.Raw, "EL TERCERO "+code+" YA EXISTE"); !done {
		t.Fatalf("once the lock is gone: %d %s", r.Status, r.Raw)
	}
	if n := fbtest.ThirdParties(t, admin, code); n != 1 {
		t.Fatalf("%d third parties %s", n, code)
	}
}

func TestHalfOpenConnectionAnswersWithinTheDeadline(t *testing.T) {
	const timeout = time.Second
	proxy := newProxy(t, "127.0.0.1:3050")
	cfg := fbtest.Demo(t)
	cfg.Port = proxy.port()
	e := newEnv(t, gateway.Config{Timeout: timeout}, map[string]any{"demo": anonymous(cfg)})
	read := `{"CLAVE":"Get_Terceros","CODIGO":"800000000"}`
	if r := e.post(t, path("demo", "executequery"), read); r.Status != http.StatusOK {
		t.Fatalf("through the proxy: %d %s", r.Status, r.Raw)
	}
	proxy.blackhole()
	r, took := timed(t, e.h, path("demo", "executequery"), read)
	if r.Status != http.StatusServiceUnavailable || took > timeout+answerSlack {
		t.Fatalf("half-open connection: %d %s after %s", r.Status, r.Raw, took)
	}
	// The connection caught in it is gone; the next request dials anew.
	if r := e.post(t, path("demo", "executequery"), read); r.Status != http.StatusOK {
		t.Fatalf("after the half-open connection: %d %s", r.Status, r.Raw)
	}
}

func TestSilentlyDroppedIdleConnectionIsReplaced(t *testing.T) {
	const maxIdle = 300 * time.Millisecond
	proxy := newProxy(t, "127.0.0.1:3050")
	cfg := fbtest.Demo(t)
	cfg.Port = proxy.port()
	e := newEnvOpts(t, gateway.Config{Timeout: 5 * time.Second}, firebird.Options{ConnMaxIdle: maxIdle},
		map[string]any{"demo": anonymous(cfg)})
	read := `{"CLAVE":"Get_Terceros","CODIGO":"800000000"}`
	if r := e.post(t, path("demo", "executequery"), read); r.Status != http.StatusOK {
		t.Fatalf("through the proxy: %d %s", r.Status, r.Raw)
	}
	// The network forgets the idle flow without telling either end.
	proxy.blackhole()
	time.Sleep(2 * maxIdle)
	r, took := timed(t, e.h, path("demo", "executequery"), read)
	t.Logf("first request after the idle flow was dropped: %d in %s", r.Status, took)
	if r.Status != http.StatusOK || len(r.Body.Data) != 1 {
		t.Fatalf("after a silently dropped idle connection: %d %s", r.Status, r.Raw)
	}
}

func TestAlteredProcedureIsServedWithinStmtMaxAge(t *testing.T) {
	const maxAge = time.Second
	admin := fbtest.Open(t, fbtest.Admin(t, fbtest.Demo(t)))
	ddl := func(stmts ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		tx, err := admin.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range stmts {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				tx.Rollback()
				t.Fatalf("%s: %v", s, err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	const create = "CREATE OR ALTER PROCEDURE REST_TEST_VERSION RETURNS (A INTEGER) AS BEGIN A = 1; SUSPEND; END"
	ddl(create, "GRANT EXECUTE ON PROCEDURE REST_TEST_VERSION TO GATEWAY")
	e := newEnvOpts(t, gateway.Config{}, firebird.Options{StmtMaxAge: maxAge}, map[string]any{"demo": anonymous(fbtest.Demo(t))})
	get := func() response { return e.post(t, path("demo", "executequery"), `{"CLAVE":"Get_Version"}`) }
	if r := get(); r.Raw != `{"cod_error":0,"data":[{"A":1}]}` {
		t.Fatalf("before: %s", r.Raw)
	}

	// The ERP's upgrade adds an output column while our statement is
	// prepared: it is not blocked, and the new column is served within
	// the statement's maximum age.
	ddl("ALTER PROCEDURE REST_TEST_VERSION RETURNS (A INTEGER, B VARCHAR(5)) AS BEGIN A = 2; B = 'nuevo'; SUSPEND; END")
	deadline := time.Now().Add(maxAge + ageSlack)
	for r := get(); r.Raw != `{"cod_error":0,"data":[{"A":2,"B":"nuevo"}]}`; r = get() {
		if time.Now().After(deadline) {
			t.Fatalf("%s after ALTER PROCEDURE and %s", r.Raw, maxAge)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Dropped: once the old statement ages out, a clear 503; created again:
	// served at once.
	ddl("DROP PROCEDURE REST_TEST_VERSION")
	time.Sleep(maxAge + 100*time.Millisecond)
	if r := get(); r.Status != http.StatusServiceUnavailable || !strings.Contains(*r.Body.ExExecSQL, "cannot run Get_Version") {
		t.Fatalf("after DROP PROCEDURE: %d %s", r.Status, r.Raw)
	}
	ddl(create, "GRANT EXECUTE ON PROCEDURE REST_TEST_VERSION TO GATEWAY")
	if r := get(); r.Raw != `{"cod_error":0,"data":[{"A":1}]}` {
		t.Fatalf("after CREATE PROCEDURE again: %s", r.Raw)
	}
}

// TestConnectionsServeUntilAProcedureChanges: once a pool has read the
// procedures' version, its connections are not replaced every StmtMaxAge
// (a read costs its 2 round trips, up to 5 when the check is due, never a
// new attachment's), and an altered procedure is still served within
// StmtMaxAge of its change, each time.
func TestConnectionsServeUntilAProcedureChanges(t *testing.T) {
	const maxAge = 300 * time.Millisecond
	cfg := fbtest.Demo(t)
	version := func(a int) string {
		return fmt.Sprintf("CREATE OR ALTER PROCEDURE REST_TEST_VERSION RETURNS (A INTEGER) AS BEGIN A = %d; SUSPEND; END", a)
	}
	fbtest.Setup(t, cfg, version(1), "GRANT EXECUTE ON PROCEDURE REST_TEST_VERSION TO GATEWAY")
	link := fbtest.NewLink(t, cfg, 0)
	e := newEnvOpts(t, gateway.Config{}, firebird.Options{StmtMaxAge: maxAge}, map[string]any{"demo": anonymous(link.Through(cfg))})
	get := func() (string, int64) {
		before := link.RoundTrips()
		r := e.post(t, path("demo", "executequery"), `{"CLAVE":"Get_Version"}`)
		return r.Raw, link.RoundTrips() - before
	}
	answer := func(a int) string { return fmt.Sprintf(`{"cod_error":0,"data":[{"A":%d}]}`, a) }
	for a := 1; a <= 3; a++ {
		if a > 1 {
			fbtest.Setup(t, cfg, version(a))
		}
		changed := time.Now()
		// Served within maxAge of the change, then steady for 4 maxAge:
		// the first pool's connections are replaced in its first two,
		// a later pool's never.
		var most int64
		var seen time.Time
		for ; seen.IsZero() || time.Since(seen) < 4*maxAge; time.Sleep(20 * time.Millisecond) {
			raw, trips := get()
			switch {
			case raw == answer(a) && seen.IsZero():
				seen = time.Now()
				if took := seen.Sub(changed); took > maxAge+ageSlack {
					t.Fatalf("version %d served %s after its change", a, took)
				}
			case raw != answer(a) && !seen.IsZero():
				t.Fatalf("version %d, then %s", a, raw)
			case raw != answer(a) && time.Since(changed) > maxAge+ageSlack:
				t.Fatalf("%s %s after version %d", raw, time.Since(changed), a)
			}
			if !seen.IsZero() && time.Since(seen) > 2*maxAge {
				most = max(most, trips)
			}
		}
		t.Logf("version %d: at most %d round trips a read once steady", a, most)
		// A read is 2; a due check adds 2, and its statement's prepare 1
		// on a connection's first check; a new connection's connect
		// alone is 5.
		if a > 1 && most > 5 {
			t.Errorf("version %d: a read made %d round trips once steady: connections are replaced", a, most)
		}
	}
}

// TestRevokedGrantIsEnforcedWithinStmtMaxAge: Firebird checks EXECUTE when
// a statement is prepared, so a pooled connection would go on serving a
// revoked procedure; the pool's check sees the grant go and re-attaches.
func TestRevokedGrantIsEnforcedWithinStmtMaxAge(t *testing.T) {
	const maxAge = 300 * time.Millisecond
	cfg := fbtest.Demo(t)
	fbtest.Setup(t, cfg, "CREATE OR ALTER PROCEDURE REST_TEST_VERSION RETURNS (A INTEGER) AS BEGIN A = 1; SUSPEND; END",
		"GRANT EXECUTE ON PROCEDURE REST_TEST_VERSION TO GATEWAY")
	t.Cleanup(func() { fbtest.Setup(t, cfg, "GRANT EXECUTE ON PROCEDURE REST_TEST_VERSION TO GATEWAY") })
	e := newEnvOpts(t, gateway.Config{}, firebird.Options{StmtMaxAge: maxAge}, map[string]any{"demo": anonymous(cfg)})
	get := func() response { return e.post(t, path("demo", "executequery"), `{"CLAVE":"Get_Version"}`) }
	// Steady: the pool has its baseline, its connection prepared the read.
	for deadline := time.Now().Add(3 * maxAge); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if r := get(); r.Status != 200 {
			t.Fatalf("before: %d %s", r.Status, r.Raw)
		}
	}
	fbtest.Setup(t, cfg, "REVOKE EXECUTE ON PROCEDURE REST_TEST_VERSION FROM GATEWAY")
	revoked := time.Now()
	for r := get(); r.Status == 200; r = get() {
		if time.Since(revoked) > maxAge+ageSlack {
			t.Fatalf("still served %s after REVOKE: %s", time.Since(revoked), r.Raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := get(); r.Status != http.StatusServiceUnavailable || !strings.Contains(r.Raw, "cannot run Get_Version") {
		t.Fatalf("after REVOKE: %d %s", r.Status, r.Raw)
	}
}

// settles fails t unless get answers what want accepts within maxAge of
// the call (and ageSlack), then goes on answering it for 3 maxAge: past
// the baseline of a pool that replaced the old one.
func settles(t *testing.T, maxAge time.Duration, what string, get func() response, want func(response) bool) {
	t.Helper()
	since := time.Now()
	var seen time.Time
	for ; seen.IsZero() || time.Since(seen) < 3*maxAge; time.Sleep(20 * time.Millisecond) {
		r := get()
		switch {
		case want(r) && seen.IsZero():
			seen = time.Now()
		case !want(r) && !seen.IsZero():
			t.Fatalf("%s, then %d %s", what, r.Status, r.Raw)
		case !want(r) && time.Since(since) > maxAge+ageSlack:
			t.Fatalf("not %s %s after the change: %d %s", what, time.Since(since), r.Status, r.Raw)
		}
	}
}

// TestAnAlteredTriggerOrViewIsServedWithinStmtMaxAge: Firebird keeps, per
// attachment, the triggers a procedure fired and the views it read as they
// were first loaded, as it keeps procedures: an upgrade's ALTER TRIGGER
// would otherwise go on writing by the old rule on pooled connections for
// as long as they live (10 minutes).
func TestAnAlteredTriggerOrViewIsServedWithinStmtMaxAge(t *testing.T) {
	const maxAge = 300 * time.Millisecond
	cfg := fbtest.Demo(t)
	for _, tt := range []struct {
		name          string
		op            catalog.Operation
		setup         []string
		version       func(int) string // the DDL of the object the upgrade alters
		endpoint, req string
		answer        func(int) string
	}{{
		name: "a trigger",
		op: catalog.Operation{Clave: "Set_Disparo", Endpoint: catalog.Execute, Procedure: "REST_TEST_DISPARO",
			Params: []catalog.Param{{Name: "P", MaxLen: 10, Required: true}}},
		setup: []string{`EXECUTE BLOCK AS BEGIN IF (NOT EXISTS (SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'TEST_DISPARO'))
				THEN EXECUTE STATEMENT 'CREATE TABLE TEST_DISPARO (V VARCHAR(20))'; END`,
			"CREATE OR ALTER PROCEDURE REST_TEST_DISPARO (P VARCHAR(10)) RETURNS (V VARCHAR(20)) AS BEGIN INSERT INTO TEST_DISPARO (V) VALUES (:P) RETURNING V INTO :V; SUSPEND; END",
			"GRANT INSERT ON TEST_DISPARO TO PROCEDURE REST_TEST_DISPARO",
			"GRANT EXECUTE ON PROCEDURE REST_TEST_DISPARO TO GATEWAY"},
		version: func(n int) string {
			return fmt.Sprintf("CREATE OR ALTER TRIGGER TEST_DISPARO_BI FOR TEST_DISPARO BEFORE INSERT AS BEGIN NEW.V = 'v%d:' || NEW.V; END", n)
		},
		endpoint: "execute", req: `{"CLAVE":"Set_Disparo","P":"x"}`,
		answer: func(n int) string { return fmt.Sprintf(`{"cod_error":0,"data":[{"V":"v%d:x"}]}`, n) },
	}, {
		name: "a view",
		op:   catalog.Operation{Clave: "Get_Vista", Endpoint: catalog.ExecuteQuery, Procedure: "REST_TEST_VISTA"},
		setup: []string{"CREATE OR ALTER VIEW TEST_VISTA (X) AS SELECT 'v0' FROM RDB$DATABASE",
			"CREATE OR ALTER PROCEDURE REST_TEST_VISTA RETURNS (X VARCHAR(10)) AS BEGIN SELECT X FROM TEST_VISTA INTO :X; SUSPEND; END",
			"GRANT SELECT ON TEST_VISTA TO PROCEDURE REST_TEST_VISTA",
			"GRANT EXECUTE ON PROCEDURE REST_TEST_VISTA TO GATEWAY"},
		version: func(n int) string {
			return fmt.Sprintf("CREATE OR ALTER VIEW TEST_VISTA (X) AS SELECT 'v%d' FROM RDB$DATABASE", n)
		},
		endpoint: "executequery", req: `{"CLAVE":"Get_Vista"}`,
		answer: func(n int) string { return fmt.Sprintf(`{"cod_error":0,"data":[{"X":"v%d"}]}`, n) },
	}} {
		t.Run(tt.name, func(t *testing.T) {
			fbtest.Setup(t, cfg, append(tt.setup, tt.version(1))...)
			e := newEnvOpts(t, gateway.Config{}, firebird.Options{StmtMaxAge: maxAge}, map[string]any{"demo": anonymous(cfg)})
			h := specAnd(t, e, tt.op)
			for n := 1; n <= 2; n++ {
				if n > 1 {
					fbtest.Setup(t, cfg, tt.version(n))
				}
				settles(t, maxAge, fmt.Sprintf("version %d", n),
					func() response { return do(t, h, http.MethodPost, path("demo", tt.endpoint), tt.req) },
					func(r response) bool { return r.Raw == tt.answer(n) })
			}
		})
	}
}

// TestAGrantThatMendsACallIsSeenWithinStmtMaxAge: an upgrade alters a
// procedure to raise an exception it has no USAGE on, so every call fails
// (503, naming the GRANT); the DBA grants it. A pooled connection keeps the
// access list it checked and would go on failing, for as long as it lives
// (10 minutes), while a new one runs the call: the pool's check sees the
// grant, to a procedure and not to the gateway's user, and re-attaches. The
// DBA's transaction began before another one's DDL committed, so the grant
// is not the newest row of what the check reads.
func TestAGrantThatMendsACallIsSeenWithinStmtMaxAge(t *testing.T) {
	const maxAge = 300 * time.Millisecond
	cfg := fbtest.Demo(t)
	version := func(a int) string {
		return fmt.Sprintf(`CREATE OR ALTER PROCEDURE REST_TEST_VERSION RETURNS (A INTEGER) AS BEGIN
			IF (A = -1) THEN EXCEPTION E_TEST_VERSION; A = %d; SUSPEND; END`, a)
	}
	// Before the upgrade, and after the test: the procedure other tests
	// know, which raises nothing.
	const plain = "CREATE OR ALTER PROCEDURE REST_TEST_VERSION RETURNS (A INTEGER) AS BEGIN A = 1; SUSPEND; END"
	const revoke = "REVOKE USAGE ON EXCEPTION E_TEST_VERSION FROM PROCEDURE REST_TEST_VERSION"
	fbtest.Setup(t, cfg, "CREATE OR ALTER EXCEPTION E_TEST_VERSION 'never raised'", plain, revoke,
		"GRANT EXECUTE ON PROCEDURE REST_TEST_VERSION TO GATEWAY", "RECREATE TABLE TEST_VERSION_DDL (A INTEGER)")
	t.Cleanup(func() { fbtest.Setup(t, cfg, plain, revoke) })
	e := newEnvOpts(t, gateway.Config{}, firebird.Options{StmtMaxAge: maxAge}, map[string]any{"demo": anonymous(cfg)})
	get := func() response { return e.post(t, path("demo", "executequery"), `{"CLAVE":"Get_Version"}`) }
	until := func(want func(response) bool, what string) {
		t.Helper()
		settles(t, maxAge, what, get, want)
	}
	served := func(a int) func(response) bool {
		return func(r response) bool { return r.Raw == fmt.Sprintf(`{"cod_error":0,"data":[{"A":%d}]}`, a) }
	}
	refused := func(r response) bool {
		return r.Status == http.StatusServiceUnavailable && strings.Contains(r.Raw, "GRANT USAGE ON EXCEPTION E_TEST_VERSION TO PROCEDURE REST_TEST_VERSION")
	}
	until(served(1), "served")
	fbtest.Setup(t, cfg, version(2))
	until(refused, "refused for want of USAGE")

	admin := fbtest.Open(t, fbtest.Admin(t, cfg))
	dba, err := admin.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer dba.Rollback() //nolint:errcheck // committed below
	if _, err := dba.Exec("SELECT 1 FROM RDB$DATABASE"); err != nil {
		t.Fatal(err)
	}
	fbtest.Setup(t, cfg, "RECREATE TABLE TEST_VERSION_DDL (A INTEGER)")
	until(refused, "refused after other DDL")
	if _, err := dba.Exec("GRANT USAGE ON EXCEPTION E_TEST_VERSION TO PROCEDURE REST_TEST_VERSION"); err != nil {
		t.Fatal(err)
	}
	if err := dba.Commit(); err != nil {
		t.Fatal(err)
	}
	until(served(2), "served once granted")
}

// TestAWriteWhoseCommitWaitsPastTheDeadline: in a database with an ON
// TRANSACTION COMMIT trigger a write's commit waits for its block's answer
// (Session.commitWith), so a commit that waits past the deadline, for a
// lock an ERP user holds in that trigger, leaves its outcome unknown:
// answered 1204 within the deadline, and written at most once once the
// lock is released. (A commit sent with its block could be cancelled by
// op_cancel, but would run the trigger after a block that failed.)
func TestAWriteWhoseCommitWaitsPastTheDeadline(t *testing.T) {
	admin := fbtest.Open(t, fbtest.Admin(t, fbtest.Demo(t)))
	// The commit of a transaction that inserted a SLOW... third party waits
	// for a lock an ERP user holds.
	commitTrigger(t, admin, "TEST_SLOW_COMMIT", "TERCEROS", "SLOW", "UPDATE TEST_CANDADO SET N = N + 1 WHERE ID = 1", "UPDATE ON TEST_CANDADO")
	// Well under the lock timeout Firebird fires at 1 to 3 s: the deadline,
	// not the server's refusal, must end the commit's wait.
	const timeout = 500 * time.Millisecond
	e := newEnv(t, gateway.Config{Timeout: timeout}, map[string]any{"demo": anonymous(fbtest.Demo(t))})
	code := "SLOW" + newCode()[1:11]
	holder := holdCandado(t, admin)
	r, took := timed(t, e.h, path("demo", "execute"), setTerceros(code))
	if r.Status != http.StatusServiceUnavailable || *r.Body.CodError != int(erp.CodeOutcomeUnknown) || took > timeout+answerSlack {
		t.Fatalf("a commit waiting at the deadline: %d %s after %s", r.Status, r.Raw, took)
	}
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if n := fbtest.ThirdParties(t, admin, code); n > 1 {
		t.Fatalf("%d third parties %s after one write", n, code)
	}
}

// answerSlack is what a request may take past its database deadline in
// these tests: the driver's 200 ms grace and the gateway's 300 ms, and
// room for a busy machine (the race detector, CI) to schedule them. A
// deadline that did not hold would take the server's own time, or forever.
const answerSlack = 1500 * time.Millisecond

// ageSlack is what a change may take past GATEWAY_STMT_MAX_AGE to be
// served in these tests: the read that finds the check due, and room for a
// busy machine. A check that never came, or came at the 60 s default,
// would take far longer.
const ageSlack = time.Second
