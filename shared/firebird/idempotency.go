package firebird

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/nakagami/firebirdsql"

	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/record"
)

// KeyTable is the table idempotency keys are kept in, in the instance's own
// database (README, "Writes that are safe to retry").
const KeyTable = "GATEWAY_IDEMPOTENCY"

// KeyTableSQL is the DDL a DBA runs once to install the table, and the
// grants of user (the gateway's Firebird user, or its role). The gateway
// never runs DDL itself.
func KeyTableSQL(user string) string {
	return strings.NewReplacer("{table}", KeyTable, "{user}", user).Replace(`-- The ERP gateway's idempotency keys (README, "Writes that are safe to retry").
-- Run once with isql as the database's owner or SYSDBA, then set
-- "idempotency": true in the instance's document.
CREATE TABLE {table} (
  SCOPE        VARCHAR(32) CHARACTER SET ASCII NOT NULL,
  IDEM_KEY     VARCHAR(255) CHARACTER SET ASCII NOT NULL,
  CLAVE        VARCHAR(63) CHARACTER SET UTF8 NOT NULL,
  REQUEST_HASH CHAR(64) CHARACTER SET ASCII NOT NULL,
  ANSWER       VARCHAR(8000) CHARACTER SET OCTETS,
  ANSWER_LONG  BLOB SUB_TYPE BINARY,
  CREATED_AT   TIMESTAMP NOT NULL,
  CONSTRAINT PK_{table} PRIMARY KEY (SCOPE, IDEM_KEY)
);
GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {user};
COMMIT;
`)
}

// The statements of a keyed write, prepared once per connection like the
// others.
const (
	// claimSQL claims a key on its own: the probe's (Pools.probe).
	claimSQL = "INSERT INTO " + KeyTable + " (SCOPE, IDEM_KEY, CLAVE, REQUEST_HASH, CREATED_AT) VALUES (?, ?, ?, ?, ?)"
	// An answer the block does not keep is kept as JSON: inline when it
	// fits (a blob costs three more round trips and server work), in a blob
	// when it does not.
	keepSQL     = "UPDATE " + KeyTable + " SET ANSWER = ? WHERE SCOPE = ? AND IDEM_KEY = ?"
	keepLongSQL = "UPDATE " + KeyTable + " SET ANSWER_LONG = ? WHERE SCOPE = ? AND IDEM_KEY = ?"
	inlineMax   = 8000
	keptSQL     = "SELECT REQUEST_HASH, COALESCE(ANSWER, ANSWER_LONG), CREATED_AT FROM " + KeyTable + " WHERE SCOPE = ? AND IDEM_KEY = ?"
	expireSQL   = "DELETE FROM " + KeyTable + " WHERE SCOPE = ? AND IDEM_KEY = ? AND CREATED_AT < ?"
	// sweepSQL examines the next keys after a position, in the primary
	// key's order (the table has no index on time: one would cost every
	// keyed write a page written at its commit, a fifth of the write), and
	// removes the expired among them. Its work is bounded (sweepBatch
	// keys, a few milliseconds, never a long transaction) whatever the table's
	// size; it returns where it stopped, and how many it examined: fewer
	// than the batch, it reached the end.
	sweepSQL = `EXECUTE BLOCK (FROM_SCOPE TYPE OF COLUMN ` + KeyTable + `.SCOPE = ?, FROM_KEY TYPE OF COLUMN ` + KeyTable + `.IDEM_KEY = ?, CUTOFF TIMESTAMP = ?, BATCH INTEGER = ?)
RETURNS (LAST_SCOPE TYPE OF COLUMN ` + KeyTable + `.SCOPE, LAST_KEY TYPE OF COLUMN ` + KeyTable + `.IDEM_KEY, SEEN BIGINT)
AS
DECLARE CREATED TIMESTAMP;
BEGIN
  SEEN = 0;
  LAST_SCOPE = FROM_SCOPE;
  LAST_KEY = FROM_KEY;
  FOR SELECT SCOPE, IDEM_KEY, CREATED_AT FROM ` + KeyTable + ` WHERE SCOPE = :FROM_SCOPE AND IDEM_KEY > :FROM_KEY
      ORDER BY SCOPE, IDEM_KEY ROWS :BATCH INTO :LAST_SCOPE, :LAST_KEY, :CREATED DO
  BEGIN
    SEEN = SEEN + 1;
    IF (CREATED < CUTOFF) THEN DELETE FROM ` + KeyTable + ` WHERE SCOPE = :LAST_SCOPE AND IDEM_KEY = :LAST_KEY;
  END
  IF (SEEN < BATCH) THEN
    FOR SELECT SCOPE, IDEM_KEY, CREATED_AT FROM ` + KeyTable + ` WHERE SCOPE > :FROM_SCOPE
        ORDER BY SCOPE, IDEM_KEY ROWS :BATCH - :SEEN INTO :LAST_SCOPE, :LAST_KEY, :CREATED DO
    BEGIN
      SEEN = SEEN + 1;
      IF (CREATED < CUTOFF) THEN DELETE FROM ` + KeyTable + ` WHERE SCOPE = :LAST_SCOPE AND IDEM_KEY = :LAST_KEY;
    END
  SUSPEND;
END`
)

