/*******************************************************************************
The MIT License (MIT)

Copyright (c) 2013-2019 Hajime Nakagami

Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal in
the Software without restriction, including without limitation the rights to
use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of
the Software, and to permit persons to whom the Software is furnished to do so,
subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS
FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR
COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER
IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN
CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
*******************************************************************************/

package firebirdsql

import (
	"bytes"
	"context"
	"database/sql/driver"
	"errors"
	"time"
)

type firebirdsqlTx struct {
	fc             *firebirdsqlConn
	isolationLevel int
	isAutocommit   bool
	transHandle    int32
	needBegin      bool
	// committedWith: the transaction's commit went with its last statement
	// (CommitWith), which answered commitErr; Commit reports it.
	committedWith bool
	commitErr     error
	// ctx is the BeginTx context. database/sql documents it as used until the
	// transaction is committed or rolled back, and Tx.Commit takes no context
	// of its own, so Commit is bounded by it. Nil for the connection's
	// autocommit transaction.
	ctx context.Context
}

func tpbForIsolationLevel(isolationLevel int) ([]byte, error) {
	switch isolationLevel {
	case ISOLATION_LEVEL_READ_COMMITED_LEGACY:
		return []byte{
			byte(isc_tpb_version3),
			byte(isc_tpb_write),
			byte(isc_tpb_wait),
			byte(isc_tpb_read_committed),
			byte(isc_tpb_no_rec_version),
		}, nil
	case ISOLATION_LEVEL_READ_COMMITED:
		return []byte{
			byte(isc_tpb_version3),
			byte(isc_tpb_write),
			byte(isc_tpb_wait),
			byte(isc_tpb_read_committed),
			byte(isc_tpb_rec_version),
		}, nil
	case ISOLATION_LEVEL_READ_COMMITED_NOWAIT:
		return []byte{
			byte(isc_tpb_version3),
			byte(isc_tpb_write),
			byte(isc_tpb_nowait),
			byte(isc_tpb_read_committed),
			byte(isc_tpb_rec_version),
		}, nil
	case ISOLATION_LEVEL_REPEATABLE_READ:
		return []byte{
			byte(isc_tpb_version3),
			byte(isc_tpb_write),
			byte(isc_tpb_wait),
			byte(isc_tpb_concurrency),
		}, nil
	case ISOLATION_LEVEL_SERIALIZABLE:
		return []byte{
			byte(isc_tpb_version3),
			byte(isc_tpb_write),
			byte(isc_tpb_wait),
			byte(isc_tpb_consistency),
		}, nil
	case ISOLATION_LEVEL_READ_COMMITED_RO:
		return []byte{
			byte(isc_tpb_version3),
			byte(isc_tpb_read),
			byte(isc_tpb_wait),
			byte(isc_tpb_read_committed),
			byte(isc_tpb_rec_version),
		}, nil
	case ISOLATION_LEVEL_READ_COMMITED_RO_NOWAIT:
		return []byte{
			byte(isc_tpb_version3),
			byte(isc_tpb_read),
			byte(isc_tpb_nowait),
			byte(isc_tpb_read_committed),
			byte(isc_tpb_rec_version),
		}, nil
	case ISOLATION_LEVEL_REPEATABLE_READ_RO:
		return []byte{
			byte(isc_tpb_version3),
			byte(isc_tpb_read),
			byte(isc_tpb_wait),
			byte(isc_tpb_concurrency),
		}, nil
	default:
		return nil, ErrInvalidIsolationLevel
	}
}

// withLockTimeout adds isc_tpb_lock_timeout to the TPB of a WAIT
// transaction (Firebird 2.0 and later): a record lock another transaction
// holds is then waited for at most seconds, and the statement fails as it
// would under NO WAIT instead of waiting for that transaction to end. The
// server counts the wait in whole seconds of its clock, so it lasts between
// seconds-1 and seconds+1. NO WAIT transactions and seconds <= 0 (wait as long
// as it takes) keep their TPB as it is.
func withLockTimeout(tpb []byte, seconds int32) []byte {
	if seconds <= 0 || !bytes.Contains(tpb, []byte{byte(isc_tpb_wait)}) {
		return tpb
	}
	return append(tpb, byte(isc_tpb_lock_timeout), 4, byte(seconds), byte(seconds>>8), byte(seconds>>16), byte(seconds>>24))
}

