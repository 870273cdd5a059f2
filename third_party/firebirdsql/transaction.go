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
)

type firebirdsqlTx struct {
	fc             *firebirdsqlConn
	isolationLevel int
	isAutocommit   bool
	transHandle    int32
	needBegin      bool
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
	default:
		return nil, ErrInvalidIsolationLevel
	}
}

// withLockTimeout adds isc_tpb_lock_timeout to the TPB of a WAIT
// transaction (Firebird 2.0 and later): a record lock another transaction
// holds is then waited for at most seconds, and the statement fails as it
// would under NO WAIT instead of waiting for that transaction to end. The
// server counts the wait in whole seconds of its clock, so it lasts between
// seconds-1 and seconds. NO WAIT transactions and seconds <= 0 (wait as long
// as it takes) keep their TPB as it is.
func withLockTimeout(tpb []byte, seconds int32) []byte {
	if seconds <= 0 || !bytes.Contains(tpb, []byte{byte(isc_tpb_wait)}) {
		return tpb
	}
	return append(tpb, byte(isc_tpb_lock_timeout), 4, byte(seconds), byte(seconds>>8), byte(seconds>>16), byte(seconds>>24))
}

func (tx *firebirdsqlTx) begin() (err error) {
	tpb, err := tpbForIsolationLevel(tx.isolationLevel)
	if err != nil {
		return err
	}
	tpb = withLockTimeout(tpb, tx.fc.lockTimeout)
	err = tx.fc.wp.opTransaction(tpb)
	if err != nil {
		return
	}
	tx.transHandle, _, _, err = tx.fc.wp.opResponse()
	if err != nil {
		return
	}
	tx.needBegin = false
	tx.fc.transactionSet[tx] = struct{}{}
	return
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
// the commit on the server is then unknown.
func (tx *firebirdsqlTx) Commit() (err error) {
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
	tx.fc.wp.clearInlineBlobCache(tx.transHandle)
	tx.isAutocommit = tx.fc.isAutocommit
	tx.needBegin = true
	return
}

// Rollback keeps its fixed teardown bound instead of the BeginTx context:
// database/sql rolls back precisely when that context has ended.
func (tx *firebirdsqlTx) Rollback() (err error) {
	tx.ctx = nil
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
