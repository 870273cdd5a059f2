package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/record"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// run calls the operation; key, when not "", is the write's idempotency
// key in scope (the caller's token id). A read's answer streams to st, when
// not nil, once it passes Config.StreamAbove.
func (h *Handler) run(ctx context.Context, t erp.Target, call catalog.Call, key, scope string, st *stream) outcome {
	lim := record.Limits{MaxRows: call.Op.MaxRows, MaxBytes: h.cfg.MaxAnswer}
	var spill record.Spill
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
		first := time.AfterFunc(h.cfg.Timeout, func() { expire(context.DeadlineExceeded) })
		defer first.Stop()
		// A streamed answer has no size limit of ours; one sent whole
		// never passes StreamAbove.
		lim.MaxBytes = 0
		spill = record.Spill{Above: h.cfg.StreamAbove, Chunk: streamChunk, To: func(p []byte) error {
			first.Stop()
			return st.write(p)
		}}
	} else {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.cfg.Timeout)
		defer cancel()
	}
	out := NewAnswer(lim)
	out.SpillTo(spill)
	w := work{call: call, out: out, stream: st}
	if key != "" {
		w.key = &erp.Key{Scope: scope, Key: key, Clave: call.Op.Clave, Fingerprint: call.Fingerprint(), TTL: h.cfg.KeyTTL}
	}
	began := time.Now()
	tripped, err := h.guarded(ctx, t, &w)
	took := time.Since(began)
	var o outcome
	if st != nil && st.stop(err != nil) {
		o = h.streamed(ctx, t, &w, err)
	} else {
		o = h.answer(ctx, t, &w, err)
	}
	o.dbTime, o.tripped = took, tripped
	return o
}

// work is one call and what it produced.
type work struct {
	call catalog.Call
	out  *record.Encoder
	key  *erp.Key
	// kept is a keyed write's answer, and replayed says it was kept before.
	kept     []byte
	replayed bool
	// stream takes a read's answer once it spills.
	stream *stream
}

// answer is the call's answer as the client gets it.
func (w *work) answer() []byte {
	if w.kept != nil {
		return w.kept
	}
	return w.out.Finish()
}

// answer turns a call's result into what the client sees: an error is
// answered by its code (codeOf), with a message that tells what happened
// and what to do.
func (h *Handler) answer(ctx context.Context, t erp.Target, w *work, err error) outcome {
	if err == nil {
		return outcome{status: http.StatusOK, body: w.answer(), replayed: w.replayed}
	}
	call := w.call
	nothingWritten := ""
	if call.Op.ReadBack != nil {
		nothingWritten = "; nothing was written"
	}
	var exc *erp.Exception
	var paused *pausedError
	if errors.As(err, &exc) {
		return h.exception(exc)
	}
	f := erp.FaultOf(err)
	switch code := codeOf(err); code {
	case erp.CodePaused:
		errors.As(err, &paused)
		return h.pausedAnswer(t, paused, nothingWritten)
	case erp.CodeKeyReused:
		return refusal(code, "this Idempotency-Key was sent before with another request (another CLAVE or other values); nothing was written; "+f.Advice)
	case erp.CodeKeyInProgress:
		o := refusal(code, "a request with this Idempotency-Key is still running; "+f.Advice)
		o.retryAfter = time.Second
		return o
	case erp.CodeAnswerTooLarge:
		if errors.Is(err, erp.ErrKeptTooLarge) {
			return refusal(code, fmt.Sprintf("the answer of CLAVE %s cannot be kept under an Idempotency-Key (%s); nothing was written; %s", call.Op.Clave, err, f.Advice))
		}
		return refusal(code, fmt.Sprintf("the answer of CLAVE %s would pass %d bytes, the most this service can return%s; ask for fewer rows (narrow the parameters)", call.Op.Clave, h.cfg.MaxAnswer, nothingWritten))
	case erp.CodeTooManyRows:
		return refusal(code, fmt.Sprintf("the answer of CLAVE %s has more than %d rows, its limit%s; ask for fewer (narrow the parameters)", call.Op.Clave, call.Op.MaxRows, nothingWritten))
	case erp.CodeOutcomeUnknown:
		h.log.ErrorContext(ctx, "write outcome unknown", "instance", t.Instance, "clave", call.Op.Clave, "err", err)
		if w.key != nil {
			// The key answers what happened: the fault's advice is for
			// writes without one.
			return refusal(code, "the database of instance "+t.Instance+" did not confirm the write: send it again with the same Idempotency-Key, which answers what happened")
		}
		return refusal(code, "the database of instance "+t.Instance+" did not confirm the write: it may or may not have happened; "+f.Advice)
	case erp.CodeUnavailable:
		if errors.Is(err, erp.ErrLocked) {
			h.log.WarnContext(ctx, "records locked by another transaction", "instance", t.Instance, "clave", call.Op.Clave, "err", err)
			o := refusal(code, "the database of instance "+t.Instance+" could not run "+call.Op.Clave+": records it writes are locked by another transaction that has not ended"+nothingWritten+"; "+f.Advice)
			o.retryAfter = time.Second
			return o
		}
		if errors.Is(err, erp.ErrCannotRun) {
			h.log.ErrorContext(ctx, "database cannot run the operation", "instance", t.Instance, "clave", call.Op.Clave, "err", err)
			why := "its procedure is missing, changed or not granted"
			if findings := h.diagnose(ctx, t, call.Op, w.key != nil); len(findings) > 0 {
				why = strings.Join(findings, "; ")
			}
			return refusal(code, "the database of instance "+t.Instance+" cannot run "+call.Op.Clave+" right now ("+why+")"+nothingWritten+"; "+f.Advice)
		}
		h.log.WarnContext(ctx, "database unavailable", "instance", t.Instance, "clave", call.Op.Clave, "err", err)
		if errors.Is(err, context.DeadlineExceeded) {
			return refusal(code, fmt.Sprintf("the database of instance %s did not answer within %s%s; %s", t.Instance, h.cfg.Timeout, nothingWritten, f.Advice))
		}
		return refusal(code, "the database of instance "+t.Instance+" is not reachable right now"+nothingWritten+"; "+f.Advice)
	}
	h.log.ErrorContext(ctx, "call failed", "instance", t.Instance, "err", err)
	return refusal(erp.CodeInternal, "internal error")
}

