package idempotency

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/erp-gateway/gateway/shared/calls"
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/record"
)

const (
	// sweepTimeout bounds a sweep, which must not hold the answer back.
	sweepTimeout = time.Second
	// sweepBatch is how many keys a sweep examines.
	sweepBatch = 500
	// DefaultSweepEvery is how often one process sweeps an instance's
	// expired keys, after a keyed write.
	DefaultSweepEvery = 10 * time.Second
	// The part of a keyed write's time kept back from the claim and the
	// calls, to find out why they did not end (probe) and answer so: a
	// tenth of the time, within these bounds.
	reserveMin, reserveMax = 100 * time.Millisecond, time.Second
	// How often, and how far apart, a key found held is probed.
	probeTries = 4
	probePause = 25 * time.Millisecond
)

// What a keyed sequence's run found, besides the outcomes of erp.
type found int

const (
	ran       found = iota // the calls ran and committed with the key
	taken                  // the key is kept already, or was while the claim waited
	outwaited              // the claim and the calls ran into the reserve
	free                   // the probe found the key free (and let it go)
	held                   // the probe found the key held by a transaction that has not ended
)

// Database runs requests' calls (package calls) in an instance's database,
// those under an Idempotency-Key exactly once: what the gateway calls.
type Database struct {
	store      calls.Store
	sweepEvery time.Duration
	mu         sync.Mutex
	sweeps     map[string]*sweep // by instance
}

// sweep is where this process's sweeps of an instance's keys are.
type sweep struct {
	last        time.Time
	scope, from string // the last key examined; "" is the table's start
}

// New keeps keys in store, sweeping each instance's expired keys at most
// every sweepEvery (DefaultSweepEvery when 0) in this process.
func New(store calls.Store, sweepEvery time.Duration) *Database {
	return &Database{store: store, sweepEvery: cmp.Or(sweepEvery, DefaultSweepEvery), sweeps: make(map[string]*sweep)}
}

// Ping is the store's: a breaker's probe.
func (d *Database) Ping(ctx context.Context, t erp.Target, silence time.Duration) error {
	return d.store.Ping(ctx, t, silence)
}

// Describe is the store's Describe with, when keys, what keeps the
// instance from keeping keys (Table), in one reading.
func (d *Database) Describe(ctx context.Context, t erp.Target, names []string, keys bool) (map[string]catalog.Procedure, []catalog.Finding, error) {
	if keys {
		return d.store.Describe(ctx, t, names, Table())
	}
	return d.store.Describe(ctx, t, names)
}

// Run runs q's calls (calls.Run) and returns the answer kept under k when
// it was kept before, with replayed; without k, nil. Under k the key is
// claimed in the calls' own transaction, in a single write's own block
// (block.go), and the answer, answer(), kept in its row before the commit,
// by that block when it can (kept.go), by a statement of its own when not:
// the key and the writes commit together or not at all. A request whose key
// is kept gets the kept answer and runs nothing; one whose key another
// request holds waits a lock timeout for that request's end, then replays or
// runs; held still, erp.ErrKeyInProgress, unless a hunt cancels the holder,
// an orphan of a cut link: then it runs.
func (d *Database) Run(ctx context.Context, t erp.Target, q *calls.Sequence, k *erp.Key, answer func() []byte) (kept []byte, replayed bool, err error) {
	if k == nil {
		return nil, false, calls.Run(ctx, d.store, t, q, nil)
	}
	kp := &keeper{k: *k, answer: answer}
	var out *record.Encoder
	if q.Single {
		out = q.Steps[0].Out
		kp.block = &write{Write: calls.WriteOf(q.Steps[0].Call), keep: t.Connection.CharacterSet() == "UTF8"}
	}
	run := func(ctx context.Context) (found, error) {
		wait, cancel := reserved(ctx)
		defer cancel()
		err := calls.Run(wait, d.store, t, q, kp)
		switch {
		case erp.DuplicateOf(err) == KeyTable:
			return taken, nil
		case errors.Is(err, erp.ErrBusy):
			// It never had a connection: nothing ran, nothing to find out.
			return ran, err
		case err != nil && wait.Err() != nil && ctx.Err() == nil:
			return outwaited, err
		}
		return ran, err
	}
	for attempt := 0; ; attempt++ {
		got, err := run(ctx)
		var unknown error // the run's failure, when its commit was sent
		if got == outwaited {
			if errors.Is(err, erp.ErrOutcomeUnknown) {
				unknown = err
			}
			got, err = d.probe(ctx, t, *k)
			if got == ran && unknown != nil {
				// The probe could not tell, and the commit was sent:
				// its outcome stays unknown, never "nothing written".
				// (Its failure is in the text only: the outcome is
				// what the client acts on.)
				err = fmt.Errorf("%w (the key's probe: %v)", unknown, err)
			}
		}
		switch got {
		case ran:
			// A refused call or a dry run (calls.ErrRollback) keeps
			// nothing; the steps say why.
			if err == nil {
				d.sweepIfDue(ctx, t, k.TTL)
			}
			return nil, false, err
		case free:
			// Nobody holds the key: this request's own calls were slow,
			// and were cancelled with nothing written.
			return nil, false, fmt.Errorf("%w: %w", erp.ErrUnavailable, context.DeadlineExceeded)
		case held:
			return nil, false, fmt.Errorf("%w: %w", erp.ErrKeyInProgress, err)
		}
		fingerprint, kept, ok, expired, err := d.kept(ctx, t, *k)
		switch {
		case err != nil && unknown != nil:
			// Taken, perhaps by this request's own commit, and its answer
			// cannot be read: the outcome stays unknown.
			return nil, false, fmt.Errorf("%w (reading the key: %v)", unknown, err)
		case err != nil:
			return nil, false, err
		case expired && attempt < 2:
			// Kept past its TTL, and removed: run anew.
			continue
		case !ok && attempt < 2 && d.store.Hunt(ctx, t) > 0:
			// Refused as taken, yet its row cannot be seen: a
			// transaction that has not ended holds it. A hunt cancelled
			// orphans of a cut link, one of which may have been it: run
			// anew. A live holder is never cancelled (firebird's Hunt).
			continue
		case !ok:
			return nil, false, fmt.Errorf("%w: its row is held by a transaction that has not ended", erp.ErrKeyInProgress)
		case fingerprint != k.Fingerprint:
			return nil, false, erp.ErrKeyReused
		case bytes.HasPrefix(kept, []byte(keptMark)) && out != nil:
			if err := decode(kept, out); err != nil {
				return nil, false, err
			}
			return out.Finish(), true, nil
		}
		return kept, true, nil
	}
}

