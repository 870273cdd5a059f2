package firebird

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nakagami/firebirdsql"

	"github.com/erp-gateway/gateway/shared/calls"
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/tally"
)

// Orphans. A NAT or firewall that loses a flow drops its packets silently:
// neither end hears that the other went away, and Firebird keeps a vanished
// client's attachment, its transaction and its locks until TCP gives up (the
// keepalive's two hours, or fifteen minutes of retransmissions). Such a
// transaction pins the oldest active transaction for the whole ERP, and
// whoever touches its rows waits on it.
//
// So every attachment the gateway opens says so on the server: the driver's
// client_version, which lands in MON$ATTACHMENTS.MON$CLIENT_VERSION and costs
// no round trip, is the marker "erp-gateway orphan-after=<s> conn=<id>".
// A transaction of such an attachment that could hold anything (any but a
// read-only READ COMMITTED one, which Firebird 3 starts pre-committed) and
// is older than <s> seconds has outlived every deadline its process gives a
// call: it is an orphan by construction. An attachment this process gave up
// with its wire in an unknown state (a deadline, a lost connection) is one
// too, whatever its age: the next call to that database cancels it by <id>.
// The gateway's user may cancel attachments of its own (DELETE FROM
// MON$ATTACHMENTS, with GRANT DELETE ON MON$ATTACHMENTS); the server then
// rolls their transactions back at once. It never touches an attachment
// without the marker, even one of the same user.
//
// A hunt is one statement in a transaction of its own (a MON$ snapshot is
// frozen for its transaction's life), so it runs only where there is a
// reason: an attachment this process abandoned, a statement that gave up on
// a lock (lockWait), a key refused as taken whose row cannot be seen
// (package idempotency), and once per StmtMaxAge on the write path.

const (
	// orphanMargin is added to the longest call to make the bound: a call
	// ends within its deadline and half a second (wire.watch), whatever
	// the server does.
	orphanMargin = 5 * time.Second
	// lockTimeout is how long a statement of a WAIT transaction waits for
	// a record lock (the driver's lock_timeout, patch 0001): the server
	// counts it in whole seconds of its clock, and looks at that clock
	// when its wait wakes, so a wait lasts between lockTimeout-1s and
	// lockWaitMax (measured on Firebird 3.0.11: 1.56 to 2.99 s). A failure
	// after waiting that long is a lockWait.
	lockTimeout = 2 * time.Second
	lockWaitMax = lockTimeout + time.Second
	// lockWaitFloor: a conflict that took at least this long came from a
	// wait the lock timeout ended (it lasts more than lockTimeout-1s); a
	// conflict with a committed row comes back in milliseconds.
	lockWaitFloor = lockTimeout - time.Second
	// huntSpacing: hunts of one instance share the latest one's result for
	// this long, so a burst of symptoms costs the server one hunt.
	huntSpacing = time.Second
	// huntTimeout bounds a hunt, which must not hold its caller back long.
	huntTimeout = 2 * time.Second
	// abandonedMax bounds the attachments remembered per instance.
	abandonedMax = 64
	// markerPrefix starts every marker (marker).
	markerPrefix = "erp-gateway orphan-after="
)

// marker is what an attachment of ours carries as its client_version: its
// bound in whole seconds, and its id.
func marker(bound time.Duration, id string) string {
	return fmt.Sprintf("%s%d conn=%s", markerPrefix, int(math.Ceil(bound.Seconds())), id)
}

