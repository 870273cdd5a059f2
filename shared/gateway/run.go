package gateway

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/erp-gateway/gateway/shared/calls"
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/record"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// batchOperation is the Operation a batch is counted under in the metrics,
// and the CLAVE its Idempotency-Key is kept under.
const batchOperation = "batch"

// sequence is a request's calls as package calls runs them: one answered
// alone, or a batch answered by an array. A read alone streams its answer
// to st once it passes Config.StreamAbove.
func (h *Handler) sequence(cs []catalog.Call, single, execute, dry bool) *calls.Sequence {
	q := &calls.Sequence{Single: single, Execute: execute, Dry: dry, MaxAnswer: h.cfg.MaxAnswer, Steps: make([]calls.Step, len(cs))}
	for i, call := range cs {
		q.Steps[i] = calls.Step{Call: call, Out: NewAnswer(record.Limits{MaxRows: call.Op.MaxRows, MaxBytes: h.cfg.MaxAnswer})}
		if !single {
			q.Steps[i].Out.KeepFirst() // a batch's references read it
		}
	}
	return q
}

// run runs q under the instance's breaker, under the Idempotency-Key key
// when not "" (in the caller's scope), and answers it. A read alone streams
// to st, when not nil, once its answer passes Config.StreamAbove.
func (h *Handler) run(ctx context.Context, c caller, q *calls.Sequence, key string, st *stream) outcome {
	timeout := h.cfg.Timeout
	if !q.Single {
		timeout = h.cfg.BatchTimeout
	}
	if st != nil {
		// The driver arms each round trip with the context's deadline:
		// the stream's, so that its fetches get it. Until the answer
		// starts streaming the call's own bound holds, by a timer that
		// cancels the call with DeadlineExceeded as its cause.
		st.deadline = time.Now().Add(h.cfg.StreamTimeout)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, st.deadline)
		defer cancel()
		var expire context.CancelCauseFunc
		ctx, expire = context.WithCancelCause(ctx)
		defer expire(nil)
		first := time.AfterFunc(timeout, func() { expire(context.DeadlineExceeded) })
		defer first.Stop()
		// A streamed answer has no size limit of ours; one sent whole
		// never passes StreamAbove.
		out := NewAnswer(record.Limits{MaxRows: q.Steps[0].Call.Op.MaxRows})
		q.Steps[0].Out = out
		out.SpillTo(record.Spill{Above: h.cfg.StreamAbove, Chunk: streamChunk, To: func(p []byte) error {
			first.Stop()
			return st.write(p)
		}})
	} else {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var k *erp.Key
	if key != "" {
		k = &erp.Key{Scope: c.grant.TokenID, Key: key, Clave: batchOperation, Fingerprint: q.Fingerprint(), TTL: h.cfg.KeyTTL}
		if q.Single {
			k.Clave = q.Steps[0].Call.Op.Clave
		}
	}
	var kept []byte
	var replayed bool
	began := time.Now()
	tripped, err := h.guarded(ctx, c.target, func(ctx context.Context, t erp.Target) error {
		var err error
		kept, replayed, err = h.db.Run(ctx, t, q, k, func() []byte { return h.encode(q) })
		// Once its answer streams, a call's failure says nothing of the
		// database (a slow client, the stream's deadline): it never opens
		// the breaker.
		if err != nil && st != nil && st.begun.Load() {
			return &cutError{err}
		}
		return err
	})
	took := time.Since(began)
	var o outcome
	switch {
	case st != nil && st.stop(err != nil):
		o = h.streamed(ctx, c.target, q, st, err)
	case err == nil || errors.Is(err, calls.ErrRollback):
		o = outcome{status: http.StatusOK, body: kept, replayed: replayed}
		if kept == nil {
			o.body = h.encode(q)
		}
		for _, s := range q.Steps {
			o.refusedByDB = o.refusedByDB || s.Refused != nil || (!q.Single && !s.Ran)
		}
		if q.Dry {
			o.preferenceApplied = "tx=rollback"
		}
	default:
		o = h.refuse(ctx, c.target, subjectOf(q, k != nil), err)
	}
	o.dbTime, o.tripped = took, tripped
	return o
}

