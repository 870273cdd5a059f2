package idempotency

import (
	"bytes"
	"cmp"
	"context"
	"database/sql/driver"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/firebird"
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
	// procedure, to find out why they did not end (probe) and answer so: a
	// tenth of the time, within these bounds.
	reserveMin, reserveMax = 100 * time.Millisecond, time.Second
	// How often, and how far apart, a key found held is probed.
	probeTries = 4
	probePause = 25 * time.Millisecond
)

// What a keyed write's steps found, besides the outcomes of erp.
type found int

const (
	ran       found = iota // the write ran and committed with its key
	taken                  // the key is kept already, or was while the claim waited
	outwaited              // the claim and the procedure ran into the reserve
	free                   // the probe found the key free (and let it go)
	held                   // the probe found the key held by a transaction that has not ended
)

// Database is the instance's pools with writes kept under keys: what the
// gateway calls.
type Database struct {
	*firebird.Pools
	sweepEvery time.Duration
	mu         sync.Mutex
	sweeps     map[string]*sweep // by instance
}

// sweep is where this process's sweeps of an instance's keys are.
type sweep struct {
	last        time.Time
	scope, from string // the last key examined; "" is the table's start
}

// New keeps keys over pools, sweeping each instance's expired keys at most
// every sweepEvery (DefaultSweepEvery when 0) in this process.
func New(pools *firebird.Pools, sweepEvery time.Duration) *Database {
	return &Database{Pools: pools, sweepEvery: cmp.Or(sweepEvery, DefaultSweepEvery), sweeps: make(map[string]*sweep)}
}

// Describe is firebird.Pools.Describe with what keeps the gateway's user
// from cancelling its orphans (firebird.OrphanGrant) and, when keys, from
// keeping keys (Table), in one reading.
func (d *Database) Describe(ctx context.Context, t erp.Target, names []string, keys bool) (map[string]catalog.Procedure, []catalog.Finding, error) {
	tables := []firebird.Table{firebird.OrphanGrant()}
	if keys {
		tables = append(tables, Table())
	}
	return d.Pools.Describe(ctx, t, names, tables...)
}

// WriteOnce is Write under the key k; it returns the answer, the one kept
// before when replayed. The key is claimed (a row of KeyTable) in the
// write's own transaction, by the statement that runs the procedure and
// the read-back (block.go), and the answer is kept in that row before the
// commit, by that statement when it can (kept.go), by one of its own when
// not: the key and the write commit together or not at all. A request
// whose key is kept gets the kept answer and runs nothing; one whose key
// another request holds waits for that request's end, and then replays or
// runs; still held when only the reserve is left, erp.ErrKeyInProgress.
func (d *Database) WriteOnce(ctx context.Context, t erp.Target, fw firebird.Write, out *record.Encoder, k erp.Key) (answer []byte, replayed bool, err error) {
	w := write{Write: fw, keep: strings.EqualFold(cmp.Or(t.Connection.Charset, erp.DefaultCharset), "UTF8")}
	return d.once(ctx, t, k, out, func(ctx context.Context) (found, error) { return d.write(ctx, t, w, k, out) }, out.Finish)
}

// BatchOnce runs body, a batch's calls, in one read-write transaction with
// the key k claimed first and answer() kept under it before the commit: the
// batch and its key commit together or not at all, and a replay answers the
// whole batch as it was first answered. A body that returns an error (a
// call refused: firebird.ErrRollback) keeps nothing; the error is returned.
// The claim and the keeping cost a round trip each.
func (d *Database) BatchOnce(ctx context.Context, t erp.Target, k erp.Key, body func(context.Context, *firebird.Session) error, answer func() []byte) ([]byte, bool, error) {
	run := func(ctx context.Context) (found, error) {
		got := ran
		err := d.Transact(ctx, t, firebird.ReadWrite, nil, func(ctx context.Context, s *firebird.Session) error {
			wait, cancel := reserved(ctx)
			defer cancel()
			err := s.Exec(wait, claimSQL, []any{k.Scope, k.Key, k.Clave, k.Fingerprint, time.Now().UTC()})
			if g, err, done := claimed(ctx, wait, err); done {
				got = g
				return err
			}
			if err := body(ctx, s); err != nil {
				return err
			}
			return keep(ctx, s, k, answer())
		})
		return got, err
	}
	return d.once(ctx, t, k, nil, run, answer)
}