// codeOf is the code a call's error is answered with: the fault's own, or
// that of the gateway's limits and breaker; CodeInternal for anything else.
func codeOf(err error) erp.Code {
	var paused *pausedError
	switch {
	case errors.As(err, &paused):
		return erp.CodePaused
	case errors.Is(err, record.ErrTooManyRows):
		return erp.CodeTooManyRows
	case errors.Is(err, record.ErrTooLarge):
		return erp.CodeAnswerTooLarge
	}
	if f := erp.FaultOf(err); f != nil {
		return f.Code
	}
	return erp.CodeInternal
}

// streamed ends an answer that started streaming: whole, or cut. A cut
// cannot change the status any more: the stream is aborted, and ServeHTTP
// leaves the body unended.
func (h *Handler) streamed(ctx context.Context, t erp.Target, w *work, err error) outcome {
	var cut *cutError
	if errors.As(err, &cut) {
		err = cut.err
	}
	if err == nil {
		err = w.stream.finish(w.answer())
	}
	o := outcome{status: http.StatusOK, streamed: true}
	if err != nil {
		w.stream.abort()
		o.cut = err
		h.log.WarnContext(ctx, "streamed answer cut", "instance", t.Instance, "clave", w.call.Op.Clave, "err", err)
	}
	return o
}

// cutError is a call that failed after its answer started streaming. It
// says nothing of the database: the client may have gone, or the stream
// outlived its deadline.
type cutError struct{ err error }

func (e *cutError) Error() string { return "streamed answer cut: " + e.err.Error() }

// pausedAnswer is the refusal of a call the instance's breaker paused.
// nothingWritten, when not empty, says a write did not happen.
func (h *Handler) pausedAnswer(t erp.Target, paused *pausedError, nothingWritten string) outcome {
	o := refusal(erp.CodePaused, fmt.Sprintf("the database of instance %s did not answer in time, repeatedly; calls to it are paused for %ds%s; try again later", t.Instance, retrySeconds(paused.wait), nothingWritten))
	o.retryAfter = paused.wait
	return o
}

// pausedError: the instance's breaker is open.
type pausedError struct{ wait time.Duration }

func (e *pausedError) Error() string { return "calls paused by the breaker" }

// guarded runs the call under the instance's breaker.
func (h *Handler) guarded(ctx context.Context, t erp.Target, w *work) (tripped bool, err error) {
	return h.breaker(ctx, t, func(ctx context.Context) error {
		err := h.call(ctx, t, w)
		// Once its answer streams, a call's failure says nothing of the
		// database (a slow client, the stream's deadline): it never opens
		// the breaker. The call may still run (abandoned at its deadline),
		// so its encoder is not read here.
		if err != nil && w.stream != nil && w.stream.begun.Load() {
			return &cutError{err}
		}
		return h.againIfRotated(ctx, t, err, func(t erp.Target) error { return h.call(ctx, t, w) })
	})
}

