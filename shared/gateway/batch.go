package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/record"
)

// A batch is a JSON array of ordinary requests, run in one transaction and
// answered by an array with one element per call, each in the single
// call's shape (README, "Batches"). On execute its calls run in order in
// one read-write transaction, committed only when every one succeeded; on
// executequery they are reads in one snapshot, each answering on its own.

// batchOperation is the Operation a batch is counted under in the metrics.
const batchOperation = "batch"

// step is one call of a batch and how it went.
type step struct {
	call catalog.Call
	out  *record.Encoder
	// Set by the run: the database's refusal of the call, or the
	// reference that found nothing; ran: it ran (and succeeded).
	refused *erp.Exception
	missing string
	ran     bool
	// started: it was sent to the database (ran or not).
	started bool
}

// batch validates a batch sent to endpoint, runs it and answers it.
func (h *Handler) batch(r *http.Request, c caller, endpoint catalog.Endpoint, body []byte) outcome {
	calls, at, bad := h.catalog.ParseBatch(endpoint, body, h.cfg.BatchMax, func(op *catalog.Operation) *erp.Error {
		return c.grant.Allow(op.Clave, op.Endpoint == catalog.Execute)
	})
	var key string
	var dry bool
	if bad == nil {
		key, dry, bad = writeHeaders(r, c, endpoint)
	}
	if bad == nil && key != "" && !writes(calls) {
		bad = erp.Refuse(erp.CodeKeyDryRun, "a batch with no write keeps nothing under an Idempotency-Key: send it without the header, or to executequery")
	}
	var o outcome
	if bad != nil {
		o = refusalOf(bad)
		if at >= 0 {
			o.body = append(o.body[:len(o.body)-1], fmt.Sprintf(`,"index":%d}`, at)...)
		}
	} else {
		o = h.runBatch(r.Context(), c, endpoint, calls, key, dry)
		if dry && o.status == http.StatusOK {
			o.preferenceApplied = "tx=rollback"
		}
	}
	o.clave = batchOperation
	o.claves = make([]string, len(calls))
	for i, call := range calls {
		o.claves[i] = call.Op.Clave
	}
	return o
}

// writeHeaders reads what a request's headers ask of its writes: its
// Idempotency-Key (idempotencyKey) and a dry run (Prefer: tx=rollback, on
// execute), refusing both at once: nothing would be kept under the key.
func writeHeaders(r *http.Request, c caller, endpoint catalog.Endpoint) (key string, dry bool, bad *erp.Error) {
	key, bad = idempotencyKey(r, c, endpoint)
	if endpoint == catalog.Execute && bad == nil {
		dry, bad = txPreference(r.Header.Values("Prefer"))
	}
	if bad == nil && dry && key != "" {
		bad = erp.Refuse(erp.CodeKeyDryRun, "a dry run (Prefer: tx=rollback) keeps nothing under an Idempotency-Key: send it without the header, or without the preference")
	}
	return key, dry, bad
}

// txPreference reads what Prefer headers (RFC 7240: comma-separated
// preferences, each a token, optionally = a value, quoted or not, and
// parameters after ";"; the first of a name counts) ask of a write's
// transaction: tx=rollback is a dry run, tx=commit the default, in any
// case. Any other value of tx is refused: a client that asked for a dry run
// must never get a commit for a spelling this service does not know.
func txPreference(prefer []string) (dry bool, bad *erp.Error) {
	for _, header := range prefer {
		for _, pref := range strings.Split(header, ",") {
			name, value, _ := strings.Cut(strings.TrimSpace(strings.SplitN(pref, ";", 2)[0]), "=")
			if !strings.EqualFold(strings.TrimSpace(name), "tx") {
				continue
			}
			switch value = strings.Trim(strings.TrimSpace(value), `"`); {
			case strings.EqualFold(value, "rollback"):
				return true, nil
			case strings.EqualFold(value, "commit"):
				return false, nil
			}
			return false, erp.Refuse(erp.CodePreferInvalid, "Prefer: tx takes commit or rollback (a dry run), not %q; nothing was run", Loggable(value))
		}
	}
	return false, nil
}

