package gateway

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/record"
)

// outcome is what one request answers.
type outcome struct {
	status     int
	code       erp.Code
	body       []byte
	challenge  bool          // ask for a bearer token
	retryAfter time.Duration // when to try again, for a pause
	allow      string        // the method the path serves, for a 405
	replayed   bool          // the kept answer of an idempotency key
	// preferenceApplied answers a Prefer header (RFC 7240) that was
	// honoured: tx=rollback.
	preferenceApplied string
	streamed          bool  // sent as it was fetched: nothing left to write
	cut               error // why a streamed answer ended before its end
	// For the request's log line and metrics:
	asked       string        // the instance name asked for, authenticated or not
	refusedByDB bool          // the database's own refusal, in ex_execsql
	dbTime      time.Duration // spent on the database call
	tripped     bool          // this request's outcome opened the instance's breaker
	instance    string
	clave       string
	claves      []string // a batch's, in order
	tokenID     string   // the token's id once its signature holds; never the token
}

// RefusalBody is the body of a refusal, as every part of the service that
// refuses a request writes it; its HTTP status is code.Status().
func RefusalBody(code erp.Code, message string) []byte {
	b := make([]byte, 0, 64+len(message))
	b = fmt.Appendf(b, `{"cod_error":%d,"ex_execsql":`, code)
	b = record.AppendString(b, message)
	return append(b, '}')
}

func refusal(code erp.Code, message string) outcome {
	return outcome{status: code.Status(), code: code, body: RefusalBody(code, message)}
}

// refusalOf answers e: a 401 asks for a bearer token.
func refusalOf(e *erp.Error) outcome {
	o := refusal(e.Code, e.Message)
	o.retryAfter = e.RetryAfter
	o.challenge = o.status == http.StatusUnauthorized
	return o
}

// class is the outcome's class for the metrics.
func (o outcome) class() erp.Outcome {
	if o.cut != nil {
		return erp.OutcomeCut
	}
	if o.refusedByDB {
		return erp.OutcomeRefusedByDB
	}
	return o.code.Outcome()
}

// SetAnswerHeaders sets what every answer of the service carries: a JSON
// body, never cached, never sniffed as another type.
func SetAnswerHeaders(h http.Header) {
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
}

func (o outcome) write(w http.ResponseWriter) {
	h := w.Header()
	SetAnswerHeaders(h)
	h.Set("Content-Length", strconv.Itoa(len(o.body)))
	if o.allow != "" {
		h.Set("Allow", o.allow)
	}
	if o.replayed {
		h.Set("Idempotent-Replayed", "true")
	}
	if o.preferenceApplied != "" {
		h.Set("Preference-Applied", o.preferenceApplied)
	}
	if o.challenge {
		h.Set("WWW-Authenticate", `Bearer realm="erp-gateway"`)
	}
	if o.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(retrySeconds(o.retryAfter)))
	}
	w.WriteHeader(o.status)
	w.Write(o.body) //nolint:errcheck // the client went away; nothing to do
}
