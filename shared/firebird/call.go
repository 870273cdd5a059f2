package firebird

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nakagami/firebirdsql"

	"github.com/erp-gateway/gateway/shared/calls"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/record"
	"github.com/erp-gateway/gateway/shared/tally"
)

// How long a call may outlive its context: the driver closes the socket of
// a read that op_cancel did not end after hardDropGrace (the DSN's
// cancel_hard_drop_grace), so a call normally returns within that;
// abandonGrace is the backstop for every other path (wire.watch).
const (
	hardDropGrace = 200 * time.Millisecond
	abandonGrace  = 300 * time.Millisecond
	// idlePing bounds the check of a connection idle longer than
	// Options.ConnMaxIdle; a flow the network dropped silently fails it.
	idlePing = time.Second
)

// phase is how far a call got, which decides what its failure means.
type phase int32

const (
	connecting phase = iota // acquiring, checking, beginning: the procedure has not run
	preparing               // preparing a statement: the procedure has not run
	executing               // the procedure runs or ran; nothing is committed
	committing              // a write's commit was sent: until it answers, its outcome is unknown
)

// Read runs a selectable procedure in the session's transaction and encodes
// its rows into out, its BLOBs in the row where they fit (read.go).
func (s *Session) Read(ctx context.Context, procedure string, args []any, out *record.Encoder) error {
	query, err := s.readQuery(ctx, procedure, len(args))
	if err == nil {
		_, err = s.Query(ctx, query, args, out, 0, false)
		if err != nil && query != selectSQL(procedure, len(args)) && phase(s.at.Load()) == preparing && s.conn.IsValid() {
			out.Reset()
			_, err = s.Query(ctx, s.plainAgain(procedure, len(args)), args, out, 0, false)
		}
	}
	return s.outcome(ctx, err)
}

// Ping makes one round trip to the instance's database on a connection of
// its pool, connecting first when the pool's are dead: a breaker's probe.
// It fails once the database has been silent for silence while the probe
// waits on it (a frozen server, a dropped link), not when a slow link
// makes a connect's round trips add up past it; ctx bounds the whole.
func (p *Pools) Ping(ctx context.Context, t erp.Target, silence time.Duration) error {
	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	quiet := time.AfterFunc(silence, func() {
		cancel(fmt.Errorf("the database was silent for %s: %w", silence, context.DeadlineExceeded))
	})
	defer quiet.Stop()
	pctx = erp.WithHearing(pctx, func() { quiet.Reset(silence) })
	return p.Transact(pctx, t, calls.ReadOnly, nil, func(ctx context.Context, tx calls.Tx) error {
		return tx.(*Session).fc.Ping(ctx)
	})
}

// Transact runs body in a transaction of mode on one of the instance's
// connections, committed when body returns nil (a ReadOnly one is ended
// with the connection's next request: see conn.call), and returns what
// failed as the domain's outcomes (classify).
// A call that finds its connection dead before a commit was sent is retried
// once on a fresh pool: nothing of it can have been committed. One that gave
// up waiting for a lock (lockWait) hunts for orphans, and runs again when the
// hunt cancelled one (the lock's holder may have been it) and its deadline
// leaves room for another wait; else it answers erp.ErrLocked at once, and
// its client retries (nothing was written). Waiting on, up to the deadline,
// would hold a live holder's rows no better, and a keyed write would give
// its key up between tries anyway. A call that ran out of its deadline is
// never retried. A call on the write path first hunts for orphans when one
// is due (huntDue).
func (p *Pools) Transact(ctx context.Context, t erp.Target, mode calls.Mode, out *record.Encoder, body func(context.Context, calls.Tx) error) error {
	reruns, again := 0, false
	for attempt := 0; ; attempt++ {
		cur, err := p.get(t)
		if err != nil {
			return err
		}
		if mode != calls.ReadOnly && p.huntDue(t, cur, mode) {
			p.Hunt(ctx, t)
		}
		if out != nil {
			out.Reset()
		}
		var at atomic.Int32
		err = cur.run(ctx, p.opts, mode, &at, body)
		if err == nil {
			return nil
		}
		// Past a spill the answer is on its way: never retried, and its
		// caller only needs the cause, for its log.
		if ownVerdict(err) || (out != nil && out.Spilled()) {
			return err
		}
		if lockWaited(err) && p.Hunt(ctx, t) > 0 && reruns < maxLockReruns && roomForAWait(ctx) {
			reruns++
			continue
		}
		if errors.Is(err, calls.ErrRunAgain) && !again {
			// A block learnt that it must run otherwise (a read-back that
			// answers rows, a document its calls one by one).
			again = true
			continue
		}
		ph := phase(at.Load())
		// A pool whose database changed (versionQuery) is replaced before
		// anything ran (pool.verify); the new one checks none in its first
		// StmtMaxAge.
		if errors.Is(err, errChanged) || attempt == 0 && ctx.Err() == nil && ph < committing && connectionLost(ctx, err) {
			p.discard(t.Instance, cur)
			continue
		}
		return classify(ctx, ph, err)
	}
}

