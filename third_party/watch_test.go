package thirdparty

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/firebird"
)

// watcher matches a goroutine of the driver's that watches a context: a
// function literal of withCancelWatcher or withContextDeadline.
var watcher = regexp.MustCompile(`\(\*firebirdsqlStmt\)\.withCancelWatcher\.func|\(\*wireProtocol\)\.withContextDeadline\.func`)

// TestWatchersWithoutAGoroutine holds patch 0009 against Firebird: a
// statement waiting for the server under a cancellable context has no
// goroutine watching that context, and cancelling it still ends the wait
// at once (op_cancel), the connection still usable.
func TestWatchersWithoutAGoroutine(t *testing.T) {
	cfg := fbtest.Demo(t)
	fbtest.KeyTable(t, cfg)
	holder := fbtest.Open(t, cfg)
	const insert = "INSERT INTO GATEWAY_IDEMPOTENCY (SCOPE, IDEM_KEY, CLAVE, REQUEST_HASH, CREATED_AT) VALUES ('watchers', ?, 'test', 'h', CURRENT_TIMESTAMP)"
	key := fmt.Sprint(time.Now().UnixNano())
	ctx := context.Background()
	held, err := holder.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback() //nolint:errcheck // only held, never kept
	if _, err := held.ExecContext(ctx, insert, key); err != nil {
		t.Fatal(err)
	}

	db, err := sql.Open("firebirdsql", firebird.DSN(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	waiter, err := db.BeginTx(wctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		// A WAIT transaction waits for the holder's key as long as it lives.
		_, err := waiter.ExecContext(wctx, insert, key)
		done <- err
	}()

	// The insert is sent, and waits: its goroutine is in the driver's read.
	var dump bytes.Buffer
	for deadline := time.Now().Add(5 * time.Second); ; {
		dump.Reset()
		if err := pprof.Lookup("goroutine").WriteTo(&dump, 1); err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(dump.Bytes(), []byte("firebirdsql.(*wireProtocol).opResponse")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the insert is not waiting for the server after 5 s:\n%s", dump.Bytes())
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // a watcher started with the read is running by now
	dump.Reset()
	if err := pprof.Lookup("goroutine").WriteTo(&dump, 1); err != nil {
		t.Fatal(err)
	}
	if m := watcher.Find(dump.Bytes()); m != nil {
		t.Errorf("a goroutine watches the waiting statement's context (%s):\n%s", m, dump.Bytes())
	}

	cancelled := time.Now()
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the cancelled insert succeeded")
		}
		t.Logf("cancelled after %v: %v", time.Since(cancelled).Round(time.Millisecond), err)
	case <-time.After(5 * time.Second):
		t.Fatal("the insert still waits 5 s after its context was cancelled")
	}
	waiter.Rollback() //nolint:errcheck // its context is cancelled: the connection may be dropped
	var one int
	if err := db.QueryRowContext(ctx, "SELECT 1 FROM RDB$DATABASE").Scan(&one); err != nil || one != 1 {
		t.Errorf("after the cancel, a read: %d, %v", one, err)
	}
}
