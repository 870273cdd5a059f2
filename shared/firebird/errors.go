package firebird

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/nakagami/firebirdsql"
)

// Status-vector codes of a connection the server closed or lost: a fresh
// connection may succeed.
var lostConnectionCodes = []int{
	firebirdsql.ISCAttShutdown, firebirdsql.ISCLostDbConnection, firebirdsql.ISCNetworkError,
	firebirdsql.ISCNetReadErr, firebirdsql.ISCNetWriteErr,
}

// Status-vector codes, beyond a lost connection, for which the database did
// not answer the call but failed to serve it at all.
var unavailableCodes = []int{
	firebirdsql.ISCIoError, firebirdsql.ISCUnavailable, firebirdsql.ISCBadDbFormat, firebirdsql.ISCCancelled,
	firebirdsql.ISCPswAttach, firebirdsql.ISCConnectReject,
}

// Status-vector codes of a database its DBA closed for maintenance: shut
// down (gfix -shut), or read-only (gfix -mode read_only), where every write
// is refused with "attempted update on read-only database", which is no
// refusal of the call's.
var maintenanceCodes = []int{firebirdsql.ISCShutdown, firebirdsql.ISCShutinprog, firebirdsql.ISCReadOnlyDatabase}

func hasCode(fb *firebirdsql.FbError, codes []int) bool {
	return slices.ContainsFunc(fb.GDSCodes, func(c int) bool { return slices.Contains(codes, c) })
}

// connectionLost tells a dead or broken connection from the database's answer
// and from the caller's own deadline. A restarted server shows as an
// unexpected EOF (the wire's: it is never an answer's end); a connection the
// server closed (a DBA killing sessions, say) as a status vector.
func connectionLost(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var fb *firebirdsql.FbError
	if !errors.As(err, &fb) {
		return true
	}
	return hasCode(fb, lostConnectionCodes)
}

// classify turns a call's failure into an *erp.Exception, an erp.ErrUnavailable or an
// erp.ErrOutcomeUnknown, by how far the call got. Only the database's answer to
// the call itself passes through as an Exception: whatever fails while
// connecting or preparing is the deployment's problem, not the request's,
// and its text (file paths, host names) stays in the logs.
func classify(ctx context.Context, at phase, err error) error {
	var fb *firebirdsql.FbError
	isFB := errors.As(err, &fb)
	var badURL *url.Error
	var lw *lockWait
	switch {
	case errors.As(err, &lw):
		return fmt.Errorf("%w: %w", erp.ErrLocked, err)
	case errors.As(err, &badURL):
		// Its text would quote the connection string, password included.
		return fmt.Errorf("%w: the connection settings cannot be parsed", erp.ErrUnavailable)
	case isFB && (slices.Contains(fb.GDSCodes, firebirdsql.ISCLogin) || slices.Contains(fb.GDSCodes, firebirdsql.ISCLoginError)):
		return fmt.Errorf("%w (gds %v)", erp.ErrCredentials, fb.GDSCodes)
	case at == committing && (!isFB || hasCode(fb, lostConnectionCodes)):
		// The database answered the commit (or, for a commit sent with
		// the write, refused the write before it: firebirdsql.CommitWith):
		// anything but its answer leaves the outcome unknown.
		return fmt.Errorf("%w: %w", erp.ErrOutcomeUnknown, err)
	case ctx.Err() != nil:
		return fmt.Errorf("%w: %w", erp.ErrUnavailable, context.Cause(ctx))
	case !isFB:
		return fmt.Errorf("%w: %w", erp.ErrUnavailable, err)
	case hasCode(fb, maintenanceCodes):
		return fmt.Errorf("%w: gds %v: %s", erp.ErrMaintenance, fb.GDSCodes, oneLine(fb.Message))
	case hasCode(fb, lostConnectionCodes) || hasCode(fb, unavailableCodes):
		return fmt.Errorf("%w: gds %v: %s", erp.ErrUnavailable, fb.GDSCodes, oneLine(fb.Message))
	case at == preparing && !hasCode(fb, []int{firebirdsql.ISCStackTrace}):
		// With PSQL's stack trace it is a database trigger's refusal of
		// the transaction the prepare began (ON TRANSACTION START): the
		// database's refusal, as when it begins with the statement.
		return fmt.Errorf("%w: gds %v: %s", erp.ErrCannotRun, fb.GDSCodes, oneLine(fb.Message))
	case at == connecting:
		return fmt.Errorf("%w: gds %v: %s", erp.ErrUnavailable, fb.GDSCodes, oneLine(fb.Message))
	}
	exc := exception(fb, err)
	var refused *firebirdsql.CommitError
	exc.Commit = errors.As(err, &refused)
	return exc
}

// exception is fb, the database's refusal of a call, in erp's words; err
// is what carried it.
func exception(fb *firebirdsql.FbError, err error) *erp.Exception {
	exc := &erp.Exception{Lines: exceptionLines(fb), Cause: err, Locked: hasCode(fb, []int{firebirdsql.ISCLockConflict, firebirdsql.ISCDeadlock})}
	for i, c := range fb.GDSCodes {
		// The code entry's first parameters name the constraint and the
		// table.
		if c == firebirdsql.ISCUniqueKeyViolation && i < len(fb.Params) && len(fb.Params[i]) > 1 {
			exc.Duplicate = fb.Params[i][1]
		}
	}
	return exc
}

// exceptionLines is the text of the status vector, one entry a line. For a
// user exception the entries are the number, the name, the message as the
// procedure raised it (formatted, when raised USING arguments), and the position ("At procedure ..."), so a message
// holding line breaks stays one entry.
func exceptionLines(fb *firebirdsql.FbError) []string {
	if len(fb.GDSCodes) > 0 && fb.GDSCodes[0] == firebirdsql.ISCExcept && len(fb.Params) == len(fb.GDSCodes) {
		lines := make([]string, 0, len(fb.Params))
		for i, p := range fb.Params {
			text := strings.Join(p, " ")
			switch {
			case i == 0:
				text = "exception " + text
			case fb.GDSCodes[i] == firebirdsql.ISCFormattedException && len(p) > 0:
				// EXCEPTION e USING (...): the server sends the formatted
				// message and then each argument; the client library
				// shows the message alone.
				text = p[0]
			}
			lines = append(lines, text)
		}
		return lines
	}
	return strings.Split(strings.TrimRight(fb.Message, "\n"), "\n")
}

func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", " / ") }