// once runs run, which claims k, until the key's answer is known: run's
// own (answer()), or the one kept before, decoded into out when it was
// kept in the block's form.
func (d *Database) once(ctx context.Context, t erp.Target, k erp.Key, out *record.Encoder, run func(context.Context) (found, error), answer func() []byte) ([]byte, bool, error) {
	for attempt := 0; ; attempt++ {
		got, err := run(ctx)
		if got == outwaited {
			got, err = d.probe(ctx, t, k)
		}
		switch got {
		case ran:
			if err == nil {
				d.sweepIfDue(ctx, t, k.TTL)
				return answer(), false, nil
			}
			return nil, false, err
		case free:
			// Nobody holds the key: this request's own procedure was
			// slow, and was cancelled with nothing written.
			return nil, false, fmt.Errorf("%w: %w", erp.ErrUnavailable, context.DeadlineExceeded)
		case held:
			return nil, false, fmt.Errorf("%w: %w", erp.ErrKeyInProgress, err)
		}
		fingerprint, kept, ok, expired, err := d.kept(ctx, t, k)
		switch {
		case err != nil:
			return nil, false, err
		case expired && attempt < 2:
			// Kept past its TTL, and removed: run anew.
			continue
		case !ok && attempt < 2 && d.Hunt(ctx, t) > 0:
			// Refused as taken, yet its row cannot be seen: a
			// transaction that has not ended holds it. A hunt cancelled
			// orphans of a cut link, one of which may have been it: run
			// anew. A live holder is never cancelled (firebird.Hunt).
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

// write claims k and runs w in one transaction, encoding the read-back's
// rows into out and keeping the answer. The claim inserts the key's row; a
// row another transaction inserted and has not ended holds its lock, and
// the insert waits for that transaction, which either commits (the key is
// taken) or rolls back (the key is ours). The block may take the call's
// time less a reserve, in which to find out what it was waiting for
// (probe).
func (d *Database) write(ctx context.Context, t erp.Target, w write, k erp.Key, out *record.Encoder) (found, error) {
	got := ran
	claim := []any{k.Scope, k.Key, k.Clave, k.Fingerprint, time.Now().UTC()}
	err := d.Transact(ctx, t, firebird.ReadWrite, out, func(ctx context.Context, s *firebird.Session) error {
		wait, cancel := reserved(ctx)
		defer cancel()
		last, err := s.Write(wait, "keyed", w.Write, func(proc, rb catalog.Procedure) firebird.WriteParts {
			return w.parts(proc, rb)
		}, claim, out)
		if g, err, done := claimed(ctx, wait, err); done {
			got = g
			return err
		}
		switch {
		case len(last) == 1 && (last[0] == nil || last[0] == int64(1)):
			// The block kept the answer: its last row's GATEWAY$KEPT
			// tells of the whole answer; one without rows always fits.
			return nil
		}
		return keep(ctx, s, k, out.Finish())
	})
	return got, err
}

// keep stores answer in the key's row by a statement of its own, refusing
// one over KeptMax: the transaction then rolls back, nothing written.
func keep(ctx context.Context, s *firebird.Session, k erp.Key, answer []byte) error {
	if len(answer) > KeptMax {
		return fmt.Errorf("%w: %d bytes, at most %d kept", erp.ErrKeptTooLarge, len(answer), KeptMax)
	}
	keep := keepSQL
	if len(answer) > inlineMax {
		keep = keepLongSQL
	}
	return s.Exec(ctx, keep, []any{answer, k.Scope, k.Key})
}

// claimed reads err, what the statement that claims a key (alone or in a
// write's block) returned, run with wait (reserved): the key taken
// already, the claim still waiting at the reserve, another failure (done),
// or the key claimed (not done).
func claimed(ctx, wait context.Context, err error) (got found, _ error, done bool) {
	switch {
	case firebird.Duplicate(err, KeyTable):
		return taken, firebird.ErrRollback, true
	case err != nil && wait.Err() != nil && ctx.Err() == nil:
		return outwaited, firebird.ErrRollback, true
	case err != nil:
		return ran, err, true
	}
	return ran, nil, false
}

// reserved is ctx less the reserve of a keyed write's block.
func reserved(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	reserve := min(max(time.Until(deadline)/10, reserveMin), reserveMax)
	return context.WithDeadline(ctx, deadline.Add(-reserve))
}

// probe finds out why a keyed write ran into its reserve: it claims the key
// without waiting, in a transaction that is always rolled back. The key is
// taken (committed by another request), held (another request still runs),
// or free (the write's own procedure was what took the time). The write's
// own transaction ends when the server sees its dropped connection, a few
// milliseconds after: until then it holds the key itself, so a key held is
// probed again a few times before it counts as another request's.
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
	err := d.Transact(ctx, t, firebird.NoWait, nil, func(ctx context.Context, s *firebird.Session) error {
		err := s.Exec(ctx, claimSQL, []any{k.Scope, k.Key, k.Clave, k.Fingerprint, time.Now().UTC()})
		switch {
		case err == nil:
			got = free
		case firebird.Duplicate(err, KeyTable):
			got = taken
		case firebird.LockConflict(err):
			got = held
		default:
			return err
		}
		if err == nil {
			return firebird.ErrRollback
		}
		return fmt.Errorf("%w: %w", firebird.ErrRollback, err)
	})
	return got, err
}

// kept reads the key's row, ok when it is there to read. An expired one is
// removed and reported expired, so the key runs anew.
func (d *Database) kept(ctx context.Context, t erp.Target, k erp.Key) (fingerprint string, answer []byte, ok, expired bool, err error) {
	var created time.Time
	err = d.Transact(ctx, t, firebird.ReadOnly, nil, func(ctx context.Context, s *firebird.Session) error {
		row, err := s.Row(ctx, keptSQL, []any{k.Scope, k.Key})
		if err != nil || row == nil {
			return err
		}
		ok = true
		fingerprint, _ = row[0].(string)
		answer, _ = row[1].([]byte)
		created, _ = row[2].(time.Time)
		return nil
	})
	if err != nil || !ok {
		return "", nil, false, false, err
	}
	cutoff := time.Now().UTC().Add(-k.TTL)
	if created.Before(cutoff) {
		err = d.Transact(ctx, t, firebird.ReadWrite, nil, func(ctx context.Context, s *firebird.Session) error {
			return s.Exec(ctx, expireSQL, []any{k.Scope, k.Key, cutoff})
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
	err := d.Transact(ctx, t, firebird.ReadWrite, nil, func(ctx context.Context, s *firebird.Session) error {
		row, err := s.Row(ctx, sweepSQL, []any{from.scope, from.from, cutoff, sweepBatch})
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
	err := d.Transact(ctx, t, firebird.ReadOnly, nil, func(ctx context.Context, s *firebird.Session) error {
		return s.Each(ctx, "SELECT SCOPE, IDEM_KEY, CLAVE, CREATED_AT, COALESCE(ANSWER, ANSWER_LONG) FROM "+KeyTable+" WHERE IDEM_KEY = ? ORDER BY SCOPE", []any{key}, func(v []driver.Value) error {
			var k Kept
			k.Scope, _ = v[0].(string)
			k.Key, _ = v[1].(string)
			k.Clave, _ = v[2].(string)
			k.Created, _ = v[3].(time.Time)
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