// runBatch runs the calls under the instance's breaker, in one transaction
// bounded by Config.BatchTimeout, and answers them.
func (h *Handler) runBatch(ctx context.Context, c caller, endpoint catalog.Endpoint, calls []catalog.Call, key string, dry bool) outcome {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.BatchTimeout)
	defer cancel()
	steps := make([]step, len(calls))
	for i, call := range calls {
		steps[i] = step{call: call, out: NewAnswer(record.Limits{MaxRows: call.Op.MaxRows, MaxBytes: h.cfg.MaxAnswer})}
		steps[i].out.KeepFirst()
	}
	// A batch with no write reads in a snapshot that is always rolled
	// back, on either endpoint: a read procedure with side effects writes
	// nothing, whatever the token.
	mode := firebird.Snapshot
	if writes(calls) {
		mode = firebird.ReadWrite
	}
	body := func(ctx context.Context, s *firebird.Session) error {
		return h.steps(ctx, s, steps, endpoint == catalog.Execute, dry)
	}
	var answer []byte
	var replayed bool
	t := c.target
	run := func(t erp.Target) error {
		if key == "" {
			return h.db.Transact(ctx, t, mode, nil, body)
		}
		k := erp.Key{Scope: c.grant.TokenID, Key: key, Clave: batchOperation, Fingerprint: fingerprint(calls), TTL: h.cfg.KeyTTL}
		var err error
		answer, replayed, err = h.db.BatchOnce(ctx, t, k, body, func() []byte { return batchAnswer(h, steps, endpoint == catalog.Execute) })
		return err
	}
	_, err := h.breaker(ctx, t, func(context.Context) error {
		return h.againIfRotated(ctx, t, run(t), run)
	})
	switch {
	case err == nil || errors.Is(err, firebird.ErrRollback):
		if answer == nil {
			answer = batchAnswer(h, steps, endpoint == catalog.Execute)
		}
		o := outcome{status: http.StatusOK, body: answer, replayed: replayed}
		for _, st := range steps {
			o.refusedByDB = o.refusedByDB || !st.ran
		}
		return o
	}
	return h.batchFailure(ctx, t, steps, err, key != "")
}

// steps runs each step in s in order. On execute (write) a call the
// database refuses ends the batch: its transaction is rolled back. On
// executequery each read answers on its own. A dry run ends in a
// rollback. A reference that finds nothing ends the batch either way.
func (h *Handler) steps(ctx context.Context, s *firebird.Session, steps []step, write, dry bool) error {
	for i := range steps { // a retried transaction starts over
		steps[i].out.Reset()
		steps[i].refused, steps[i].missing, steps[i].ran, steps[i].started = nil, "", false, false
	}
	size := 2
	for i := range steps {
		st := &steps[i]
		call, missing := resolve(st.call, steps)
		if missing != "" {
			st.missing = missing
			return firebird.ErrRollback
		}
		st.started = true
		err := h.step(ctx, s, call, st.out)
		exc, refused := firebird.Refusal(ctx, err)
		switch {
		case err == nil:
			st.ran = true
		case !refused: // the database out of reach or of time, an answer over its limits
			return fmt.Errorf("call %d of the batch (%s): %w", i, call.Op.Clave, err)
		default:
			st.refused = exc
			if write {
				return firebird.ErrRollback
			}
		}
		if size += len(st.out.Finish()) + 1; size > h.cfg.MaxAnswer {
			return fmt.Errorf("the batch's answer: %w", record.ErrTooLarge)
		}
	}
	if dry {
		return firebird.ErrRollback
	}
	return nil
}

// step runs one call in s.
func (h *Handler) step(ctx context.Context, s *firebird.Session, call catalog.Call, out *record.Encoder) error {
	op := call.Op
	if op.Endpoint == catalog.ExecuteQuery {
		return s.Read(ctx, op.Procedure, call.Args, out)
	}
	_, err := s.Write(ctx, "write", writeOf(call), nil, nil, out)
	return err
}

// resolve is call with its references filled in from the first rows of the
// earlier steps' answers, or what a reference did not find.
func resolve(call catalog.Call, steps []step) (catalog.Call, string) {
	if len(call.Refs) == 0 {
		return call, ""
	}
	args := append([]any(nil), call.Args...)
	for _, ref := range call.Refs {
		from := steps[ref.From]
		v, ok := from.out.First(ref.Field)
		if !ok || !from.ran {
			what := "no column " + ref.Field
			if from.out.Rows() == 0 || !from.ran {
				what = "no row"
			}
			return call, fmt.Sprintf("%s takes %s of the first row of call %d's answer, which has %s", call.Op.Params[ref.Param].Name, ref.Field, ref.From, what)
		}
		args[ref.Param] = v
	}
	call.Args = args
	return call, ""
}

// writes reports whether any of calls is a write.
func writes(calls []catalog.Call) bool {
	for _, c := range calls {
		if c.Op.Endpoint == catalog.Execute {
			return true
		}
	}
	return false
}

// fingerprint identifies a batch: its calls', in order.
func fingerprint(calls []catalog.Call) string {
	h := sha256.New()
	for _, c := range calls {
		fmt.Fprintf(h, "%s\n", c.Fingerprint())
	}
	return hex.EncodeToString(h.Sum(nil))
}

