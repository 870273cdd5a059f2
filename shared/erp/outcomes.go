package erp

import (
	"context"
	"errors"
	"strings"
	"time"
)

// Fault is an outcome a database adapter reports instead of an answer, born
// with what the gateway needs to answer it: its code (the code table says
// its status), what the client may do, and whether it tells that the
// database failed to serve the call, which alone counts against the
// instance (its breaker). An adapter wraps a fault around its cause, which
// is for logs only: fmt.Errorf("%w: %w", erp.ErrUnavailable, cause).
type Fault struct {
	text string
	Code Code
	// Down: the database failed to serve the call (unreachable, out of
	// time), as opposed to answering it with a refusal.
	Down bool
	// Advice is what the client may do, as the answer's message ends.
	Advice string
	// of is the broader fault this one is a case of (errors.Is holds).
	of *Fault
}

func (f *Fault) Error() string { return f.text }

func (f *Fault) Unwrap() error {
	if f.of == nil {
		return nil
	}
	return f.of
}

// FaultOf is the most specific fault err carries, nil when it carries none.
func FaultOf(err error) *Fault {
	var f *Fault
	if errors.As(err, &f) {
		return f
	}
	return nil
}

// The faults.
var (
	// ErrUnavailable: the database could not serve the call (unreachable,
	// shut down, out of time). Nothing of the call was committed.
	ErrUnavailable = &Fault{text: "database unavailable", Code: CodeUnavailable, Down: true, Advice: "try again later"}
	// ErrCredentials: the server refused the user or password, so fresher
	// settings may help. The database answered: it is up.
	ErrCredentials = &Fault{text: "database unavailable: credentials refused", Code: CodeUnavailable, Advice: ErrUnavailable.Advice, of: ErrUnavailable}
	// ErrCannotRun: the database answered but cannot run the call as the
	// catalog states it: the procedure is missing, has another signature,
	// or may not be executed. One procedure's trouble says nothing of the
	// others.
	ErrCannotRun = &Fault{text: "database unavailable: the database cannot run the call", Code: CodeUnavailable, Advice: ErrUnavailable.Advice, of: ErrUnavailable}
	// ErrMaintenance: the database is closed for maintenance (a DBA shut
	// it down, or made it read-only): nothing was written, and it will be
	// back. The database answered: it is up.
	ErrMaintenance = &Fault{text: "database unavailable: closed for maintenance", Code: CodeUnavailable, Advice: ErrUnavailable.Advice, of: ErrUnavailable}
	// ErrLocked: a record the call writes is locked by another transaction
	// that did not end while the call could wait (a live one, or one a cut
	// link left behind that is not cancelled yet). Nothing was written. The
	// database answered: it is up.
	ErrLocked = &Fault{text: "database unavailable: records the call writes are locked by another transaction", Code: CodeUnavailable, Advice: "try again in a moment", of: ErrUnavailable}
	// ErrBusy: every connection the gateway may open to the database was
	// busy with other calls until the call's deadline (a pool of a few,
	// held by slow clients' streams or a burst). Nothing ran; it says
	// nothing of the database's health.
	ErrBusy = &Fault{text: "database unavailable: every connection to it is busy", Code: CodeUnavailable, Advice: ErrLocked.Advice, of: ErrUnavailable}
	// ErrOutcomeUnknown: a write's commit was sent and never answered; it
	// may or may not have been committed.
	ErrOutcomeUnknown = &Fault{text: "the outcome of the write is unknown", Code: CodeOutcomeUnknown, Down: true, Advice: "read the record before retrying"}
	// ErrKeyReused: the idempotency key was kept for another request.
	ErrKeyReused = &Fault{text: "the idempotency key was used for another request", Code: CodeKeyReused, Advice: "use a new key for a new request"}
	// ErrPaused: calls to the instance are paused by its breaker, after it
	// repeatedly did not answer in time; nothing ran.
	ErrPaused = &Fault{text: "calls paused by the breaker", Code: CodePaused, Advice: "try again later"}
	// ErrTooManyRows: an answer has more rows than its operation allows.
	ErrTooManyRows = &Fault{text: "more rows than the limit", Code: CodeTooManyRows, Advice: "ask for fewer (narrow the parameters)"}
	// ErrAnswerTooLarge: an answer is larger than it may be.
	ErrAnswerTooLarge = &Fault{text: "answer larger than the limit", Code: CodeAnswerTooLarge, Advice: "ask for fewer rows (narrow the parameters)"}
	// ErrKeptTooLarge: a keyed write's answer is larger than a key keeps;
	// nothing was written.
	ErrKeptTooLarge = &Fault{text: "the answer is larger than an idempotency key keeps", Code: CodeAnswerTooLarge, Advice: "send it without an Idempotency-Key, or in smaller parts"}
	// ErrKeyInProgress: a request with the idempotency key is still
	// running and did not end in time.
	ErrKeyInProgress = &Fault{text: "a request with the idempotency key is still running", Code: CodeKeyInProgress, Advice: "send it again in a moment, with the same key"}
)

