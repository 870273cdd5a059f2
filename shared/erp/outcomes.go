package erp

import (
	"errors"
	"fmt"
	"strings"
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
)

// Exception is the database's own refusal of a call: a user exception raised
// by the procedure, a constraint violation, a lock conflict. Lines is the
// database's text as its client library shows it, one line per entry.
type Exception struct {
	Lines []string
}

func (e *Exception) Error() string { return strings.Join(e.Lines, "\n") }