// batchAnswer is the batch's answer: an array of each call's. A batch on
// execute fails as a whole at its first refused call, one on executequery
// only at a reference that found nothing: then no element carries data.
func batchAnswer(h *Handler, steps []step, write bool) []byte {
	failed := -1
	for i, st := range steps {
		if st.missing != "" || write && st.refused != nil {
			failed = i
			break
		}
	}
	b := []byte{'['}
	for i, st := range steps {
		if i > 0 {
			b = append(b, ',')
		}
		switch {
		case i == failed && st.missing != "":
			b = append(b, RefusalBody(erp.CodeReferenceMissing, fmt.Sprintf("call %d of the batch: %s; nothing of the batch was written", i, st.missing))...)
		case st.refused != nil && (i == failed || failed < 0):
			b = append(b, h.exception(st.refused).body...)
		case failed >= 0 && (st.ran || st.refused != nil):
			b = append(b, RefusalBody(erp.CodeRolledBack, fmt.Sprintf("call %d of the batch was refused: this call ran and was rolled back; nothing of the batch was written", failed))...)
		case failed >= 0:
			b = append(b, RefusalBody(erp.CodeNotRun, fmt.Sprintf("call %d of the batch was refused: this call did not run; nothing of the batch was written", failed))...)
		default:
			b = append(b, st.out.Finish()...)
		}
	}
	return append(b, ']')
}

// batchFailure answers a batch that failed as a whole: the database out of
// reach or of time, a commit never confirmed, an answer over the limits.
func (h *Handler) batchFailure(ctx context.Context, t erp.Target, steps []step, err error, keyed bool) outcome {
	var paused *pausedError
	f := erp.FaultOf(err)
	switch code := codeOf(err); code {
	case erp.CodePaused:
		errors.As(err, &paused)
		return h.pausedAnswer(t, paused, "; nothing of the batch was written")
	case erp.CodeKeyReused:
		return refusal(code, "this Idempotency-Key was sent before with another request; nothing was written; "+f.Advice)
	case erp.CodeKeyInProgress:
		o := refusal(code, "a request with this Idempotency-Key is still running; "+f.Advice)
		o.retryAfter = time.Second
		return o
	case erp.CodeTooManyRows, erp.CodeAnswerTooLarge:
		if errors.Is(err, erp.ErrKeptTooLarge) {
			return refusal(code, fmt.Sprintf("the batch's answer cannot be kept under an Idempotency-Key (%s); nothing of the batch was written; %s", err, f.Advice))
		}
		return refusal(code, fmt.Sprintf("the batch's answer would pass its limits (%s); nothing of the batch was written; ask for fewer rows or send fewer calls", err))
	case erp.CodeOutcomeUnknown:
		h.log.ErrorContext(ctx, "batch outcome unknown", "instance", t.Instance, "err", err)
		if keyed {
			return refusal(code, "the database of instance "+t.Instance+" did not confirm the batch: send it again with the same Idempotency-Key, which answers what happened")
		}
		return refusal(code, "the database of instance "+t.Instance+" did not confirm the batch: it may or may not have been written, whole; "+f.Advice)
	case erp.CodeUnavailable:
		h.log.WarnContext(ctx, "database unavailable for a batch", "instance", t.Instance, "err", err)
		if errors.Is(err, erp.ErrLocked) {
			where := failingCall(steps)
			if where != "" {
				where = " (" + where + ")"
			}
			o := refusal(code, fmt.Sprintf("the database of instance %s could not run the batch%s: records it writes are locked by another transaction that has not ended; nothing of the batch was written; %s", t.Instance, where, f.Advice))
			o.retryAfter = time.Second
			return o
		}
		if errors.Is(err, erp.ErrCannotRun) {
			return refusal(code, fmt.Sprintf("the database of instance %s cannot run the batch right now (%s); nothing of the batch was written; %s", t.Instance, failing(steps), f.Advice))
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return refusal(code, fmt.Sprintf("the database of instance %s did not run the batch within %s; nothing of the batch was written; %s", t.Instance, h.cfg.BatchTimeout, f.Advice))
		}
		return refusal(code, "the database of instance "+t.Instance+" is not reachable right now; nothing of the batch was written; "+f.Advice)
	}
	h.log.ErrorContext(ctx, "batch failed", "instance", t.Instance, "err", err)
	return refusal(erp.CodeInternal, "internal error")
}

// failing names the call of a batch that was running when it failed, as one
// the database cannot run.
func failing(steps []step) string {
	if at := failingCall(steps); at != "" {
		return at + ": its procedure is missing, changed or not granted"
	}
	return "its procedures are missing, changed or not granted"
}

// failingCall names the call of a batch that was running when it failed; ""
// when none was.
func failingCall(steps []step) string {
	for i := len(steps) - 1; i >= 0; i-- {
		if st := steps[i]; st.started && !st.ran && st.refused == nil {
			return fmt.Sprintf("call %d, CLAVE %s", i, st.call.Op.Clave)
		}
	}
	return ""
}