const (
	// sweepTimeout bounds a sweep, which must not hold the answer back.
	sweepTimeout = time.Second
	// sweepBatch is how many keys a sweep examines.
	sweepBatch = 500
	// The part of a keyed write's time kept back from the claim and the
	// procedure, to find out why they did not end (Pools.probe) and answer
	// so: a tenth of the time, within these bounds.
	reserveMin, reserveMax = 100 * time.Millisecond, time.Second
)

var (
	// errKeyTaken: the key is kept already, or was while the claim waited.
	errKeyTaken = errors.New("the idempotency key is taken")
	// errOutwaited: the claim and the procedure ran into the reserve,
	// waiting for the key's holder or for the procedure itself.
	errOutwaited = errors.New("the keyed write ran into its reserve")
	// errKeyFree: the probe found the key free (and let it go).
	errKeyFree = errors.New("the idempotency key is free")
)

// keyed reports the outcomes of a keyed write's steps that WriteOnce
// resolves itself.
func keyed(err error) bool {
	return errors.Is(err, errKeyTaken) || errors.Is(err, erp.ErrKeyInProgress) || errors.Is(err, errOutwaited) || errors.Is(err, errKeyFree)
}

// WriteOnce is Write under an idempotency key. The key is claimed (a row of
// KeyTable) in the write's own transaction, by the statement that runs the
// procedure and the read-back (session.keyedWrite), and the answer is kept
// in that row before the commit, by that statement when it can (kept.go),
// by one of its own when not: the key and the write commit together or not
// at all. A request whose key is kept gets the kept answer (replay) and
// runs nothing; one whose key another request holds waits for that
// request's end, and then replays or runs; still held when only the reserve
// is left, erp.ErrKeyInProgress.
func (p *Pools) WriteOnce(ctx context.Context, t erp.Target, procedure string, args []any, readBack string, readArgs []any, out *record.Encoder, k erp.Key) (replay []byte, err error) {
	w := keyedCall{procedure: procedure, args: args, readBack: readBack, readArgs: readArgs,
		keep: strings.EqualFold(cmp.Or(t.Connection.Charset, erp.DefaultCharset), "UTF8")}
	for attempt := 0; ; attempt++ {
		err := p.do(ctx, t, txWrite, out, func(ctx context.Context, s *session) error {
			kept, err := s.keyedWrite(ctx, w, k, out)
			if err != nil || kept {
				return err
			}
			answer, keep := k.Answer(), keepSQL
			if len(answer) > inlineMax {
				keep = keepLongSQL
			}
			return s.exec(ctx, keep, []any{answer, k.Scope, k.Key})
		})
		if errors.Is(err, errOutwaited) {
			err = p.probe(ctx, t, k)
		}
		if errors.Is(err, errKeyFree) {
			// Nobody holds the key: this request's own procedure was
			// slow, and was cancelled with nothing written.
			return nil, fmt.Errorf("%w: %w", erp.ErrUnavailable, context.DeadlineExceeded)
		}
		if !errors.Is(err, errKeyTaken) {
			if err == nil {
				p.sweepIfDue(ctx, t, k.TTL)
			}
			return nil, err
		}
		fingerprint, answer, found, err := p.kept(ctx, t, k)
		switch {
		case err != nil:
			return nil, err
		case !found && attempt < 2:
			// Its holder rolled back, or it had expired: run anew.
			continue
		case !found:
			return nil, fmt.Errorf("%w: taken and gone twice", erp.ErrKeyInProgress)
		case fingerprint != k.Fingerprint:
			return nil, erp.ErrKeyReused
		case bytes.HasPrefix(answer, []byte(keptMark)):
			if err := replayKept(answer, out); err != nil {
				return nil, err
			}
			return k.Answer(), nil
		}
		return answer, nil
	}
}

