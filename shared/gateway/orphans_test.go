package gateway_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/calls"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// The cut: through a link with 20 ms round trips, every open flow is dropped
// silently 2 s into the run (or just after half its requests were sent), and so is
// every flow opened in the next 4 s, as a NAT that loses its state does; the
// gateway's deadlines are 4 s.
const (
	cutDelay   = 10 * time.Millisecond // each way
	cutAt      = 2 * time.Second
	cutFor     = 4 * time.Second
	cutTimeout = 4 * time.Second
	// cutBound is an orphan's bound with those deadlines: the longest call
	// and firebird's margin of 5 s.
	cutBound = cutTimeout + 5*time.Second
)

// lockWaitAnswered bounds a write that met a lock: Firebird ends our lock
// wait (lock_timeout=2) within 3 s (2.98 s seen under CI), and the orphan
// hunt after it takes at most 2 s (shared/firebird's lockWaitMax and
// huntTimeout).
const lockWaitAnswered = 5 * time.Second

// ours counts the transactions that could hold anything (any but read-only
// READ COMMITTED) of the gateway's attachments, and the oldest one's age:
// those the server still holds active (firebird.Active), all of them while
// the bystander's is open.
func ours(t testing.TB, admin *sql.DB) (n int, oldest time.Duration) {
	t.Helper()
	var age sql.NullInt64
	// A MON$ snapshot lasts as long as the transaction that read it: a
	// transaction of its own sees the server now.
	tx, err := admin.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // read only
	err = tx.QueryRow(`SELECT COUNT(*), CAST(MAX(DATEDIFF(MILLISECOND FROM t.MON$TIMESTAMP TO CURRENT_TIMESTAMP)) AS BIGINT)
		FROM MON$TRANSACTIONS t JOIN MON$ATTACHMENTS a ON a.MON$ATTACHMENT_ID = t.MON$ATTACHMENT_ID
		WHERE a.MON$CLIENT_VERSION STARTING WITH 'erp-gateway ' AND NOT (t.MON$READ_ONLY = 1 AND t.MON$ISOLATION_MODE IN (2, 3))
		AND `+firebird.Active).Scan(&n, &age)
	if err != nil {
		t.Fatal(err)
	}
	return n, time.Duration(age.Int64) * time.Millisecond
}

// bystander is another program of the customer's, logged in as the
// gateway's own user: an attachment without the gateway's marker holding a
// read-write transaction, with a row of its own not committed.
type bystander struct {
	db         *sql.DB
	tx         *sql.Tx
	attachment int64
	key        string
}

func newBystander(t testing.TB, cfg erp.Connection) *bystander {
	t.Helper()
	b := &bystander{db: fbtest.Open(t, cfg), key: fmt.Sprintf("bystander-%d", time.Now().UnixNano())}
	b.db.SetMaxOpenConns(1)
	var err error
	if b.tx, err = b.db.Begin(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.tx.Rollback() }) //nolint:errcheck // only held
	if _, err := b.tx.Exec("INSERT INTO GATEWAY_IDEMPOTENCY (SCOPE, IDEM_KEY, CLAVE, REQUEST_HASH, CREATED_AT) VALUES ('bystander', ?, 'x', 'h', CURRENT_TIMESTAMP)", b.key); err != nil {
		t.Fatal(err)
	}
	if err := b.tx.QueryRow("SELECT CURRENT_CONNECTION FROM RDB$DATABASE").Scan(&b.attachment); err != nil {
		t.Fatal(err)
	}
	return b
}

// untouched fails t unless the bystander is still attached, its
// transaction open and its row its own.
func (b *bystander) untouched(t testing.TB, admin *sql.DB) {
	t.Helper()
	tx, err := admin.Begin() // a MON$ snapshot of now (ours)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // read only
	var n int
	if err := tx.QueryRow("SELECT COUNT(*) FROM MON$TRANSACTIONS WHERE MON$ATTACHMENT_ID = ? AND MON$READ_ONLY = 0", b.attachment).Scan(&n); err != nil || n != 1 {
		t.Errorf("the bystander's attachment %d holds %d read-write transactions (%v), want its 1", b.attachment, n, err)
	}
	if err := b.tx.QueryRow("SELECT COUNT(*) FROM GATEWAY_IDEMPOTENCY WHERE SCOPE = 'bystander' AND IDEM_KEY = ?", b.key).Scan(&n); err != nil || n != 1 {
		t.Errorf("the bystander's transaction: %d rows of its own, %v", n, err)
	}
}