// againIfRotated runs call again, once, when err says the database refused
// the credentials and the instance's settings read afresh (bypassing the
// cache) hold others: the password may have been rotated.
func (h *Handler) againIfRotated(ctx context.Context, t erp.Target, err error, call func(erp.Target) error) error {
	if !errors.Is(err, erp.ErrCredentials) {
		return err
	}
	if fresh, ok := h.refreshed(ctx, t); ok {
		h.log.InfoContext(ctx, "credentials refused; retrying with refreshed settings", "instance", t.Instance)
		t.Connection = fresh.Connection
		return call(t)
	}
	return err
}

// breaker runs call unless the instance's breaker is open (a *pausedError),
// and tells the breaker how it went. When the breaker lets a probe through,
// the probe (one round trip, bounded by the breaker's ProbeTimeout) goes
// first: a database that answers it closes the breaker and the call runs;
// one that does not keeps it open, and the call is refused without running.
func (h *Handler) breaker(ctx context.Context, t erp.Target, call func(context.Context) error) (tripped bool, err error) {
	tk, ok, wait := h.breakers.allow(t.Instance)
	if !ok {
		return false, &pausedError{wait: wait}
	}
	if tk.probe {
		began := time.Now()
		pctx, cancel := context.WithTimeout(ctx, h.breakers.cfg.ProbeTimeout)
		err := h.db.Ping(pctx, t)
		cancel()
		// A database that answered the probe with a refusal of its own
		// (credentials, say) is up: the call runs and meets it.
		if v := h.verdict(err, time.Since(began), h.breakers.cfg.ProbeTimeout); err != nil && (v != answered || ctx.Err() != nil) {
			if v == answered { // the caller went away: no verdict, another probe soon
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
	err = call(ctx)
	v = h.verdict(err, time.Since(began), h.cfg.Timeout)
	return false, err
}

// verdict judges a call that took took, of a time bound limit. Only the
// database failing to serve it counts against the instance: a database
// that answered "cannot run this" is up (one procedure's trouble must not
// pause the others), credentials refused are the database answering, and a
// client that went away says nothing of the database. Of the failures,
// only those that cost time (a deadline spent, half the bound or more)
// open the breaker: a fast refusal (a server restarting) costs nothing to
// try again, and refusing calls then would only make the outage longer.
func (h *Handler) verdict(err error, took, limit time.Duration) verdict {
	f := erp.FaultOf(err)
	failed := f != nil && f.Down && !errors.Is(err, context.Canceled)
	switch {
	case !failed:
		return answered
	case errors.Is(err, context.DeadlineExceeded) || took >= limit/2:
		return hung
	}
	return refused
}

func retrySeconds(d time.Duration) int { return int((d + time.Second - 1) / time.Second) }

func (h *Handler) call(ctx context.Context, t erp.Target, w *work) error {
	op, args := w.call.Op, w.call.Args
	if op.Endpoint == catalog.ExecuteQuery {
		return h.db.Read(ctx, t, op.Procedure, args, w.out)
	}
	fw := writeOf(w.call)
	if w.key != nil {
		var err error
		w.kept, w.replayed, err = h.db.WriteOnce(ctx, t, fw, w.out, *w.key)
		return err
	}
	return h.db.Write(ctx, t, fw, w.out)
}

// writeOf is the database's write of a call to a write operation.
func writeOf(call catalog.Call) firebird.Write {
	fw := firebird.Write{Procedure: call.Op.Procedure, Args: call.Args}
	if rb := call.Op.ReadBack; rb != nil {
		fw.ReadBack, fw.ReadArgs = rb.Procedure, call.ReadBackArgs()
	}
	return fw
}

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

// exception answers as the original did: HTTP 200, cod_error 0 and the
// database's text in ex_execsql, lines joined by CR LF.
func (h *Handler) exception(exc *erp.Exception) outcome {
	b := make([]byte, 0, 256)
	b = append(b, `{"cod_error":0,"ex_execsql":`...)
	b = record.AppendString(b, h.cfg.ErrorPrefix+strings.Join(exc.Lines, "\r\n"))
	b = append(b, '}')
	return outcome{status: http.StatusOK, body: b, refusedByDB: true}
}