// probe finds out why a keyed write ran into its reserve: it claims the key
// without waiting, in a transaction that is always rolled back. The key is
// taken (committed by another request: errKeyTaken), held (another request
// still runs: erp.ErrKeyInProgress), or free (errKeyFree: the write's own
// procedure was what took the time). The write's own transaction ends when
// the server sees its dropped connection, a few milliseconds after: until
// then it holds the key itself, so a key held is probed again a few times
// before it counts as another request's.
func (p *Pools) probe(ctx context.Context, t erp.Target, k erp.Key) error {
	for i := 0; ; i++ {
		err := p.probeOnce(ctx, t, k)
		if !errors.Is(err, erp.ErrKeyInProgress) || i == probeTries-1 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(probePause):
		}
	}
}

// How often, and how far apart, a key found held is probed.
const (
	probeTries = 4
	probePause = 25 * time.Millisecond
)

func (p *Pools) probeOnce(ctx context.Context, t erp.Target, k erp.Key) error {
	return p.do(ctx, t, txProbe, nil, func(ctx context.Context, s *session) error {
		err := s.exec(ctx, claimSQL, []any{k.Scope, k.Key, k.Clave, k.Fingerprint, time.Now().UTC()})
		switch {
		case err == nil:
			return errKeyFree
		case claimRefused(err, firebirdsql.ISCUniqueKeyViolation):
			return fmt.Errorf("%w: %w", errKeyTaken, err)
		case isLockConflict(err):
			return fmt.Errorf("%w: %w", erp.ErrKeyInProgress, err)
		}
		return err
	})
}

func isLockConflict(err error) bool {
	var fb *firebirdsql.FbError
	return errors.As(err, &fb) && hasCode(fb, []int{firebirdsql.ISCLockConflict, firebirdsql.ISCDeadlock})
}

// kept reads the key's row. An expired one is removed and reported not
// found, so the key runs anew.
func (p *Pools) kept(ctx context.Context, t erp.Target, k erp.Key) (fingerprint string, answer []byte, found bool, err error) {
	var created time.Time
	err = p.do(ctx, t, txRead, nil, func(ctx context.Context, s *session) error {
		row, err := s.row(ctx, keptSQL, []any{k.Scope, k.Key})
		if err != nil || row == nil {
			return err
		}
		found = true
		fingerprint, _ = row[0].(string)
		answer, _ = row[1].([]byte)
		created, _ = row[2].(time.Time)
		return nil
	})
	if err != nil || !found {
		return "", nil, false, err
	}
	cutoff := time.Now().UTC().Add(-k.TTL)
	if created.Before(cutoff) {
		err = p.do(ctx, t, txWrite, nil, func(ctx context.Context, s *session) error {
			return s.exec(ctx, expireSQL, []any{k.Scope, k.Key, cutoff})
		})
		return "", nil, false, err
	}
	return strings.TrimSpace(fingerprint), answer, true, nil
}