// end rolls the bystander's transaction back.
func (b *bystander) end(t testing.TB) {
	t.Helper()
	if err := b.tx.Rollback(); err != nil {
		t.Fatal(err)
	}
}

// cutRun is what a run through the cut saw of each request it sent until
// a definitive answer.
type cutRun struct {
	slowest time.Duration // from a request's first try to its definitive answer
	last    time.Time     // the last answer
	tries   int
	oldest  time.Duration // the oldest transaction of ours seen during the run
}

// throughACut sends n requests from 4 clients through a link that is cut
// as the constants above say, each retried until answer calls it
// definitive (Retry-After is honoured, up to a second), and samples the
// gateway's transactions on the server meanwhile.
func throughACut(t *testing.T, admin *sql.DB, link *fbtest.Link, n int, send func(i int) sent, definitive func(i int, s sent) bool) cutRun {
	t.Helper()
	var run cutRun
	var mu sync.Mutex
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
			if _, oldest := ours(t, admin); oldest > run.oldest {
				mu.Lock()
				run.oldest = oldest
				mu.Unlock()
			}
		}
	}()
	// 2 s in, or once half the requests were sent if that comes first:
	// requests are in flight either way.
	var cut sync.Once
	drop := func() { cut.Do(func() { link.Drop(cutFor) }) }
	time.AfterFunc(cutAt, drop)
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	var tries fbtest.Retrying
	for range 4 {
		wg.Go(func() {
			for i := range next {
				if i == n/2 {
					// The others are then on their way: in the middle of
					// their transactions a moment later.
					time.AfterFunc(50*time.Millisecond, drop)
				}
				first := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
				a, ok := tries.Until(ctx, func(a fbtest.Answer) bool {
					return definitive(i, sent{status: a.Status, body: a.Body, header: a.Header})
				}, func() fbtest.Answer {
					s := send(i)
					return fbtest.Answer{Status: s.status, Body: s.body, Header: s.header}
				})
				cancel()
				if !ok {
					t.Errorf("request %d: no definitive answer in 45 s; the last: %d %.300s", i, a.Status, a.Body)
				}
				mu.Lock()
				run.slowest = max(run.slowest, time.Since(first))
				run.last = time.Now()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(stop)
	<-sampled
	run.tries = int(tries.Sent.Load())
	return run
}

// held fails t unless the run ended as a cut must: each request answered
// within 20 s of its first try, no transaction of ours older than its bound,
// the bystander untouched, and none of ours left open soon after the last
// answer.
// A write or a document is one or two sends now, so a cut finds one between
// its begin and its commit only sometimes (the run logs the oldest seen):
// the orphans' cancelling is held by the tests after these, which make one.
func (run cutRun) held(t *testing.T, admin *sql.DB, by *bystander) {
	t.Helper()
	if run.slowest > 20*time.Second {
		t.Errorf("the slowest request took %s from its first try, want at most 20 s", run.slowest)
	}
	if run.oldest > cutBound+time.Second {
		t.Errorf("a transaction of ours lived %s, past its bound %s", run.oldest, cutBound)
	}
	by.untouched(t, admin)
	by.end(t) // it holds the oldest active transaction back (firebird.Active says why that matters)
	settled(t, admin, run)
}

// settled fails t unless no transaction of the gateway that could hold
// anything is open within 10 s of the run's last answer.
func settled(t *testing.T, admin *sql.DB, run cutRun) {
	t.Helper()
	// admin's idle connections keep their autocommit transactions open
	// (the driver commits retaining), which would hold the oldest active
	// transaction back (firebird.Active): closed, and none kept from here on.
	admin.SetMaxIdleConns(0)
	for {
		n, oldest := ours(t, admin)
		if n == 0 {
			t.Logf("no transaction of the gateway open %s after the last answer", time.Since(run.last).Round(time.Millisecond))
			return
		}
		if time.Since(run.last) > 10*time.Second {
			t.Errorf("%d transactions of the gateway still open 10 s after the last answer, the oldest %s old", n, oldest)
			tx, err := admin.Begin()
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck // read only
			rows, err := tx.Query(`SELECT a.MON$ATTACHMENT_ID, a.MON$CLIENT_VERSION, a.MON$TIMESTAMP, t.MON$TRANSACTION_ID, t.MON$TIMESTAMP, t.MON$READ_ONLY, t.MON$ISOLATION_MODE,
				(SELECT o.MON$OLDEST_ACTIVE FROM MON$TRANSACTIONS o WHERE o.MON$TRANSACTION_ID = CURRENT_TRANSACTION)
				FROM MON$TRANSACTIONS t JOIN MON$ATTACHMENTS a ON a.MON$ATTACHMENT_ID = t.MON$ATTACHMENT_ID WHERE a.MON$CLIENT_VERSION STARTING WITH 'erp-gateway '`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var v [8]any
				if err := rows.Scan(&v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]); err != nil {
					t.Fatal(err)
				}
				t.Logf("attachment %v (%v, since %v): transaction %v since %v, read-only %v, isolation %v; the oldest active transaction: %v", v[:]...)
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func cutEnv(t *testing.T) (*env, *fbtest.Link, *sql.DB, string) {
	cfg := fbtest.Demo(t)
	admin := setupKeys(t, cfg)
	link := fbtest.NewLink(t, cfg, cutDelay)
	e := newEnvOpts(t, gateway.Config{Timeout: cutTimeout, BatchTimeout: cutTimeout}, firebird.Options{},
		map[string]any{"demo": tenants.Instance{Connection: link.Through(cfg), Idempotency: true}})
	return e, link, admin, fbtest.Token(t, e.acc, "demo")
}

// TestKeyedDocumentsThroughACutLink: 60 order documents (a header and two
// lines in one batch, each under its own Idempotency-Key) sent by 4
// clients through a link cut for 4 s, each retried with its key until
// answered. Every document is written once and whole, the slowest within
// 20 s of its first try; the transactions the cut orphaned, if any, are
// cancelled, none outliving its bound; a bystander of the same user is left
// alone.
func TestKeyedDocumentsThroughACutLink(t *testing.T) {
	e, link, admin, token := cutEnv(t)
	by := newBystander(t, fbtest.Demo(t))
	run := fmt.Sprintf("cut-%d", time.Now().UnixNano())
	note := func(i int) string { return fmt.Sprintf("%s-%d", run, i) }
	doc := func(i int) string {
		return fmt.Sprintf(`[{"CLAVE":"Set_Pedido","TERCERO":"800000000","FECHA":"26.11.2026","NOTA":%q},`+
			`{"CLAVE":"Set_Pedido_Linea","NUMERO":{"$from":0,"$field":"NUMERO"},"REFERENCIA":"REF0001","CANTIDAD":"1"},`+
			`{"CLAVE":"Set_Pedido_Linea","NUMERO":{"$from":0,"$field":"NUMERO"},"REFERENCIA":"REF0002","CANTIDAD":"2"}]`, note(i))
	}
	const n = 60
	got := throughACut(t, admin, link, n,
		func(i int) sent {
			return send(t, e.h, "execute", doc(i), "Authorization", "Bearer "+token, "Idempotency-Key", note(i))
		},
		func(i int, s sent) bool { return s.status == http.StatusOK })
	t.Logf("%d documents, %d requests; the slowest took %s from its first try; the oldest transaction of ours seen: %s", n, got.tries, got.slowest.Round(time.Millisecond), got.oldest.Round(time.Millisecond))
	for i := range n {
		var orders, lines int
		if err := admin.QueryRow(`SELECT COUNT(*), (SELECT COUNT(*) FROM PEDIDOS_LINEAS l JOIN PEDIDOS p ON p.NUMERO = l.NUMERO WHERE p.NOTA = ?) FROM PEDIDOS WHERE NOTA = ?`,
			note(i), note(i)).Scan(&orders, &lines); err != nil {
			t.Fatal(err)
		}
		if orders != 1 || lines != 2 {
			t.Errorf("document %d: %d orders and %d lines, want 1 and 2", i, orders, lines)
		}
	}
	got.held(t, admin, by)
}

// TestUnkeyedWritesThroughACutLink: the same cut under 60 Set_Terceros
// without a key, each retried until it is created or refused as existing
// (YA EXISTE, when a try before committed): each third party is there once.
func TestUnkeyedWritesThroughACutLink(t *testing.T) {
	e, link, admin, token := cutEnv(t)
	by := newBystander(t, fbtest.Demo(t))
	run := time.Now().UnixNano() % 1e9
	code := func(i int) string { return fmt.Sprintf("C%d-%d", run, i) }
	const n = 60
	got := throughACut(t, admin, link, n,
		func(i int) sent {
			return send(t, e.h, "execute", setTerceros(code(i)), "Authorization", "Bearer "+token)
		},
		func(i int, s sent) bool {
			return s.status == http.StatusOK && (strings.Contains(s.body, `"data"`) || strings.Contains(s.body, "EL TERCERO "+code(i)+" YA EXISTE"))
		})
	t.Logf("%d writes, %d requests; the slowest took %s from its first try; the oldest transaction of ours seen: %s", n, got.tries, got.slowest.Round(time.Millisecond), got.oldest.Round(time.Millisecond))
	for i := range n {
		if c := fbtest.ThirdParties(t, admin, code(i)); c != 1 {
			t.Errorf("third party %s: %d rows, want 1", code(i), c)
		}
	}
	got.held(t, admin, by)
}

// TestALiveKeyIsNeverTaken: a key held by a live request of another
// execution environment (its transaction young, its attachment not given
// up) is never cancelled by a hunt: a retry with the key is answered 409
// within a lock timeout and a hunt, and runs once the live one ends.
func TestALiveKeyIsNeverTaken(t *testing.T) {
	cfg := fbtest.Demo(t)
	admin := setupKeys(t, cfg)
	e := newEnvOpts(t, gateway.Config{Timeout: 8 * time.Second}, firebird.Options{},
		map[string]any{"demo": tenants.Instance{Connection: cfg, Idempotency: true}})
	token, scope, err := e.acc.Mint("demo", erp.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	code := newCode()
	key := "live-" + code
	// The live request: another environment's call, holding the key's
	// claim in a transaction that has not ended.
	other := newEnvOpts(t, gateway.Config{}, firebird.Options{}, map[string]any{"demo": tenants.Instance{Connection: cfg, Idempotency: true}})
	holding, release, done := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		done <- other.db.pools.Transact(context.Background(), erp.Target{Instance: "demo", Connection: cfg}, calls.ReadWrite, nil, func(ctx context.Context, s calls.Tx) error {
			if err := s.Exec(ctx, "INSERT INTO GATEWAY_IDEMPOTENCY (SCOPE, IDEM_KEY, CLAVE, REQUEST_HASH, CREATED_AT) VALUES (?, ?, 'Set_Pago', 'h', CURRENT_TIMESTAMP)", []any{scope, key}, false); err != nil {
				return err
			}
			close(holding)
			<-release
			return calls.ErrRollback // it ends without keeping anything
		})
	}()
	<-holding
	for range 2 {
		began := time.Now()
		retry := send(t, e.h, "execute", pago(code, 1), "Authorization", "Bearer "+token, "Idempotency-Key", key)
		took := time.Since(began)
		if retry.status != http.StatusConflict || !strings.Contains(retry.body, `"cod_error":1404`) || retry.header.Get("Retry-After") != "1" || took > lockWaitAnswered {
			t.Fatalf("a retry while the first runs: %d %s (Retry-After %q) after %s", retry.status, retry.body, retry.header.Get("Retry-After"), took)
		}
		t.Logf("a retry answered 409 after %s", took.Round(time.Millisecond))
	}
	close(release)
	if err := <-done; !errors.Is(err, calls.ErrRollback) {
		t.Fatalf("the live request was cut short: %v", err)
	}
	if s := send(t, e.h, "execute", pago(code, 1), "Authorization", "Bearer "+token, "Idempotency-Key", key); s.status != http.StatusOK || !strings.Contains(s.body, `"data"`) {
		t.Fatalf("a retry once the live one ended: %d %s", s.status, s.body)
	}
	if n := payments(t, admin, code); n != 1 {
		t.Fatalf("%d payments, want 1", n)
	}
	if strings.Contains(e.log.String(), "orphaned attachment cancelled") {
		t.Fatalf("a live attachment was cancelled:\n%s", e.log.String())
	}
}

// TestWithoutTheGrantNothingBreaks: a gateway user that may not cancel
// attachments writes as before; its first hunt is refused, logged once with
// the grant to give, and not tried again; the health check warns.
func TestWithoutTheGrantNothingBreaks(t *testing.T) {
	cfg := fbtest.Demo(t)
	admin := setupKeys(t, cfg)
	fbtest.Setup(t, cfg, "REVOKE DELETE ON MON$ATTACHMENTS FROM USER GATEWAY")
	t.Cleanup(func() { fbtest.Setup(t, cfg, "GRANT DELETE ON MON$ATTACHMENTS TO USER GATEWAY") })
	link := fbtest.NewLink(t, cfg, time.Millisecond)
	e := newEnvOpts(t, gateway.Config{Timeout: 2 * time.Second}, firebird.Options{},
		map[string]any{"demo": tenants.Instance{Connection: link.Through(cfg), Idempotency: true}})
	token := fbtest.Token(t, e.acc, "demo")
	code := newCode()
	write := func(code string) sent {
		return send(t, e.h, "execute", setTerceros(code), "Authorization", "Bearer "+token)
	}
	if s := write(code); s.status != http.StatusOK {
		t.Fatalf("a write: %d %s", s.status, s.body)
	}
	// A connection cut off mid-write (waiting on a lock an ERP user holds)
	// is abandoned: the next writes hunt, are refused, and carry on.
	holder, err := admin.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback() //nolint:errcheck // released below
	if _, err := holder.Exec("UPDATE TEST_CANDADO SET N = N + 1 WHERE ID = 1"); err != nil {
		t.Fatal(err)
	}
	done := make(chan sent)
	go func() {
		done <- send(t, e.h, "execute", fmt.Sprintf(`{"CLAVE":"Set_Pago_Espera","CODIGO":%q,"VALOR":1}`, code), "Authorization", "Bearer "+token)
	}()
	// Cut once the write waits on the lock: cut before it got there, the
	// link would take an idle connection, and the write would run on a
	// new one.
	const waiting = `SELECT COUNT(*) FROM MON$STATEMENTS s JOIN MON$ATTACHMENTS a ON a.MON$ATTACHMENT_ID = s.MON$ATTACHMENT_ID
		WHERE a.MON$USER = 'GATEWAY' AND s.MON$STATE = 1`
	for deadline := time.Now().Add(10 * time.Second); count(t, admin, waiting) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the write never waited on the lock")
		}
	}
	link.Drop(0)
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	if s := <-done; s.status != http.StatusServiceUnavailable {
		t.Fatalf("the write cut off: %d %s", s.status, s.body)
	}
	for range 3 {
		if s := write(newCode()); s.status != http.StatusOK || !strings.Contains(s.body, `"data"`) {
			t.Fatalf("a write after the cut: %d %s\n%s", s.status, s.body, e.log.String())
		}
	}
	if n := strings.Count(e.log.String(), "orphaned attachments cannot be cancelled"); n != 1 || !strings.Contains(e.log.String(), "GRANT DELETE ON MON$ATTACHMENTS TO USER GATEWAY") {
		t.Fatalf("the refused hunt logged %d times:\n%s", n, e.log.String())
	}
	req := httptest.NewRequest(http.MethodGet, "/demo/health", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	if !strings.Contains(rec.Body.String(), `{"clave":"MON$ATTACHMENTS","fatal":false,"finding":"MON$ATTACHMENTS may not be used by GATEWAY: GRANT DELETE ON MON$ATTACHMENTS TO GATEWAY; without it`) {
		t.Fatalf("health without the grant: %d %s", rec.Code, rec.Body.String())
	}
}

// orphanOf leaves what an execution environment cut off mid-write leaves:
// an attachment of the gateway's whose statement ran, whose commit was lost
// with its flow, and whose process is gone. The environment's calls took at
// most a second, so its bound is 6 s.
func orphanOf(t *testing.T, cfg erp.Connection, query string, args ...any) (attachment int64) {
	t.Helper()
	link := fbtest.NewLink(t, cfg, time.Millisecond)
	other := newEnvOpts(t, gateway.Config{}, firebird.Options{LongestCall: time.Second},
		map[string]any{"demo": tenants.Instance{Connection: link.Through(cfg), Idempotency: true}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := other.db.pools.Transact(ctx, erp.Target{Instance: "demo", Connection: link.Through(cfg)}, calls.ReadWrite, nil, func(ctx context.Context, s calls.Tx) error {
		if err := s.Exec(ctx, query, args, false); err != nil {
			return err
		}
		row, err := s.Row(ctx, "SELECT CURRENT_CONNECTION FROM RDB$DATABASE", nil)
		if err != nil {
			return err
		}
		attachment, _ = row[0].(int64)
		link.Drop(0) // the commit goes nowhere
		return nil
	})
	if err == nil {
		t.Fatal("a commit through a dropped flow was confirmed")
	}
	return attachment
}

// attached reports whether the attachment is still on the server.
func attached(t *testing.T, admin *sql.DB, attachment int64) bool {
	t.Helper()
	tx, err := admin.Begin() // a MON$ snapshot of now
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // read only
	var n int
	if err := tx.QueryRow("SELECT COUNT(*) FROM MON$ATTACHMENTS WHERE MON$ATTACHMENT_ID = ?", attachment).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// TestAPeriodicHuntCancelsAnIdleOrphan: an orphan that holds no lock
// anyone meets (a transaction begun, nothing written: it still pins the
// oldest active transaction) is cancelled by the hunt the write path runs
// every GATEWAY_STMT_MAX_AGE, once it is past its bound.
func TestAPeriodicHuntCancelsAnIdleOrphan(t *testing.T) {
	cfg := fbtest.Demo(t)
	admin := setupKeys(t, cfg)
	e := newEnvOpts(t, gateway.Config{}, firebird.Options{StmtMaxAge: time.Second},
		map[string]any{"demo": tenants.Instance{Connection: cfg, Idempotency: true}})
	token := fbtest.Token(t, e.acc, "demo")
	orphan := orphanOf(t, cfg, "SELECT 1 FROM RDB$DATABASE")
	began := time.Now()
	for attached(t, admin, orphan) {
		if time.Since(began) > 10*time.Second {
			t.Fatalf("the orphan %d is still attached %s later", orphan, time.Since(began))
		}
		if s := send(t, e.h, "execute", pago(newCode(), 1), "Authorization", "Bearer "+token); s.status != http.StatusOK {
			t.Fatalf("a write: %d %s", s.status, s.body)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("the idle orphan was cancelled %s after it was left (its bound: 6 s)", time.Since(began).Round(time.Millisecond))
	if !strings.Contains(e.log.String(), fmt.Sprintf("attachment_id=%d", orphan)) {
		t.Errorf("the orphan's cancellation is not logged:\n%s", e.log.String())
	}
}

// TestOrphansOfAnotherEnvironment: a write blocked by an orphan another
// execution environment left (one this process knows nothing of) runs once
// the orphan passes its bound and a hunt cancels it: unkeyed, it waits, and
// answers 503 "locked" with Retry-After when its deadline comes first;
// keyed, its retries answer 409 with Retry-After within a lock timeout.
func TestOrphansOfAnotherEnvironment(t *testing.T) {
	cfg := fbtest.Demo(t)
	admin := setupKeys(t, cfg)
	// A deadline past a lock wait and its hunt: the unkeyed first try
	// answers "locked", not its deadline.
	e := newEnvOpts(t, gateway.Config{Timeout: lockWaitAnswered + time.Second}, firebird.Options{},
		map[string]any{"demo": tenants.Instance{Connection: cfg, Idempotency: true}})
	token, scope, err := e.acc.Mint("demo", erp.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	until := func(t *testing.T, what string, req func() sent, want func(sent) bool, first func(sent, time.Duration)) {
		t.Helper()
		began := time.Now()
		for i := 0; ; i++ {
			s := req()
			if i == 0 {
				first(s, time.Since(began))
			}
			if want(s) {
				t.Logf("%s: answered after %s, in %d requests", what, time.Since(began).Round(time.Millisecond), i+1)
				// The orphan's 6 s bound, then at most two tries, each a
				// lock wait and its Retry-After.
				if most := 6*time.Second + 2*(lockWaitAnswered+time.Second); time.Since(began) > most {
					t.Errorf("%s: %s, want within %s: the orphan's 6 s bound and two tries", what, time.Since(began), most)
				}
				return
			}
			if time.Since(began) > 30*time.Second {
				t.Fatalf("%s: no answer in 30 s; the last: %d %s", what, s.status, s.body)
			}
			if s.header.Get("Retry-After") != "1" {
				t.Fatalf("%s: %d %s without Retry-After: 1", what, s.status, s.body)
			}
			time.Sleep(time.Second)
		}
	}

	t.Run("unkeyed", func(t *testing.T) {
		code := newCode()
		args := []any{code, "7", "N", "Íñigo", "", "Ibáñez", "", "", "Ferretería", "Calle 10", "604", "300", "i@example.com", "050021", "", "CC", "PN", "CO", "NA", "NA", "05001"}
		orphanOf(t, cfg, "EXECUTE PROCEDURE REST_INSERT_TERCEROS("+strings.TrimSuffix(strings.Repeat("?, ", len(args)), ", ")+")", args...)
		until(t, "Set_Terceros blocked by an orphan",
			func() sent { return send(t, e.h, "execute", setTerceros(code), "Authorization", "Bearer "+token) },
			func(s sent) bool { return s.status == http.StatusOK && strings.Contains(s.body, `"data"`) },
			func(s sent, took time.Duration) {
				if s.status != http.StatusServiceUnavailable || !strings.Contains(s.body, "records it writes are locked by another transaction that has not ended; nothing was written") {
					t.Errorf("the first try: %d %s after %s", s.status, s.body, took)
				}
			})
		if n := fbtest.ThirdParties(t, admin, code); n != 1 {
			t.Fatalf("%d rows of %s", n, code)
		}
	})
	t.Run("keyed", func(t *testing.T) {
		code := newCode()
		key := "orphaned-" + code
		orphanOf(t, cfg, "INSERT INTO GATEWAY_IDEMPOTENCY (SCOPE, IDEM_KEY, CLAVE, REQUEST_HASH, CREATED_AT) VALUES (?, ?, 'Set_Pago', 'h', CURRENT_TIMESTAMP)", scope, key)
		until(t, "Set_Pago whose key an orphan holds",
			func() sent {
				return send(t, e.h, "execute", pago(code, 1), "Authorization", "Bearer "+token, "Idempotency-Key", key)
			},
			func(s sent) bool { return s.status == http.StatusOK && strings.Contains(s.body, `"data"`) },
			func(s sent, took time.Duration) {
				if s.status != http.StatusConflict || !strings.Contains(s.body, `"cod_error":1404`) || took > lockWaitAnswered {
					t.Errorf("the first try: %d %s after %s, want 409 within a lock timeout", s.status, s.body, took)
				}
			})
		if n := payments(t, admin, code); n != 1 {
			t.Fatalf("%d payments of %s", n, code)
		}
	})
	if !strings.Contains(e.log.String(), "msg=\"orphaned attachment cancelled\"") || !strings.Contains(e.log.String(), "past its process's 6s bound") {
		t.Errorf("no orphan cancelled by age in the log:\n%s", e.log.String())
	}
}
