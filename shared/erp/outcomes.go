package erp

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The outcomes a database adapter reports besides success and an
// *Exception. Each wraps its cause, which is for logs only.
var (
	// ErrUnavailable: the database could not serve the call (unreachable,
	// shut down, out of time, refusing the credentials, unable to prepare
	// it). Nothing of the call was committed.
	ErrUnavailable = errors.New("database unavailable")
	// ErrCredentials is an ErrUnavailable where the server refused the user
	// or password, so fresher settings may help.
	ErrCredentials = fmt.Errorf("%w: credentials refused", ErrUnavailable)
	// ErrCannotRun is an ErrUnavailable where the database answered but
	// cannot run the call as the catalog states it: the procedure is
	// missing, has another signature, or may not be executed.
	ErrCannotRun = fmt.Errorf("%w: the database cannot run the call", ErrUnavailable)
	// ErrOutcomeUnknown: a write's commit was sent and never answered; it
	// may or may not have been committed.
	ErrOutcomeUnknown = errors.New("the outcome of the write is unknown")
	// ErrKeyReused: the idempotency key was kept for another request.
	ErrKeyReused = errors.New("the idempotency key was used for another request")
	// ErrKeyInProgress: a request with the idempotency key is still
	// running and did not end in time.
	ErrKeyInProgress = errors.New("a request with the idempotency key is still running")
)

// Exception is the database's own refusal of a call: a user exception raised
// by the procedure, a constraint violation, a lock conflict. Lines is the
// database's text as its client library shows it, one line per entry.
type Exception struct {
	Lines []string
}

func (e *Exception) Error() string { return strings.Join(e.Lines, "\n") }

// Key is an Idempotency-Key a write is kept under (README, "Writes that are
// safe to retry").
type Key struct {
	// Scope is whose key it is (the caller's token id): two integrators'
	// keys never meet.
	Scope, Key string
	Clave      string
	// Fingerprint identifies the request the key was first sent with.
	Fingerprint string
	// TTL is how long a key is kept; after it the key runs anew.
	TTL time.Duration
	// Answer is the answer to keep, asked once the write's rows are in out.
	Answer func() []byte
}
