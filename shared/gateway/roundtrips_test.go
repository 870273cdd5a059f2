package gateway_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// linkDelay is each direction's delay on the test's link: enough that a
// client's pipelined sends reach the proxy before the server's answer, so
// that they count as the one round trip they are.
const linkDelay = 2 * time.Millisecond

// TestRoundTrips counts, through a link that stands in for the WAN between
// a Lambda and a customer's Firebird, the round trips of each operation
// through the handler and of the raw driver's best (a prepared statement
// on a warm connection), and holds the gateway's. `make roundtrips` prints
// the table.
func TestRoundTrips(t *testing.T) {
	cfg := fbtest.Demo(t)
	setupKeys(t, cfg)
	setupBlobs(t, cfg)
	fbtest.CreateList(t, cfg)
	link := fbtest.NewLink(t, cfg, linkDelay)
	linked := link.Through(cfg)
	e := newEnv(t, gateway.Config{}, map[string]any{"demo": tenants.Instance{Connection: linked, Idempotency: true}})
	token := fbtest.Token(t, e.acc, "demo")
	logged := func() int64 { return loggedTrips(t, e) }
	var lastLogged int64
	post := func(endpoint, key, body string) string {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, path("demo", endpoint), strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		lastLogged = logged()
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"data"`) {
			t.Fatalf("%.100s: %d %.300s", body, rec.Code, rec.Body.String())
		}
		return rec.Body.String()
	}
	// per is the median round trips of n runs of op: a connection's
	// first use of an operation prepares its statements, which later ones
	// reuse. Where op is a request, its log line's median is the link's
	// (run by run they may differ by one: the link sees a request's last
	// send after the request answered, when the wire is slow).
	per := func(n int, op func(i int), held bool) float64 {
		trips, logs := make([]float64, n), make([]float64, n)
		for i := range n {
			before := link.RoundTrips()
			op(i)
			trips[i] = float64(link.RoundTrips() - before)
			logs[i] = float64(lastLogged)
		}
		med := func(v []float64) float64 {
			slices.Sort(v)
			return (v[(n-1)/2] + v[n/2]) / 2
		}
		if held && med(logs) != med(trips) {
			t.Errorf("requests logged %v round trips, the link counted %v", logs, trips)
		}
		return med(trips)
	}
	const n = 20
	run := time.Now().UnixNano() % 1e9
	referencia := `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`
	blobs := `{"CLAVE":"Get_Blobs","N":"50"}`
	// The answer over loopback; TestBlobsInTheRowAnswerAsPlainOnes holds
	// BLOBs read in the row to the plain read.
	overLoopback := demoEnv(t, gateway.Config{}).post(t, path("demo", "executequery"), blobs).Raw
	// One run each: its log may count one more (see per).
	first := per(1, func(int) { post("executequery", "", referencia) }, false)
	second := per(1, func(int) { post("executequery", "", referencia) }, false)
	read := per(n, func(int) { post("executequery", "", referencia) }, true)
	readBlobs := func(int) {
		if got := post("executequery", "", blobs); got != overLoopback {
			t.Fatalf("50 rows with BLOBs through the link:\n%.2000s\nover loopback:\n%.2000s", got, overLoopback)
		}
	}
	firstBlobRows := per(1, readBlobs, false)
	blobRows := per(n, readBlobs, true)
	if !strings.Contains(overLoopback, strings.Repeat("ñ", 70000)+`x"`) {
		t.Fatal("the long BLOB is not whole")
	}
	write := per(n, func(i int) { post("execute", "", setTerceros(fmt.Sprintf("RT%d-%d", run, i))) }, true)
	unkeyed := per(n, func(i int) { post("execute", "", pago(fmt.Sprintf("RP%d-%d", run, i), 1)) }, true)
	keyed := per(n, func(i int) { post("execute", fmt.Sprintf("rt-%d-%d", run, i), pago(fmt.Sprintf("RK%d-%d", run, i), 1)) }, true)
	document := per(n, func(int) { post("execute", "", order("800000000", "REF0001", "REF0002", "REF0003")) }, true)
	keyedDocument := per(n, func(i int) {
		post("execute", fmt.Sprintf("rtd-%d-%d", run, i), order("800000000", "REF0001", "REF0002", "REF0003"))
	}, true)
	list := `{"CLAVE":"Get_Lista","N":"5000"}`
	post("executequery", "", list) // prepared
	listRead := per(3, func(int) { post("executequery", "", list) }, true)
	readBatch := per(n, func(int) { post("executequery", "", "["+referencia+","+referencia+","+referencia+"]") }, true)
	// The health check describes the catalog's procedures on an
	// attachment of its own, in queries whose number does not grow with
	// the catalog's. The link may also see that attachment's detach, sent
	// after the answer.
	health := per(1, func(int) {
		req := httptest.NewRequest(http.MethodGet, "/demo/health", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		e.h.ServeHTTP(httptest.NewRecorder(), req)
		lastLogged = logged()
	}, false)

	// The raw driver over the same link: a new pool's connect, prepare and
	// first query, then its best (the prepared statement on its warm
	// connection).
	raw, err := sql.Open("firebirdsql", firebird.DSN(linked))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetMaxOpenConns(1)
	ctx := context.Background()
	var stmt *sql.Stmt
	// What replacing a connection costs (GATEWAY_STMT_MAX_AGE): its
	// connect, then each operation's prepare.
	var conn *sql.Conn
	connect := per(1, func(int) {
		if conn, err = raw.Conn(ctx); err != nil {
			t.Fatal(err)
		}
	}, false)
	// A prepare in a transaction begun (the connection's first statement
	// begins it).
	if _, err := conn.ExecContext(ctx, "SELECT 1 FROM RDB$DATABASE"); err != nil {
		t.Fatal(err)
	}
	var st *sql.Stmt
	prepare := per(1, func(int) {
		if st, err = conn.PrepareContext(ctx, "SELECT * FROM REST_SELECT_REFERENCIA(?)"); err != nil {
			t.Fatal(err)
		}
	}, false)
	st.Close()
	conn.Close()
	raw.SetMaxIdleConns(0) // the first read below connects again
	raw.SetMaxIdleConns(1)
	rawFirst := per(1, func(int) {
		if stmt, err = raw.PrepareContext(ctx, "SELECT * FROM REST_SELECT_REFERENCIA(?)"); err != nil {
			t.Fatal(err)
		}
		scan(t, stmt, "REF0001")
	}, false)
	defer stmt.Close()
	rawRead := per(n, func(int) { scan(t, stmt, "REF0001") }, false)
	blobStmt, err := raw.PrepareContext(ctx, "SELECT * FROM REST_TEST_BLOBS(?)")
	if err != nil {
		t.Fatal(err)
	}
	defer blobStmt.Close()
	rawBlobRows := per(3, func(int) { scan(t, blobStmt, "50") }, false)
	rows := []struct {
		what       string
		trips, raw float64
		most       float64 // what the gateway is held to; 0 for none yet
	}{
		{"first read of a new server (connect, prepare, query)", first, rawFirst, 9},
		{"its second read, on the connection the first opened", second, 0, 1},
		{"one-row read with a non-null text BLOB (Get_Referencias)", read, rawRead, 1},
		{"50 rows, each with a text and a binary BLOB, one of 70,001 characters", blobRows, rawBlobRows, 7},
		// A prepare needs its transaction begun, and a read's ended with
		// the call (endReadLater): a warm connection's first read of a
		// statement begins it in a round trip of its own.
		{"the same, the connection's first read of them (two prepares)", firstBlobRows, 0, 9},
		{"write with its read-back (Set_Terceros)", write, 0, 1},
		{"write with its read-back (Set_Pago)", unkeyed, 0, 1},
		{"the same under an Idempotency-Key", keyed, 0, 1},
		{"a document: a header and three lines in one batch", document, 0, 2},
		{"the same under an Idempotency-Key", keyedDocument, 0, 2},
		{"three reads in one batch (one snapshot)", readBatch, 0, 4},
		{"5,000 rows of a price list (Get_Lista)", listRead, 0, 10},
		{fmt.Sprintf("a health check of %d operations (its own connect)", len(testOperations())), health, 0, 24},
	}
	t.Logf("round trips per operation, medians of %d (link: %s each way; raw: the driver's prepared statement on a warm connection)", n, linkDelay)
	t.Logf("%-60s %8s %8s", "operation", "gateway", "raw")
	t.Logf("%-60s %8s %8.1f", "a connect", "", connect)
	t.Logf("%-60s %8s %8.1f", "a prepare (Get_Referencias' 50 columns)", "", prepare)
	if prepare > 1 {
		t.Errorf("the driver's prepare of Get_Referencias' 50 columns: %.1f round trips, at most 1", prepare)
	}
	for _, r := range rows {
		rawText := "-"
		if r.raw > 0 {
			rawText = fmt.Sprintf("%.1f", r.raw)
		}
		t.Logf("%-60s %8.1f %8s", r.what, r.trips, rawText)
		if r.most > 0 && r.trips > r.most {
			t.Errorf("%s: %.1f round trips, at most %.1f", r.what, r.trips, r.most)
		}
	}
	if document > write+1 {
		t.Errorf("a document makes %.1f round trips, a single write %.1f: at most one more", document, write)
	}
	if keyed > unkeyed {
		t.Errorf("a keyed write makes %.1f round trips, the same write without a key %.1f", keyed, unkeyed)
	}
}

// loggedTrips is the round trips the last request's log line carries.
func loggedTrips(t testing.TB, e *env) int64 {
	t.Helper()
	log := strings.TrimSpace(e.log.String())
	line := log[strings.LastIndex(log, "\n")+1:]
	i := strings.Index(line, "round_trips=")
	var n int64
	if _, err := fmt.Sscanf(line[max(i, 0):], "round_trips=%d", &n); i < 0 || err != nil {
		t.Fatalf("no round trips in %q: %v", line, err)
	}
	return n
}

// scan reads the rows of a prepared statement as a client would.
func scan(t testing.TB, stmt *sql.Stmt, arg string) {
	t.Helper()
	rs, err := stmt.QueryContext(context.Background(), arg)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	cols, _ := rs.Columns()
	vals, ptrs := make([]any, len(cols)), make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rs.Next() {
		if err := rs.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestBlobsInTheRowInAnotherCharacterSet: a text BLOB of a WIN1252 database
// read in the row on a UTF8 connection answers as the BLOB itself does (the
// other instance's answer below is the plain read's: TestRoundTrips).
func TestBlobsInTheRowInAnotherCharacterSet(t *testing.T) {
	e := demoEnv(t, gateway.Config{})
	for instance, code := range map[string]string{"otra": "PRD0001", "demo": "REF0001"} {
		var first string
		for i := range 4 { // the first on a new connection, then on a warm one
			r := e.post(t, path(instance, "executequery"), `{"CLAVE":"Get_Referencias","CODIGO":"`+code+`"}`)
			if r.Status != 200 || !strings.Contains(r.Raw, `"DESCRIPCION":"`) {
				t.Fatalf("%s: %d %s", instance, r.Status, r.Raw)
			}
			if i == 0 {
				first = r.Raw
			} else if r.Raw != first {
				t.Fatalf("%s, call %d:\n%s\nthe first:\n%s", instance, i, r.Raw, first)
			}
		}
	}
}

// TestAWriteWhoseReadBackAnswersRows: a write whose read-back answers more
// than one row runs first as a one-row block, which fails at the second row
// with nothing written, then again as a block that returns its rows as they
// are read, its commit after them: its answer is whole, the write happens
// once, and the pool's next call of it runs as that block at once (two
// round trips).
func TestAWriteWhoseReadBackAnswersRows(t *testing.T) {
	cfg := fbtest.Demo(t)
	setupRows(t, cfg)
	admin := fbtest.Open(t, fbtest.Admin(t, cfg))
	codes := []string{"3", "03"} // REST_TEST_FILAS answers CODIGO rows
	for _, code := range codes {
		if _, err := admin.Exec("DELETE FROM TERCEROS WHERE CODIGO = ?", code); err != nil {
			t.Fatal(err)
		}
	}
	link := fbtest.NewLink(t, cfg, linkDelay)
	e := newEnv(t, gateway.Config{}, map[string]any{"demo": anonymous(link.Through(cfg))})
	write := func(code string) (trips int64) {
		t.Helper()
		body := strings.Replace(setTerceros(code), `"Set_Terceros"`, `"Set_Terceros_Answer_Too_Large"`, 1)
		before := link.RoundTrips()
		r := e.post(t, path("demo", "execute"), body)
		if r.Status != 200 || len(r.Body.Data) != 3 {
			t.Fatalf("%s: %d %.300s", code, r.Status, r.Raw)
		}
		return link.RoundTrips() - before
	}
	first := write(codes[0])
	if again := write(codes[1]); again != 2 {
		t.Errorf("the pool's next call of the write: %d round trips, want 2", again)
	} else {
		t.Logf("round trips: %d the first time, %d once the pool knows", first, again)
	}
	for _, code := range codes {
		if n := fbtest.ThirdParties(t, admin, code); n != 1 {
			t.Errorf("third party %s: %d rows, want 1", code, n)
		}
	}
}
