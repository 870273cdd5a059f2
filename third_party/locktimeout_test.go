package thirdparty

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nakagami/firebirdsql"

	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/firebird"
)

// TestLockTimeout holds patch 0001 against Firebird: a WAIT transaction of a
// connection with lock_timeout=1 gives up on a key another transaction
// inserted and has not ended within the second; without the option it
// waits as long as the holder; a NO WAIT transaction does not wait at all.
func TestLockTimeout(t *testing.T) {
	cfg := fbtest.Demo(t)
	fbtest.KeyTable(t, cfg)
	holder := fbtest.Open(t, cfg)
	const insert = "INSERT INTO GATEWAY_IDEMPOTENCY (SCOPE, IDEM_KEY, CLAVE, REQUEST_HASH, CREATED_AT) VALUES ('locktimeout', ?, 'test', 'h', CURRENT_TIMESTAMP)"
	key := fmt.Sprint(time.Now().UnixNano())
	ctx := context.Background()
	tx, err := holder.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // only held, never kept
	if _, err := tx.ExecContext(ctx, insert, key); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		dsn       string
		isolation sql.IsolationLevel
		// The insert fails after failsAfter and within failsWithin (the
		// server's timer, and room for a busy machine), or is still
		// waiting when the test's deadline (stillWaiting) cancels it.
		// Firebird's lock manager counts whole seconds and looks at its
		// timer when its wait wakes, so a wait of N seconds ends between
		// N-1 and N+1 (measured: 0.3 to 0.9 s for 1, 2.0 s for 2 on an idle
		// machine, 2.98 s for 2 under CI's race detector); the bound is
		// N+1.5 s, far below the 10 s a wait without the option would last.
		failsAfter, failsWithin, stillWaiting time.Duration
	}{
		{"WAIT, lock_timeout=1", "&lock_timeout=1", sql.LevelReadCommitted, 0, 2500 * time.Millisecond, 0},
		{"WAIT, lock_timeout=2", "&lock_timeout=2", sql.LevelReadCommitted, 500 * time.Millisecond, 3500 * time.Millisecond, 0},
		{"WAIT, no lock_timeout", "", sql.LevelReadCommitted, 0, 0, 2 * time.Second},
		// A lock timeout far longer than the bound: a NO WAIT that waited
		// could not pass.
		{"NO WAIT, lock_timeout=5", "&lock_timeout=5", sql.IsolationLevel(firebirdsql.LevelReadCommittedNoWait), 0, 800 * time.Millisecond, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, err := sql.Open("firebirdsql", firebird.DSN(cfg)+c.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			deadline := 10 * time.Second
			if c.stillWaiting > 0 {
				deadline = c.stillWaiting
			}
			cctx, cancel := context.WithTimeout(ctx, deadline)
			defer cancel()
			waiter, err := db.BeginTx(cctx, &sql.TxOptions{Isolation: c.isolation})
			if err != nil {
				t.Fatal(err)
			}
			defer waiter.Rollback() //nolint:errcheck // it must fail anyway
			began := time.Now()
			_, err = waiter.ExecContext(cctx, insert, key)
			took := time.Since(began)
			var fb *firebirdsql.FbError
			switch {
			case c.stillWaiting > 0:
				if !errors.Is(err, context.DeadlineExceeded) && cctx.Err() == nil {
					t.Errorf("after %v: %v, want still waiting at %v", took, err, c.stillWaiting)
				}
			case !errors.As(err, &fb) || fb.GDSCodes[0] != firebirdsql.ISCUniqueKeyViolation:
				t.Errorf("after %v: %v, want a unique key violation", took, err)
			case took < c.failsAfter || took > c.failsWithin:
				t.Errorf("failed after %v, want after %v and within %v", took, c.failsAfter, c.failsWithin)
			}
			t.Logf("%v: %v", took.Round(time.Millisecond), err)
		})
	}
}