// Faults lists every fault, for the tests that hold each one's answer.
func Faults() []*Fault {
	return []*Fault{ErrUnavailable, ErrCredentials, ErrCannotRun, ErrMaintenance, ErrLocked, ErrBusy, ErrOutcomeUnknown, ErrKeyReused,
		ErrPaused, ErrTooManyRows, ErrAnswerTooLarge, ErrKeptTooLarge, ErrKeyInProgress}
}

// Exception is the database's own refusal of a call: a user exception raised
// by the procedure, a constraint violation, a lock conflict. Lines is the
// database's text as its client library shows it, one line per entry.
type Exception struct {
	Lines []string
	// Commit: the database refused the commit of a transaction whose
	// calls all succeeded (an ON TRANSACTION COMMIT trigger's exception):
	// nothing of it was written.
	Commit bool
	// Duplicate names the table whose unique or primary key refused a row
	// ("" for any other refusal); Locked: a row another transaction holds
	// (under NO WAIT). What a layer over the database reads of a refusal
	// (an idempotency key's claim), in words of its own.
	Duplicate string
	Locked    bool
	// Cause is the adapter's error, for its own eyes (logs, its phase).
	Cause error
}

func (e *Exception) Error() string { return strings.Join(e.Lines, "\n") }

// Unwrap is the adapter's error.
func (e *Exception) Unwrap() error { return e.Cause }

// DuplicateOf is Duplicate (DuplicateOf says why it is a method).
func (e *Exception) DuplicateOf() string { return e.Duplicate }

// DuplicateOf names the table whose unique or primary key refused a row in
// err, "" when none did: the database's refusal (Exception.Duplicate), or a
// statement that gave up waiting for a row another transaction inserted
// and has not ended, which an adapter reports as an error of its own with
// a method DuplicateOf.
func DuplicateOf(err error) string {
	var d interface{ DuplicateOf() string }
	if errors.As(err, &d) {
		return d.DuplicateOf()
	}
	return ""
}

// Key is an Idempotency-Key a write is kept under (README.md#writes-that-are-safe-to-retry).
type Key struct {
	// Scope is whose key it is (the caller's token id): two integrators'
	// keys never meet.
	Scope, Key string
	Clave      string
	// Fingerprint identifies the request the key was first sent with.
	Fingerprint string
	// TTL is how long a key is kept; after it the key runs anew.
	TTL time.Duration
}

// Origin is who a write is for, as the ERP's triggers and procedures read it
// within the write's transaction: RDB$GET_CONTEXT('USER_TRANSACTION',
// 'GATEWAY_TOKEN_ID') and 'GATEWAY_REQUEST_ID'.
type Origin struct {
	TokenID, RequestID string
}

type originKey struct{}

// WithOrigin returns ctx carrying o, for the writes done under it.
func WithOrigin(ctx context.Context, o Origin) context.Context {
	return context.WithValue(ctx, originKey{}, o)
}

// OriginOf is the origin ctx carries; empty when none.
func OriginOf(ctx context.Context) Origin {
	o, _ := ctx.Value(originKey{}).(Origin)
	return o
}

type hearingKey struct{}

// WithHearing returns ctx carrying heard, which a database adapter calls
// each time the database speaks on a call made under ctx: what tells a
// slow link, over which the database keeps speaking, from a silent
// database (a frozen server, a dropped link).
func WithHearing(ctx context.Context, heard func()) context.Context {
	return context.WithValue(ctx, hearingKey{}, heard)
}

// Hearing is ctx's heard (WithHearing), nil when it carries none.
func Hearing(ctx context.Context) func() {
	heard, _ := ctx.Value(hearingKey{}).(func())
	return heard
}