// sweepIfDue examines a batch of the instance's keys and removes the
// expired among them, at most every Options.KeySweepEvery in this process, in a short
// transaction of its own; batch after batch, it goes through the whole
// table and starts again. It is best effort: a sweep that fails is tried
// again at the next one.
func (p *Pools) sweepIfDue(ctx context.Context, t erp.Target, ttl time.Duration) {
	p.mu.Lock()
	cur, ok := p.pools[t.Instance]
	due := ok && time.Since(cur.swept) >= p.opts.KeySweepEvery
	var from sweepPosition
	if due {
		cur.swept, from = time.Now(), cur.sweepFrom
	}
	p.mu.Unlock()
	if !due {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, sweepTimeout)
	defer cancel()
	cutoff := time.Now().UTC().Add(-ttl)
	var next sweepPosition
	err := p.do(ctx, t, txWrite, nil, func(ctx context.Context, s *session) error {
		row, err := s.row(ctx, sweepSQL, []any{from.scope, from.key, cutoff, sweepBatch})
		if err != nil || row == nil {
			return err
		}
		next.scope, _ = row[0].(string)
		next.key, _ = row[1].(string)
		if seen, _ := row[2].(int64); seen < sweepBatch {
			next = sweepPosition{} // the end: start again
		}
		return nil
	})
	if err == nil {
		p.mu.Lock()
		cur.sweepFrom = next
		p.mu.Unlock()
	}
}

// sweepPosition is the last key a sweep examined; the zero value is the
// table's start.
type sweepPosition struct{ scope, key string }

// row runs query and returns its first row, nil when there is none.
func (s *session) row(ctx context.Context, query string, args []any) ([]driver.Value, error) {
	rows, err := s.open(ctx, query, args)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	vals := make([]driver.Value, len(rows.Columns()))
	switch err := rows.Next(vals); {
	case errors.Is(err, io.EOF):
		return nil, nil
	case err != nil:
		return nil, s.failed(ctx, query, err)
	}
	return vals, nil
}

// CheckKeyTable says what keeps the gateway's user from keeping idempotency
// keys in cfg's database: the table missing, a column missing, a privilege
// not granted (to the user, its role or PUBLIC). Nothing when all is there.
func CheckKeyTable(ctx context.Context, cfg erp.Connection) (problems []string, err error) {
	err = reading(ctx, cfg, func(tx *sql.Tx) error {
		problems, err = checkKeyTable(ctx, tx)
		return err
	})
	return problems, err
}

func checkKeyTable(ctx context.Context, tx *sql.Tx) ([]string, error) {
	columns, err := column(ctx, tx, `SELECT TRIM(RDB$FIELD_NAME) FROM RDB$RELATION_FIELDS WHERE RDB$RELATION_NAME = ?`, KeyTable)
	if err != nil {
		return nil, err
	}
	if len(columns) == 0 {
		return []string{KeyTable + " does not exist: a DBA installs it with what make idempotency-sql prints"}, nil
	}
	var problems []string
	for _, c := range []string{"SCOPE", "IDEM_KEY", "CLAVE", "REQUEST_HASH", "ANSWER", "ANSWER_LONG", "CREATED_AT"} {
		if !slices.Contains(columns, c) {
			problems = append(problems, fmt.Sprintf("%s has no column %s: it is not the table make idempotency-sql prints", KeyTable, c))
		}
	}
	granted, err := column(ctx, tx, `SELECT TRIM(RDB$PRIVILEGE) FROM RDB$USER_PRIVILEGES
		WHERE RDB$RELATION_NAME = ? AND (RDB$USER = CURRENT_USER OR RDB$USER = CURRENT_ROLE OR RDB$USER = 'PUBLIC')`, KeyTable)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, p := range []struct{ letter, name string }{{"S", "SELECT"}, {"I", "INSERT"}, {"U", "UPDATE"}, {"D", "DELETE"}} {
		if !slices.Contains(granted, p.letter) {
			missing = append(missing, p.name)
		}
	}
	if len(missing) > 0 {
		user, err := column(ctx, tx, `SELECT TRIM(CURRENT_USER) FROM RDB$DATABASE`)
		if err != nil {
			return nil, err
		}
		problems = append(problems, fmt.Sprintf("%s may not be used by %s: GRANT %s ON %s TO %s", KeyTable, user[0], strings.Join(missing, ", "), KeyTable, user[0]))
	}
	return problems, nil
}