// keeper claims a key in a sequence's transaction and keeps its answer
// there (calls.Keeper).
type keeper struct {
	k erp.Key
	// block: a single write's, which claims and, when it can, keeps.
	block  *write
	answer func() []byte
}

func (kp *keeper) claim() []any {
	return []any{kp.k.Scope, kp.k.Key, kp.k.Clave, kp.k.Fingerprint, time.Now().UTC()}
}

func (kp *keeper) Block() (string, func(proc, readBack catalog.Procedure) calls.Parts, []any) {
	return "keyed", kp.block.parts, kp.claim()
}

func (kp *keeper) Claim(ctx context.Context, tx calls.Tx) error {
	return tx.Exec(ctx, claimSQL, kp.claim(), false)
}

func (kp *keeper) Claimed() (calls.Parts, []any) {
	return write{}.parts(catalog.Procedure{}, catalog.Procedure{}), kp.claim()
}

func (kp *keeper) Keep(ctx context.Context, tx calls.Tx, hidden []any) error {
	if kp.block != nil && len(hidden) == 1 && (hidden[0] == nil || hidden[0] == int64(1)) {
		// The block kept the answer: its last row's GATEWAY$KEPT tells of
		// the whole answer; one without rows always fits.
		return nil
	}
	return keep(ctx, tx, kp.k, kp.answer())
}

func (kp *keeper) Own(err error) bool { return erp.DuplicateOf(err) == KeyTable }

// keep stores answer in the key's row by a statement of its own, refusing
// one over KeptMax: the transaction then rolls back, nothing written.
func keep(ctx context.Context, tx calls.Tx, k erp.Key, answer []byte) error {
	if len(answer) > KeptMax {
		return fmt.Errorf("%w: %d bytes, at most %d kept", erp.ErrKeptTooLarge, len(answer), KeptMax)
	}
	keep := keepSQL
	if len(answer) > inlineMax {
		keep = keepLongSQL
	}
	// The keeping is the transaction's last statement (calls.Keeper.Keep).
	return tx.Exec(ctx, keep, []any{answer, k.Scope, k.Key}, true)
}

// reserved is ctx less the reserve of a keyed sequence.
func reserved(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	reserve := min(max(time.Until(deadline)/10, reserveMin), reserveMax)
	return context.WithDeadline(ctx, deadline.Add(-reserve))
}

// probe finds out why a keyed sequence ran into its reserve: it claims the
// key without waiting, in a transaction that is always rolled back. The key
// is taken (committed by another request), held (another request still
// runs), or free (the sequence's own calls were what took the time). The
// sequence's own transaction ends when the server sees its dropped
// connection, a few milliseconds after: until then it holds the key itself,
// so a key held is probed again a few times before it counts as another
// request's.
func (d *Database) probe(ctx context.Context, t erp.Target, k erp.Key) (found, error) {
	for i := 0; ; i++ {
		got, err := d.probeOnce(ctx, t, k)
		if got != held || i == probeTries-1 {
			return got, err
		}
		select {
		case <-ctx.Done():
			return got, err
		case <-time.After(probePause):
		}
	}
}