func (tx *firebirdsqlTx) begin() (err error) {
	if err = tx.sendBegin(); err != nil {
		return
	}
	return tx.beginResponse()
}

// sendBegin sends the transaction's op_transaction; beginResponse reads its
// answer, the transaction's handle.
func (tx *firebirdsqlTx) sendBegin() error {
	tpb, err := tpbForIsolationLevel(tx.isolationLevel)
	if err != nil {
		return err
	}
	tpb = withLockTimeout(tpb, tx.fc.lockTimeout)
	return tx.fc.wp.opTransaction(tpb)
}

func (tx *firebirdsqlTx) beginResponse() (err error) {
	tx.transHandle, _, _, err = tx.fc.wp.opResponse()
	if err != nil {
		tx.transHandle = 0
		return
	}
	tx.needBegin = false
	tx.fc.transactionSet[tx] = struct{}{}
	return
}

// commitWithKey marks a context made by CommitWith.
type commitWithKey struct{}

// CommitWith returns a context for the last statement of a transaction,
// run with QueryContext: the driver sends the transaction's commit in the
// statement's round trip (after its execute and, for a SELECT, its first
// fetch, and after the transaction's begin when that goes with it too),
// and the transaction's Commit then reports that commit's outcome without
// a round trip of its own. Rollback then does nothing, unless the server
// refused the commit: it then rolls the transaction back.
//
// The commit is sent before the statement's answer is known, so it commits
// whatever the statement leaves: a statement that fails is undone by its
// own savepoint, and the commit keeps what the transaction did before it.
// A selectable procedure or EXECUTE BLOCK keeps the work it did before each
// row it returned, so one that is to commit only when it succeeds must do
// its work before its first row. A query whose rows do not all come with
// its first fetch fails, its transaction committed; and its BLOBs, read by
// Rows.Next in their transaction, can no longer be read. While the
// statement runs, the commit queued behind it keeps a cancel from reaching
// it (Firebird 3 reads op_cancel after the requests sent before it): a
// context that ends then ends the connection (cancel_hard_drop), and the
// commit's outcome is unknown.
func CommitWith(ctx context.Context) context.Context {
	return context.WithValue(ctx, commitWithKey{}, true)
}

func commitsWith(ctx context.Context) bool {
	with, _ := ctx.Value(commitWithKey{}).(bool)
	return with
}

// sendCommit sends the commit that goes with a statement (CommitWith).
func (tx *firebirdsqlTx) sendCommit() error {
	return tx.fc.wp.opCommit(tx.transHandle)
}

// commitResponse reads the answer to sendCommit's commit. A commit the
// server refused (an ON TRANSACTION COMMIT trigger's exception, say)
// leaves the transaction as it was: Rollback then ends it.
func (tx *firebirdsqlTx) commitResponse() error {
	_, _, _, err := tx.fc.wp.opResponse()
	if serverRefused(err) {
		err = &CommitError{Err: err}
	}
	tx.committedWith, tx.commitErr = true, err
	if err == nil {
		tx.fc.wp.clearInlineBlobCache(tx.transHandle)
		tx.isAutocommit = tx.fc.isAutocommit
		tx.needBegin = true
	}
	return err
}

// CommitError is the server's refusal of a transaction's commit (an ON
// TRANSACTION COMMIT trigger's exception, say), from Commit or from the
// statement a commit went with (CommitWith): everything before the commit
// succeeded, and the server keeps the transaction open. Commit rolls it
// back before it returns the refusal; after a statement's CommitWith,
// Rollback (or Commit) ends it. Err is the server's answer, an *FbError.
type CommitError struct{ Err error }

func (e *CommitError) Error() string { return e.Err.Error() }
func (e *CommitError) Unwrap() error { return e.Err }