// encode is q's answer: its call's, or a batch's array.
func (h *Handler) encode(q *calls.Sequence) []byte {
	if q.Single {
		if exc := q.Steps[0].Refused; exc != nil {
			return h.exception(exc)
		}
		return q.Steps[0].Out.Finish()
	}
	return h.batchAnswer(q)
}

// streamed ends an answer that started streaming: whole, or cut. A cut
// cannot change the status any more: the stream is aborted, and ServeHTTP
// leaves the body unended.
func (h *Handler) streamed(ctx context.Context, t erp.Target, q *calls.Sequence, st *stream, err error) outcome {
	var cut *cutError
	if errors.As(err, &cut) {
		err = cut.err
	}
	if err == nil && q.Single && q.Steps[0].Refused != nil {
		// The procedure refused after rows had left: its answer can no
		// longer say so, and must not end as if whole.
		err = q.Steps[0].Refused
	}
	if err == nil {
		err = st.finish(h.encode(q))
	}
	o := outcome{status: http.StatusOK, streamed: true}
	if err != nil {
		st.abort()
		o.cut = err
		h.log.WarnContext(ctx, "streamed answer cut", "instance", t.Instance, "clave", q.Steps[0].Call.Op.Clave, "err", err)
	}
	return o
}

// cutError is a call that failed after its answer started streaming. It
// says nothing of the database: the client may have gone, or the stream
// outlived its deadline.
type cutError struct{ err error }

func (e *cutError) Error() string { return "streamed answer cut: " + e.err.Error() }

// guarded runs call under the instance's breaker, and once more with
// refreshed settings when the database refused the credentials the instance
// document holds (a rotated password).
func (h *Handler) guarded(ctx context.Context, t erp.Target, call func(context.Context, erp.Target) error) (tripped bool, err error) {
	return h.breaker(ctx, t, func(ctx context.Context) error {
		err := call(ctx, t)
		if !errors.Is(err, erp.ErrCredentials) {
			return err
		}
		if fresh, ok := h.refreshed(ctx, t); ok {
			h.log.InfoContext(ctx, "credentials refused; retrying with refreshed settings", "instance", t.Instance)
			t.Connection = fresh.Connection
			return call(ctx, t)
		}
		return err
	})
}