func (d *Database) probeOnce(ctx context.Context, t erp.Target, k erp.Key) (found, error) {
	got := ran
	err := d.store.Transact(ctx, t, calls.NoWait, nil, func(ctx context.Context, tx calls.Tx) error {
		err := tx.Exec(ctx, claimSQL, []any{k.Scope, k.Key, k.Clave, k.Fingerprint, time.Now().UTC()}, false)
		var exc *erp.Exception
		switch {
		case err == nil:
			got = free
		case erp.DuplicateOf(err) == KeyTable:
			got = taken
		case errors.As(err, &exc) && exc.Locked:
			got = held
		default:
			return err
		}
		if err == nil {
			return calls.ErrRollback
		}
		return fmt.Errorf("%w: %w", calls.ErrRollback, err)
	})
	return got, err
}

// kept reads the key's row, ok when it is there to read. An expired one is
// removed and reported expired, so the key runs anew.
func (d *Database) kept(ctx context.Context, t erp.Target, k erp.Key) (fingerprint string, answer []byte, ok, expired bool, err error) {
	cutoff := time.Now().UTC().Add(-k.TTL)
	err = d.store.Transact(ctx, t, calls.ReadOnly, nil, func(ctx context.Context, tx calls.Tx) error {
		row, err := tx.Row(ctx, keptSQL, []any{cutoff, k.Scope, k.Key})
		if err != nil || row == nil {
			return err
		}
		ok = true
		fingerprint, _ = row[0].(string)
		answer, _ = row[1].([]byte)
		expired = row[2] == int64(1)
		return nil
	})
	if err != nil || !ok {
		return "", nil, false, false, err
	}
	if expired {
		err = d.store.Transact(ctx, t, calls.ReadWrite, nil, func(ctx context.Context, tx calls.Tx) error {
			return tx.Exec(ctx, expireSQL, []any{k.Scope, k.Key, cutoff}, false)
		})
		return "", nil, false, true, err
	}
	return strings.TrimSpace(fingerprint), answer, true, false, nil
}

// sweepIfDue examines a batch of the instance's keys and removes the
// expired among them, at most every sweepEvery in this process, in a short
// transaction of its own; batch after batch, it goes through the whole
// table and starts again. It is best effort: a sweep that fails is tried
// again at the next one.
func (d *Database) sweepIfDue(ctx context.Context, t erp.Target, ttl time.Duration) {
	d.mu.Lock()
	sw := d.sweeps[t.Instance]
	if sw == nil {
		sw = &sweep{}
		d.sweeps[t.Instance] = sw
	}
	due := time.Since(sw.last) >= d.sweepEvery
	from := *sw
	if due {
		sw.last = time.Now()
	}
	d.mu.Unlock()
	if !due {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, sweepTimeout)
	defer cancel()
	cutoff := time.Now().UTC().Add(-ttl)
	var next sweep
	err := d.store.Transact(ctx, t, calls.ReadWrite, nil, func(ctx context.Context, tx calls.Tx) error {
		row, err := tx.Row(ctx, sweepSQL, []any{from.scope, from.from, cutoff, sweepBatch})
		if err != nil || row == nil {
			return err
		}
		next.scope, _ = row[0].(string)
		next.from, _ = row[1].(string)
		if seen, _ := row[2].(int64); seen < sweepBatch {
			next = sweep{} // the end: start again
		}
		return nil
	})
	if err == nil {
		d.mu.Lock()
		sw.scope, sw.from = next.scope, next.from
		d.mu.Unlock()
	}
}

// Kept is a key's row as a DBA reads it (make kept).
type Kept struct {
	Scope, Key, Clave string
	Created           time.Time
	// Answer is the kept answer as the client got it.
	Answer []byte
}

// Show reads the rows kept under key, in every scope, their answers in the
// frame newAnswer gives (the gateway's).
func (d *Database) Show(ctx context.Context, t erp.Target, key string, newAnswer func() *record.Encoder) ([]Kept, error) {
	var rows []Kept
	err := d.store.Transact(ctx, t, calls.ReadOnly, nil, func(ctx context.Context, tx calls.Tx) error {
		// CREATED_AT as its text: UTC digits, where the driver would read
		// them in the connection's time zone.
		return tx.Each(ctx, "SELECT SCOPE, IDEM_KEY, CLAVE, CAST(CREATED_AT AS VARCHAR(24)), COALESCE(ANSWER, ANSWER_LONG) FROM "+KeyTable+" WHERE IDEM_KEY = ? ORDER BY SCOPE", []any{key}, func(v []any) error {
			var k Kept
			k.Scope, _ = v[0].(string)
			k.Key, _ = v[1].(string)
			k.Clave, _ = v[2].(string)
			created, _ := v[3].(string)
			k.Created, _ = time.Parse("2006-01-02 15:04:05.0000", created)
			kept, _ := v[4].([]byte)
			k.Answer = bytes.Clone(kept)
			if bytes.HasPrefix(kept, []byte(keptMark)) {
				out := newAnswer()
				if err := decode(kept, out); err != nil {
					return err
				}
				k.Answer = out.Finish()
			}
			rows = append(rows, k)
			return nil
		})
	})
	return rows, err
}
