package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/erp-gateway/gateway/shared/calls"
	"github.com/erp-gateway/gateway/shared/erp"
)

// subject is what a refusal is about: one call or a batch, a write or not,
// under an Idempotency-Key or not.
type subject struct {
	batch, write, keyed bool
	// op is a single call's operation (nil for a batch, or a request that
	// runs none: the OpenAPI document).
	op *calls.Step
	// running names the batch's call that was running when it failed,
	// and failed is that call (a single call's too; nil when none was).
	running string
	failed  *calls.Step
}

func subjectOf(q *calls.Sequence, keyed bool) subject {
	s := subject{batch: !q.Single, write: q.Writes(), keyed: keyed, running: q.Running()}
	if q.Single {
		s.op = &q.Steps[0]
	}
	if i := q.RunningStep(); i >= 0 {
		s.failed = &q.Steps[i]
	} else {
		s.failed = s.op
	}
	return s
}

// what is the subject in words: "CLAVE Set_Terceros", "the batch".
func (s subject) what() string {
	switch {
	case s.batch:
		return "the batch"
	case s.op != nil:
		return s.op.Call.Op.Clave
	}
	return "the call"
}

// answer is the subject's answer in words.
func (s subject) answer() string {
	if s.batch {
		return "the batch's answer"
	}
	return "the answer of CLAVE " + s.what()
}

// nothing says what a refused write did not do; "" for a read.
func (s subject) nothing() string {
	switch {
	case s.batch && s.write:
		return "; nothing of the batch was written"
	case s.write:
		return "; nothing was written"
	}
	return ""
}

// maintenanceRetry is the Retry-After of a database closed for
// maintenance: a DBA's work takes minutes, and each try costs the database
// a connection refused.
const maintenanceRetry = 5 * time.Second

// refuse is the one refusal of a request whose calls failed as a whole:
// err's fault, born coded, answered with its code and a message that tells
// what happened and what the client may do (the fault's advice), worded
// for s. Anything without a fault is a bug.
func (h *Handler) refuse(ctx context.Context, t erp.Target, s subject, err error) outcome {
	f := erp.FaultOf(err)
	if f == nil {
		h.log.ErrorContext(ctx, "call failed", "instance", t.Instance, "err", err)
		return refusal(erp.CodeInternal, "internal error")
	}
	db := "the database of instance " + t.Instance
	var msg string
	var retry time.Duration
	switch {
	case errors.Is(err, erp.ErrPaused):
		var paused *pausedError
		errors.As(err, &paused)
		retry = paused.wait
		msg = fmt.Sprintf("%s did not answer in time, repeatedly; calls to it are paused for %ds%s", db, retrySeconds(retry), s.nothing())
	case errors.Is(err, erp.ErrKeyReused):
		msg = "this Idempotency-Key was sent before with another request (another CLAVE or other values); nothing was written"
	case errors.Is(err, erp.ErrKeyInProgress):
		msg, retry = "a request with this Idempotency-Key is still running", time.Second
	case errors.Is(err, erp.ErrKeptTooLarge):
		msg = fmt.Sprintf("%s cannot be kept under an Idempotency-Key (%s)%s", s.answer(), err, s.nothing())
	case s.batch && (errors.Is(err, erp.ErrTooManyRows) || errors.Is(err, erp.ErrAnswerTooLarge)):
		return refusal(f.Code, fmt.Sprintf("%s would pass its limits (%s)%s; ask for fewer rows or send fewer calls", s.answer(), err, s.nothing()))
	case errors.Is(err, erp.ErrTooManyRows) && s.op != nil:
		msg = fmt.Sprintf("%s has more than %d rows, its limit%s", s.answer(), s.op.Call.Op.MaxRows, s.nothing())
	case errors.Is(err, erp.ErrAnswerTooLarge):
		msg = fmt.Sprintf("%s would pass %d bytes, the most this service can return%s", s.answer(), h.cfg.MaxAnswer, s.nothing())
	case errors.Is(err, erp.ErrOutcomeUnknown):
		h.log.ErrorContext(ctx, "write outcome unknown", "instance", t.Instance, "what", s.what(), "err", err)
		what := "the write"
		if s.batch {
			what = "the batch"
		}
		how := "it may or may not have happened; " + f.Advice
		if s.keyed {
			// The key answers what happened: the fault's advice is for
			// writes without one.
			how = "send it again with the same Idempotency-Key, which answers what happened"
		}
		return refusal(f.Code, db+" did not confirm "+what+": "+how)
	case errors.Is(err, erp.ErrLocked):
		h.log.WarnContext(ctx, "records locked by another transaction", "instance", t.Instance, "what", s.what(), "err", err)
		msg, retry = fmt.Sprintf("%s could not run %s%s: records it writes are locked by another transaction that has not ended%s", db, s.what(), s.at(), s.nothing()), time.Second
	case errors.Is(err, erp.ErrBusy):
		h.log.WarnContext(ctx, "every connection to the database busy", "instance", t.Instance, "what", s.what(), "err", err)
		msg, retry = fmt.Sprintf("every connection to %s was busy with other calls until %s's deadline%s", db, s.what(), s.nothing()), time.Second
	case errors.Is(err, erp.ErrCannotRun):
		h.log.ErrorContext(ctx, "database cannot run the operation", "instance", t.Instance, "what", s.what(), "err", err)
		why := "its procedure is missing, changed or not granted; the gateway's log has the database's words"
		if s.failed != nil {
			if findings := h.diagnose(ctx, t, s.failed.Call.Op, s.keyed); len(findings) > 0 {
				why = strings.Join(findings, "; ")
			}
		}
		if s.batch && s.running != "" {
			why = s.running + ": " + why
		}
		msg = fmt.Sprintf("%s cannot run %s right now (%s)%s", db, s.what(), why, s.nothing())
	case errors.Is(err, context.DeadlineExceeded) && errors.Is(err, erp.ErrUnavailable):
		h.log.WarnContext(ctx, "database unavailable", "instance", t.Instance, "what", s.what(), "err", err)
		timeout, did := h.cfg.Timeout, "answer"
		if s.batch {
			timeout, did = h.cfg.BatchTimeout, "run the batch"
		}
		msg = fmt.Sprintf("%s did not %s within %s%s", db, did, timeout, s.nothing())
		if still := (*stillAnswering)(nil); errors.As(err, &still) {
			msg = fmt.Sprintf("%s was still answering %s when its deadline (%s) ran out: the link to it is slow, or the answer large%s", db, s.what(), timeout, s.nothing())
		}
	case errors.Is(err, erp.ErrMaintenance):
		h.log.WarnContext(ctx, "database closed for maintenance", "instance", t.Instance, "what", s.what(), "err", err)
		msg, retry = db+" is closed for maintenance (shut down or read-only) right now"+s.nothing(), maintenanceRetry
	case errors.Is(err, erp.ErrUnavailable):
		h.log.WarnContext(ctx, "database unavailable", "instance", t.Instance, "what", s.what(), "err", err)
		msg = db + " is not reachable right now" + s.nothing()
	default:
		h.log.ErrorContext(ctx, "call failed", "instance", t.Instance, "err", err)
		return refusal(erp.CodeInternal, "internal error")
	}
	o := refusal(f.Code, msg+"; "+f.Advice)
	o.retryAfter = retry
	return o
}

// at names a batch's call that was running, for a refusal about it.
func (s subject) at() string {
	if s.batch && s.running != "" {
		return " (" + s.running + ")"
	}
	return ""
}