// breaker runs call unless the instance's breaker is open (a *pausedError),
// and tells the breaker how it went. When the breaker lets a probe through,
// the probe (one round trip, and a connect when the pool has no live
// connection) goes first: a database that answers it closes the breaker and
// the call runs; one that stays silent for the breaker's ProbeSilence keeps
// it open, and the call is refused without running. Silence, not the
// probe's length, is what fails it: over a slow link a connect's round
// trips add up past the bound, and a probe bounded by its length would
// never close the breaker there, though calls would be served.
func (h *Handler) breaker(ctx context.Context, t erp.Target, call func(context.Context) error) (tripped bool, err error) {
	tk, ok, wait := h.breakers.allow(t.Instance)
	if !ok {
		return false, &pausedError{wait: wait}
	}
	if tk.probe {
		began := time.Now()
		err := h.db.Ping(ctx, t, h.breakers.cfg.ProbeSilence)
		// A database that answered the probe with a refusal of its own
		// (credentials, say) is up: the call runs and meets it. Of a
		// failed probe, hung and refused alike keep the breaker open, so
		// the silence stands in for the bound verdict weighs time against.
		if v := h.verdict(err, time.Since(began), h.breakers.cfg.ProbeSilence); err != nil && (v != answered || ctx.Err() != nil) {
			if v == answered { // the request's own time ran out: no verdict, another probe soon
				v = refused
			}
			h.breakers.done(t.Instance, tk, v)
			h.log.DebugContext(ctx, "breaker probe failed", "instance", t.Instance, "err", err)
			return false, &pausedError{wait: h.breakers.cfg.CoolDown}
		}
		h.breakers.done(t.Instance, tk, answered)
		tk = ticket{}
	}
	v := hung // a panic below counts as a failure
	began := time.Now()
	defer func() {
		if tripped = h.breakers.done(t.Instance, tk, v); tripped {
			h.log.WarnContext(ctx, "breaker opened: calls to the instance paused", "instance", t.Instance)
		}
	}()
	// When the database last spoke to the call before its bound ran out,
	// in Unix nanoseconds: what it says after (a cancel's answer) is not
	// the call's. The bound is the sooner of the call's deadline and the
	// time the verdict weighs it against.
	bound := began.Add(h.cfg.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(bound) {
		bound = d
	}
	var lastWord atomic.Int64
	err = call(erp.WithHearing(ctx, func() {
		if now := time.Now(); now.Before(bound) {
			lastWord.Store(now.UnixNano())
		}
	}))
	v = h.verdict(err, time.Since(began), h.cfg.Timeout)
	if v == hung && errors.Is(err, context.DeadlineExceeded) && lastWord.Load() != 0 &&
		bound.Sub(time.Unix(0, lastWord.Load())) < h.breakers.speakingWithin(h.cfg.Timeout) {
		// It was still speaking when its time ran out: a slow link or a
		// long answer, which pausing the instance would not help, not a
		// database that stopped.
		v, err = refused, &stillAnswering{err}
	}
	return false, err
}

// stillAnswering is a call that ran out of time while the database was
// still answering it.
type stillAnswering struct{ err error }

func (e *stillAnswering) Error() string { return "still answering: " + e.err.Error() }
func (e *stillAnswering) Unwrap() error { return e.err }

// verdict judges a call that took took, of a time bound limit. Only the
// database failing to serve it counts against the instance: a database
// that answered "cannot run this" is up (one procedure's trouble must not
// pause the others), credentials refused are the database answering, and a
// call cancelled says nothing of the database. Of the failures,
// only those that cost time (a deadline spent, half the bound or more)
// open the breaker: a fast refusal (a server restarting) costs nothing to
// try again, and refusing calls then would only make the outage longer.
func (h *Handler) verdict(err error, took, limit time.Duration) verdict {
	f := erp.FaultOf(err)
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, erp.ErrBusy):
		// Neither the database's health nor its failure (the call was
		// cancelled, or waited for a connection others held): a call that
		// counts for nothing, where "answered" would close the breaker.
		return refused
	case f == nil || !f.Down:
		return answered
	case errors.Is(err, context.DeadlineExceeded) || took >= limit/2:
		return hung
	}
	return refused
}

// pausedError: the instance's breaker is open, for wait more.
type pausedError struct{ wait time.Duration }

func (e *pausedError) Error() string { return "calls paused by the breaker" }
func (e *pausedError) Unwrap() error { return erp.ErrPaused }

func retrySeconds(d time.Duration) int { return int((d + time.Second - 1) / time.Second) }

func (h *Handler) refreshed(ctx context.Context, t erp.Target) (tenants.Instance, bool) {
	r, ok := h.instances.(Refresher)
	if !ok {
		return tenants.Instance{}, false
	}
	fresh, err := r.Refresh(ctx, t.Instance)
	if err != nil {
		h.log.WarnContext(ctx, "refreshing instance settings", "instance", t.Instance, "err", err)
		return tenants.Instance{}, false
	}
	return fresh, fresh.Connection != t.Connection
}

// NewAnswer starts an answer with rows, which follow as they are fetched;
// `make kept` shows a kept answer with it.
func NewAnswer(lim record.Limits) *record.Encoder {
	return record.NewEncoder(`{"cod_error":0,"data":`, "}", lim)
}

// exception answers as the original did: cod_error 0 and the database's
// text in ex_execsql, lines joined by CR LF.
func (h *Handler) exception(exc *erp.Exception) []byte {
	b := make([]byte, 0, 256)
	b = append(b, `{"cod_error":0,"ex_execsql":`...)
	b = record.AppendString(b, h.cfg.ErrorPrefix+strings.Join(exc.Lines, "\r\n"))
	return append(b, '}')
}