// maxLockReruns bounds the tries of a call after its lock waits: each may
// wait a lock timeout.
const maxLockReruns = 2

// roomForAWait reports whether ctx leaves time for another lock wait and an
// answer after it.
func roomForAWait(ctx context.Context) bool {
	deadline, ok := ctx.Deadline()
	return !ok || time.Until(deadline) > lockWaitMax+500*time.Millisecond
}

// run takes a connection from the pool for one call, one that may still
// serve (pool.outdated), and has the database's version checked first when
// it is due (pool.verify).
func (cur *pool) run(ctx context.Context, opts Options, mode calls.Mode, at *atomic.Int32, body func(context.Context, calls.Tx) error) error {
	checked := func(ctx context.Context, tx calls.Tx) error {
		if err := cur.verify(ctx, tx.(*Session), opts.StmtMaxAge); err != nil {
			return err
		}
		return body(ctx, tx)
	}
	for {
		err := cur.once(ctx, func(c *conn) error {
			if cur.outdated(c, opts.StmtMaxAge) {
				c.broken = true // database/sql closes it, and hands out another
				return errRetired
			}
			return c.call(ctx, opts, mode, at, checked)
		})
		if !errors.Is(err, errRetired) {
			return err
		}
	}
}

// errRetired: the connection taken may no longer serve; another is taken.
var errRetired = errors.New("firebird: connection retired")

// once runs use on one connection of the pool, and counts its round trips,
// the connection's attachment included when use is its first.
func (cur *pool) once(ctx context.Context, use func(*conn) error) error {
	full := cur.full()
	sc, err := cur.db.Conn(ctx)
	if err != nil {
		if ctx.Err() != nil && (full || cur.full()) {
			// It waited for a connection other calls held (when it
			// came, or when its time was up: a burst queues behind the
			// calls ahead of it), and the database may be serving them
			// well.
			return fmt.Errorf("%w: %w", erp.ErrBusy, context.Cause(ctx))
		}
		return err
	}
	defer sc.Close() // back to the pool, or closed if the call left it broken
	return sc.Raw(func(dc any) error {
		c, ok := dc.(*conn)
		if !ok {
			return fmt.Errorf("firebird: pool connection of type %T", dc)
		}
		release := c.wire.watch(ctx)
		defer func() {
			if release() {
				c.broken = true
			}
			tally.AddN(ctx, tally.RoundTrips, c.newTrips())
		}()
		return use(c)
	})
}

// full reports whether every connection the pool may open is taken
// (connecting ones included).
func (cur *pool) full() bool {
	st := cur.db.Stats()
	return st.MaxOpenConnections > 0 && st.InUse >= st.MaxOpenConnections
}

// call runs body on the connection and leaves no transaction of consequence
// behind, on every path.
//
// Reads run in the connection's read transaction, READ COMMITTED READ ONLY,
// which Firebird 3 starts pre-committed: it holds back neither the oldest
// active transaction nor garbage collection, and each statement in it sees
// what is committed when it starts. Each call ends it with its rollback
// deferred (endReadLater): the rollback goes with the connection's next
// request, and the next read's begin with its execute, so a read costs no
// round trip for either, and no read sees what another kept in its
// transaction.
//
// Writes end the read transaction, then run in a READ COMMITTED WAIT
// transaction of their own, committed or rolled back before call returns.
// When the wire is in an unknown state the connection is marked broken
// instead: the pool drops its socket and the server rolls back.
func (c *conn) call(ctx context.Context, opts Options, mode calls.Mode, at *atomic.Int32, body func(context.Context, calls.Tx) error) error {
	fc, err := c.fb()
	if err != nil {
		return err
	}
	defer func() { c.used = time.Now() }()
	if since(c.used) > opts.ConnMaxIdle {
		if err := c.ping(ctx, fc); err != nil {
			return err
		}
	}
	s := &Session{conn: c, fc: fc, at: at}
	if mode == calls.ReadOnly {
		// The read transaction begins with the first statement
		// (Session.prepare): a ping needs none, and a connection that
		// only writes (the execute function's) then never has one to end
		// before each write.
		s.reads = true
		err := body(ctx, s)
		if err != nil {
			c.settle(ctx, fc, err)
		}
		c.endReadLater()
		return err
	}

	if err := c.endRead(); err != nil {
		return err
	}
	tx, err := fc.BeginTx(ctx, txOptions(mode))
	if err != nil {
		c.settle(ctx, fc, err)
		return err
	}
	if err := body(ctx, s); err != nil {
		if c.settle(ctx, fc, err) && tx.Rollback() != nil {
			c.broken = true
		}
		return err
	}
	if mode == calls.Snapshot {
		if err := tx.Rollback(); err != nil {
			c.broken = true
		}
		return nil
	}
	at.Store(int32(committing))
	sent := time.Now()
	if err := tx.Commit(); err != nil {
		// The driver rolled back a commit the database refused; any
		// other failure leaves the wire in a state nobody knows.
		var refused *firebirdsql.CommitError
		if !errors.As(err, &refused) || !fc.IsValid() {
			c.broken = true
		}
		// A commit trigger's write can wait for a lock, as a statement's:
		// answered alike, whichever way the commit went.
		return waited(err, time.Since(sent))
	}
	return nil
}