// newConnID is an attachment's id in its marker: 16 hex digits.
func newConnID() string {
	b := make([]byte, 8)
	rand.Read(b) //nolint:errcheck // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// attachDSN is DSN with what every attachment of ours adds: its marker, and
// the lock timeout of its WAIT transactions.
func attachDSN(c erp.Connection, bound time.Duration, id string) string {
	q := url.Values{}
	q.Set("client_version", marker(bound, id))
	q.Set("lock_timeout", fmt.Sprint(int(lockTimeout/time.Second)))
	return DSN(c) + "&" + q.Encode()
}

// Active is true of a row t of MON$TRANSACTIONS that the server still
// holds active. MON$ shows each attachment as it last described itself, and
// Firebird 3 has it describe itself again only on its next call: one
// described while it committed, idle in its pool since, still shows the
// transaction it ended. A transaction is active only if it is not older
// than the oldest active one the server finds for a transaction begun now
// (that one's MON$OLDEST_ACTIVE, not taken from the descriptions). An older
// active transaction of anyone's holds that back and makes every one count.
const Active = `t.MON$TRANSACTION_ID >= (SELECT o.MON$OLDEST_ACTIVE FROM MON$TRANSACTIONS o WHERE o.MON$TRANSACTION_ID = CURRENT_TRANSACTION)`

// huntSQL cancels the orphans among the attachments of the user's own that
// carry a marker, and returns each: its id, the age of its oldest active
// transaction that could hold anything (NULL: none), its bound, and
// whether this process abandoned it (one of the ids in ABANDONED). The
// marker's pattern is checked before its bound is read, and Firebird's
// SIMILAR TO takes a hyphen only in brackets. Its 64-bit integers are of
// system domains: a database in SQL dialect 1 refuses the word BIGINT.
const huntSQL = `EXECUTE BLOCK (ABANDONED VARCHAR(2000) CHARACTER SET ASCII = ?)
RETURNS (ATTACHMENT_ID TYPE OF RDB$ATTACHMENT_ID, TX_AGE_MS TYPE OF RDB$COUNTER, BOUND_S INTEGER, ABANDONED_HERE SMALLINT)
AS
DECLARE MARK VARCHAR(255);
BEGIN
  FOR SELECT a.MON$ATTACHMENT_ID, a.MON$CLIENT_VERSION,
        (SELECT DATEDIFF(MILLISECOND FROM MIN(t.MON$TIMESTAMP) TO CURRENT_TIMESTAMP) FROM MON$TRANSACTIONS t
          WHERE t.MON$ATTACHMENT_ID = a.MON$ATTACHMENT_ID AND NOT (t.MON$READ_ONLY = 1 AND t.MON$ISOLATION_MODE IN (2, 3))
            AND ` + Active + `)
      FROM MON$ATTACHMENTS a
      WHERE a.MON$ATTACHMENT_ID <> CURRENT_CONNECTION
        AND a.MON$CLIENT_VERSION SIMILAR TO 'erp[-]gateway orphan[-]after=[0-9]{1,6} conn=[0-9a-f]{16}'
      INTO :ATTACHMENT_ID, :MARK, :TX_AGE_MS
  DO BEGIN
    BOUND_S = CAST(SUBSTRING(MARK FROM 26 FOR POSITION(' ', MARK, 26) - 26) AS INTEGER);
    ABANDONED_HERE = IIF(POSITION(RIGHT(MARK, 16) IN :ABANDONED) > 0, 1, 0);
    IF (ABANDONED_HERE = 1 OR TX_AGE_MS > BOUND_S * 1000) THEN
    BEGIN
      DELETE FROM MON$ATTACHMENTS WHERE MON$ATTACHMENT_ID = :ATTACHMENT_ID;
      SUSPEND;
    END
  END
END`

// OrphanGrant is the privilege that lets the gateway's user cancel its
// orphans, as the doctor and the health check hold it: nothing fails without
// it, but a cut link's locks stay.
func OrphanGrant() catalog.Table {
	return catalog.Table{Name: "MON$ATTACHMENTS", Privileges: []string{"DELETE"}, Finding: catalog.OrphansFinding,
		Cost: "without it the gateway cannot cancel the attachments a cut link leaves behind, which keep their transactions and locks until the server's TCP keepalive gives up (about 2 hours)"}
}

// Orphan is an attachment a hunt cancelled.
type Orphan struct {
	Attachment int64
	// Age is its oldest transaction's that could hold anything; zero when
	// it had none.
	Age time.Duration
	// Bound is the age past which its process's calls have all ended.
	Bound time.Duration
	// Abandoned: this process gave it up with its wire in an unknown state.
	Abandoned bool
}

// Why is why it was judged an orphan, for the log.
func (o Orphan) Why() string {
	if o.Abandoned {
		return "this process gave it up with its wire in an unknown state (a deadline or a lost connection)"
	}
	return fmt.Sprintf("a transaction open for %s, past its process's %s bound on any call", o.Age.Round(time.Millisecond), o.Bound)
}

// hunting is what the pools know of an instance's orphans.
type hunting struct {
	mu sync.Mutex
	// abandoned are the ids of attachments given up since the last hunt.
	abandoned []string
	// last is when the last hunt began, and cancelled what it cancelled;
	// running is closed when the hunt under way ends.
	last      time.Time
	cancelled int
	running   chan struct{}
}

func (p *Pools) hunting(instance string) *hunting {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.hunts[instance]
	if h == nil {
		h = &hunting{}
		p.hunts[instance] = h
	}
	return h
}

// abandon remembers an attachment of instance given up with its wire in an
// unknown state, to be cancelled by the next call.
func (p *Pools) abandon(instance, id string) {
	h := p.hunting(instance)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.remember(append(h.abandoned, id))
}

// remember keeps the newest abandonedMax of ids, oldest first, as the ids
// the next hunt cancels: more would not fit the hunt's parameter, and fail
// every hunt after. h.mu is held.
func (h *hunting) remember(ids []string) {
	h.abandoned = ids[max(0, len(ids)-abandonedMax):]
}

// Hunt cancels the orphans of ours on the instance's database and reports
// how many the latest hunt cancelled: hunts of one instance share one
// result for huntSpacing, and run one at a time. A hunt that fails (the
// grant missing, the database out of reach) counts none.
func (p *Pools) Hunt(ctx context.Context, t erp.Target) int {
	h := p.hunting(t.Instance)
	h.mu.Lock()
	for h.running != nil {
		running := h.running
		h.mu.Unlock()
		select {
		case <-running:
		case <-ctx.Done():
			return 0
		}
		h.mu.Lock()
	}
	if since(h.last) < huntSpacing && len(h.abandoned) == 0 {
		defer h.mu.Unlock()
		return h.cancelled
	}
	ids := h.abandoned
	h.abandoned, h.last, h.running = nil, time.Now(), make(chan struct{})
	h.mu.Unlock()

	found, err := p.huntOnce(ctx, t, ids)

	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil && !errors.Is(err, errHuntRefused) {
		// Not run: the ids wait for the next hunt.
		h.remember(append(ids, h.abandoned...))
	}
	h.cancelled = len(found)
	close(h.running)
	h.running = nil
	return h.cancelled
}

// errHuntRefused: the gateway's user may not cancel attachments.
var errHuntRefused = errors.New("firebird: DELETE ON MON$ATTACHMENTS is not granted")

// huntOnce runs one hunt on a connection of the instance's pool, in a
// transaction of its own, and logs what it cancelled.
func (p *Pools) huntOnce(ctx context.Context, t erp.Target, abandoned []string) ([]Orphan, error) {
	cur, err := p.get(t)
	if err != nil {
		return nil, err
	}
	if cur.refused() {
		return nil, errHuntRefused
	}
	ctx, cancel := context.WithTimeout(ctx, huntTimeout)
	defer cancel()
	var found []Orphan
	var at atomic.Int32
	err = cur.once(ctx, func(c *conn) error {
		return c.call(ctx, p.opts, calls.NoWait, &at, func(ctx context.Context, tx calls.Tx) error {
			return tx.Each(ctx, huntSQL, []any{strings.Join(abandoned, " ")}, func(v []any) error {
				var o Orphan
				o.Attachment, _ = v[0].(int64)
				age, _ := v[1].(int64)
				bound, _ := v[2].(int64)
				o.Age, o.Bound = time.Duration(age)*time.Millisecond, time.Duration(bound)*time.Second
				o.Abandoned = v[3] == int64(1)
				found = append(found, o)
				return nil
			})
		})
	})
	for _, o := range found {
		p.opts.Log.WarnContext(ctx, "orphaned attachment cancelled", "instance", t.Instance, "attachment_id", o.Attachment,
			"transaction_age_ms", o.Age.Milliseconds(), "why", o.Why())
	}
	tally.AddN(ctx, tally.OrphansCancelled, int64(len(found)))
	var fb *firebirdsql.FbError
	switch {
	case errors.As(err, &fb) && slices.Contains(fb.GDSCodes, firebirdsql.ISCNoPriv):
		if cur.refuse() {
			p.opts.Log.WarnContext(ctx, "orphaned attachments cannot be cancelled: a link cut mid-write holds its locks until the server's TCP keepalive gives up",
				"instance", t.Instance, "grant", "GRANT DELETE ON MON$ATTACHMENTS TO USER "+strings.ToUpper(t.Connection.User))
		}
		return found, errHuntRefused
	case err != nil:
		p.opts.Log.DebugContext(ctx, "hunting orphans failed", "instance", t.Instance, "err", err)
	}
	return found, err
}

// huntDue reports whether a call of mode on the instance's pool cur should
// be preceded by a hunt: on the write path only (reads hold nothing and must
// not pay for it), when attachments this process abandoned wait to be
// cancelled, or every StmtMaxAge, with the pool's own check of its
// procedures.
func (p *Pools) huntDue(t erp.Target, cur *pool, mode calls.Mode) bool {
	if mode == calls.ReadOnly || cur.refused() {
		return false
	}
	h := p.hunting(t.Instance)
	h.mu.Lock()
	pending := len(h.abandoned) > 0
	h.mu.Unlock()
	if pending {
		return true
	}
	cur.mu.Lock()
	defer cur.mu.Unlock()
	if since(cur.hunted) < p.opts.StmtMaxAge {
		return false
	}
	cur.hunted = time.Now()
	return true
}

// refused reports whether the pool's user was found unable to cancel
// attachments: the pool is replaced when its user's grants change
// (pool.verify), and the new one tries again.
func (cur *pool) refused() bool {
	cur.mu.Lock()
	defer cur.mu.Unlock()
	return cur.huntRefused
}

// refuse notes the refusal; it reports whether it is news.
func (cur *pool) refuse() bool {
	cur.mu.Lock()
	defer cur.mu.Unlock()
	was := cur.huntRefused
	cur.huntRefused = true
	return !was
}

// lockWait is a statement's failure after it waited for a record lock as
// long as the lock timeout allows: the lock's holder has not ended, a live
// transaction or an orphan. The database's text reads as a refusal of the
// call (a duplicate key, an update conflict); it is not one.
type lockWait struct{ err error }

func (e *lockWait) Error() string { return "gave up waiting for a record lock: " + e.err.Error() }
func (e *lockWait) Unwrap() error { return e.err }

// DuplicateOf names the table of a key another transaction inserted and has
// not ended (erp.DuplicateOf): an idempotency key's claim tells it so.
func (e *lockWait) DuplicateOf() string {
	var fb *firebirdsql.FbError
	if errors.As(e.err, &fb) {
		return exception(fb, e.err).Duplicate
	}
	return ""
}

// conflictCodes are the status vector's codes of a statement that met a
// record another transaction holds or wrote: what a lock wait ends with.
var conflictCodes = []int{
	firebirdsql.ISCUniqueKeyViolation, firebirdsql.ISCDeadlock, firebirdsql.ISCLockConflict,
	firebirdsql.ISCLockTimeout, firebirdsql.ISCUpdateConflict,
}

// waited wraps err, a statement's failure after took, as a lockWait when it
// is a conflict that came only after the lock timeout.
func waited(err error, took time.Duration) error {
	var fb *firebirdsql.FbError
	if took < lockWaitFloor || !errors.As(err, &fb) || !hasCode(fb, conflictCodes) {
		return err
	}
	return &lockWait{err}
}

// lockWaited reports err as a statement that gave up waiting for a record
// lock (lockWait).
func lockWaited(err error) bool {
	var lw *lockWait
	return errors.As(err, &lw)
}
