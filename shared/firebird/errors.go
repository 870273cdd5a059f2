package firebird

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/nakagami/firebirdsql"
)

// Exception is the database's own refusal of a call: a user exception raised
// by the procedure, a constraint violation, a lock conflict. Lines is the
// database's text, one line per status-vector entry.
type Exception struct {
	Lines []string
}

func (e *Exception) Error() string { return strings.Join(e.Lines, "\n") }

// ErrUnavailable means the database could not answer: unreachable, shut down,
// refusing the credentials, or out of time. The wrapped cause is for logs.
var ErrUnavailable = errors.New("database unavailable")

// ErrCredentials is an ErrUnavailable where the server refused the user or
// password, so fresher settings may help.
var ErrCredentials = fmt.Errorf("%w: credentials refused", ErrUnavailable)

// Status-vector codes of a connection the server closed or lost: a fresh
// connection may succeed.
var lostConnectionCodes = []int{
	firebirdsql.ISCAttShutdown, firebirdsql.ISCLostDbConnection, firebirdsql.ISCNetworkError,
}

// Status-vector codes, beyond a lost connection, for which the database did
// not answer the call but failed to serve it at all.
var unavailableCodes = []int{
	firebirdsql.ISCIoError, firebirdsql.ISCShutdown, firebirdsql.ISCShutinprog,
	firebirdsql.ISCUnavailable, firebirdsql.ISCBadDbFormat, firebirdsql.ISCCancelled,
	firebirdsql.ISCPswAttach,
}

func hasCode(fb *firebirdsql.FbError, codes []int) bool {
	return slices.ContainsFunc(fb.GDSCodes, func(c int) bool { return slices.Contains(codes, c) })
}

// classify turns a driver error into an *Exception or an ErrUnavailable.
func classify(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var fb *firebirdsql.FbError
	if !errors.As(err, &fb) {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
		}
		var badURL *url.Error
		if errors.As(err, &badURL) {
			// Its text would quote the connection string, password included.
			return fmt.Errorf("%w: the connection settings cannot be parsed", ErrUnavailable)
		}
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	code := 0
	if len(fb.GDSCodes) > 0 {
		code = fb.GDSCodes[0]
	}
	switch {
	case slices.Contains(fb.GDSCodes, firebirdsql.ISCLogin) || slices.Contains(fb.GDSCodes, firebirdsql.ISCLoginError):
		return fmt.Errorf("%w (gds %v)", ErrCredentials, fb.GDSCodes)
	case hasCode(fb, lostConnectionCodes) || hasCode(fb, unavailableCodes):
		return fmt.Errorf("%w: gds %v", ErrUnavailable, fb.GDSCodes)
	case code == firebirdsql.ISCDsqlError || code == firebirdsql.ISCNoPriv:
		// The procedure is missing, has another signature, or may not be
		// run: the deployment is wrong, not the request.
		return fmt.Errorf("%w: the database cannot run the call: %s", ErrUnavailable, oneLine(fb.Message))
	}
	return &Exception{Lines: exceptionLines(fb)}
}

// exceptionLines is the text of the status vector, one entry a line. For a
// user exception the entries are the number, the name, the message as the
// procedure raised it, and the position ("At procedure ..."), so a message
// holding line breaks stays one entry.
func exceptionLines(fb *firebirdsql.FbError) []string {
	if len(fb.GDSCodes) > 0 && fb.GDSCodes[0] == firebirdsql.ISCExcept && len(fb.Params) == len(fb.GDSCodes) {
		lines := make([]string, 0, len(fb.Params))
		for i, p := range fb.Params {
			text := strings.Join(p, " ")
			if i == 0 {
				text = "exception " + text
			}
			lines = append(lines, text)
		}
		return lines
	}
	return strings.Split(strings.TrimRight(fb.Message, "\n"), "\n")
}

func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", " / ") }