// endReadLater ends the read transaction of a call that read, its rollback
// sent with the connection's next request (the driver's RollbackLater; for
// a read-only transaction a rollback is a commit no ON TRANSACTION COMMIT
// trigger can refuse): that request runs in a transaction of its own,
// which sees nothing the read kept for its transaction (the rows of a
// global temporary table ON COMMIT DELETE ROWS, its USER_TRANSACTION
// context), where a read transaction kept between calls let a read see an
// earlier one's, another token's too. Until then the server keeps it, pre-committed and read-only:
// it holds nothing back. The driver begins the next one with its first
// execute; a new statement's prepare, which needs a transaction begun,
// begins it in a round trip of its own, once per statement and connection.
func (c *conn) endReadLater() {
	if c.read == nil || c.broken {
		return
	}
	later, ok := c.read.(interface{ RollbackLater() error })
	if !ok {
		c.endRead() //nolint:errcheck // a failure marks the connection broken
		return
	}
	if err := later.RollbackLater(); err != nil {
		c.broken = true
	}
}

// endRead ends the connection's read transaction, if any. Rollback rather
// than Commit: for a read-only transaction they end it alike, no commit
// trigger can refuse a rollback, and the driver bounds Commit by the
// context of the call that began it, long gone.
func (c *conn) endRead() error {
	if c.read == nil {
		return nil
	}
	tx := c.read
	c.read = nil
	if err := tx.Rollback(); err != nil {
		c.broken = true
		return fmt.Errorf("ending the read transaction: %w: %w", err, driver.ErrBadConn)
	}
	return nil
}

// txOptions: READ COMMITTED, but SNAPSHOT READ ONLY for a batch of reads,
// which must see one moment (Mode says why each).
func txOptions(mode calls.Mode) driver.TxOptions {
	switch mode {
	case calls.ReadOnly:
		return driver.TxOptions{Isolation: driver.IsolationLevel(sql.LevelReadCommitted), ReadOnly: true}
	case calls.NoWait:
		return driver.TxOptions{Isolation: driver.IsolationLevel(firebirdsql.LevelReadCommittedNoWait)}
	case calls.Snapshot:
		return driver.TxOptions{Isolation: driver.IsolationLevel(sql.LevelRepeatableRead), ReadOnly: true}
	}
	return driver.TxOptions{Isolation: driver.IsolationLevel(sql.LevelReadCommitted)}
}

// ping checks a connection that sat idle long enough for the network to have
// dropped its flow.
func (c *conn) ping(ctx context.Context, fc driverConn) error {
	pctx, cancel := context.WithTimeout(ctx, idlePing)
	defer cancel()
	if err := fc.Ping(pctx); err != nil {
		c.broken = true
		if ctx.Err() == nil {
			// The caller's time is not up: a lost connection, retried.
			return fmt.Errorf("idle connection failed its check: %w: %w", err, driver.ErrBadConn)
		}
		return err
	}
	return nil
}

// settle judges the connection after err and reports whether it can still
// talk: not when the deadline passed or the wire is out of step. An answer
// over its limits stopped on our side, with the wire in step.
func (c *conn) settle(ctx context.Context, fc driverConn, err error) bool {
	if ctx.Err() != nil || !fc.IsValid() || connectionLost(ctx, err) && !ownVerdict(err) {
		c.broken = true
	}
	return !c.broken
}

// ownVerdict reports an error that is the call's own verdict, not the
// driver's: an answer over its limits, a body's rollback, or a fault a body
// returns born coded (erp.ErrKeptTooLarge, say). It is returned as it is,
// never retried, and says nothing of the connection.
func ownVerdict(err error) bool {
	return overLimit(err) || errors.Is(err, calls.ErrRollback) || erp.FaultOf(err) != nil
}

// overLimit reports an answer refused for its size or row count.
func overLimit(err error) bool {
	return errors.Is(err, erp.ErrTooManyRows) || errors.Is(err, erp.ErrAnswerTooLarge)
}