// endRefused rolls back a transaction whose commit the server refused
// (refused, a *CommitError) and returns the refusal. database/sql never
// rolls back after a failed Commit, and returns the connection to its
// pool: forgotten, the transaction would stay open on the server, and the
// connection's next statements would run in it, never committed. A
// rollback that fails leaves the connection for database/sql to discard.
func (tx *firebirdsqlTx) endRefused(refused error) error {
	if err := tx.Rollback(); err != nil {
		tx.fc.wp.desynced = true
		return errors.Join(refused, err)
	}
	return refused
}

// lastObject is the handle a lazy port (ptype_lazy_send) takes for the
// object it created last: a request sent after op_transaction in the same
// flush names the transaction with it before its handle is known.
const lastObject = 0xFFFF

// beginsWith reports whether the transaction, not yet begun, may begin in
// the flush of an execute of stmt with args (the execute naming it by
// lastObject): on a lazy port, when the execute creates no object of its
// own first (a BLOB or an array argument), and when no other transaction
// of the connection is alive. A refused begin leaves the server's last
// object what it was; with no other transaction alive, the execute and
// anything after it naming lastObject then fail on its type, or on its
// absence, and never act on another transaction.
func (tx *firebirdsqlTx) beginsWith(stmt *firebirdsqlStmt, args []driver.Value) bool {
	if !tx.needBegin || tx.fc.wp.acceptType&ptype_MASK != ptype_lazy_send || stmt.stmtHandle == -1 {
		return false
	}
	for other := range tx.fc.transactionSet {
		if other != tx && !other.needBegin {
			return false
		}
	}
	for _, arg := range args {
		switch v := arg.(type) {
		case nil, int, int16, int32, int64, float64, bool, time.Time:
		case string:
			if len(tx.fc.wp.encodeString(v)) >= MAX_CHAR_LENGTH {
				return false
			}
		case []byte:
			if len(v) >= MAX_CHAR_LENGTH {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// commitRetaining commits the autocommit transaction.
//
// On the statement hot path (exec, ExecImmediate, batch) the caller passes its
// context: the commit response carries the statement's server-side work, so a
// fixed cap would fail a server that is merely slow (#288). The read is bounded by
// that context alone, and unbounded when it has no deadline (the v0.9.19
// behaviour). A context that has already ended falls back to the teardown bound,
// so the statement's work is still committed rather than left pending on a
// pooled connection.
//
// The teardown caller (freeStatement) passes nil and keeps the fixed
// abandonReadTimeout bound, so a silent wire cannot hang rows.Close/stmt.Close.
func (tx *firebirdsqlTx) commitRetaining(ctx context.Context) (err error) {
	if ctx != nil && ctx.Err() == nil {
		err = tx.fc.wp.withContextDeadline(ctx, func() error {
			if err := tx.fc.wp.opCommitRetaining(tx.transHandle); err != nil {
				return err
			}
			_, _, _, err := tx.fc.wp.opResponse()
			return err
		})
	} else {
		err = tx.fc.wp.opCommitRetaining(tx.transHandle)
		if err != nil {
			return
		}
		_, _, _, err = tx.fc.wp.opResponseTimeout(abandonReadTimeout)
	}
	tx.fc.wp.clearInlineBlobCache(tx.transHandle)
	tx.isAutocommit = tx.fc.isAutocommit
	return
}

// Commit is bounded by the BeginTx context: if it ends before the server answers,
// Commit returns the context error wrapped with driver.ErrBadConn and the
// connection is discarded. As with any connection lost mid-commit, the outcome of
// the commit on the server is then unknown. A commit the server refused is a
// *CommitError, its transaction rolled back (endRefused).
func (tx *firebirdsqlTx) Commit() (err error) {
	if tx.committedWith {
		tx.committedWith = false
		if errors.As(tx.commitErr, new(*CommitError)) {
			return tx.endRefused(tx.commitErr)
		}
		return tx.commitErr
	}
	if tx.needBegin {
		// Never begun (the driver begins a transaction with its first
		// statement): nothing to commit.
		tx.ctx = nil
		return nil
	}
	ctx := tx.ctx
	tx.ctx = nil
	if ctx == nil {
		ctx = context.Background()
	}
	err = tx.fc.wp.withContextDeadline(ctx, func() error {
		if err := tx.fc.wp.opCommit(tx.transHandle); err != nil {
			return err
		}
		_, _, _, err := tx.fc.wp.opResponse()
		return err
	})
	if serverRefused(err) {
		return tx.endRefused(&CommitError{Err: err})
	}
	tx.fc.wp.clearInlineBlobCache(tx.transHandle)
	tx.isAutocommit = tx.fc.isAutocommit
	tx.needBegin = true
	return
}

// RollbackLater ends the transaction without a round trip of its own: on
// a lazy port its rollback waits in the write buffer for the connection's
// next request, as Firebird's own client defers a statement's free, and
// its answer is read late, before that request's (a refusal among the
// answers read late is kept: lazyErr). For the driver the transaction has
// ended at once: its next statement begins it again, in the same round
// trip when it can (beginsWith). The server ends it when the next request
// arrives, before anything of that request runs, so the next transaction
// of the connection never sees what it kept for itself (the rows of a
// global temporary table ON COMMIT DELETE ROWS, its USER_TRANSACTION
// context). Meant for a read-only transaction, which a rollback ends as a
// commit would, but which no ON TRANSACTION COMMIT trigger can refuse
// (Firebird ignores a rollback trigger's exception). On a port that is
// not lazy it rolls back at once.
func (tx *firebirdsqlTx) RollbackLater() error {
	tx.ctx = nil
	tx.committedWith = false
	if tx.needBegin {
		return nil // never begun: nothing to roll back
	}
	lazy := tx.fc.wp.acceptType&ptype_MASK == ptype_lazy_send
	corked := tx.fc.wp.corked
	tx.fc.wp.corked = corked || lazy
	err := tx.fc.wp.opRollback(tx.transHandle)
	tx.fc.wp.corked = corked
	if err != nil {
		return err
	}
	if lazy {
		tx.fc.wp.lazyResponseCount++
	} else if _, _, _, err = tx.fc.wp.opResponseTimeout(abandonReadTimeout); err != nil {
		return err
	}
	tx.fc.wp.clearInlineBlobCache(tx.transHandle)
	// Unlike Rollback, the transaction stays what it was begun as (not the
	// connection's autocommit one): its next statement begins it again.
	tx.needBegin = true
	return nil
}

// Rollback keeps its fixed teardown bound instead of the BeginTx context:
// database/sql rolls back precisely when that context has ended.
func (tx *firebirdsqlTx) Rollback() (err error) {
	tx.ctx = nil
	// After a commit sent with a statement (CommitWith), a transaction
	// that committed has ended; one whose commit was refused is rolled
	// back.
	tx.committedWith = false
	if tx.needBegin {
		return nil // never begun: nothing to roll back
	}
	err = tx.fc.wp.opRollback(tx.transHandle)
	if err != nil {
		return err
	}
	// Teardown read: bounded so connection.Close()'s rollback loop cannot hang on a silent
	// wire before it ever reaches opDetach.
	_, _, _, err = tx.fc.wp.opResponseTimeout(abandonReadTimeout)
	tx.fc.wp.clearInlineBlobCache(tx.transHandle)
	tx.isAutocommit = tx.fc.isAutocommit
	tx.needBegin = true
	return
}

func newFirebirdsqlTx(fc *firebirdsqlConn, isolationLevel int, isAutocommit bool, withBegin bool) (tx *firebirdsqlTx, err error) {
	tx = new(firebirdsqlTx)
	tx.fc = fc
	tx.isolationLevel = isolationLevel
	tx.isAutocommit = isAutocommit
	tx.needBegin = false

	if withBegin {
		err = tx.begin()

		if err != nil {
			return nil, err
		}

	} else {
		tx.needBegin = true
	}

	return
}
