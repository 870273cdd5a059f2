// Package erp holds the gateway's vocabulary, the words every other package
// translates into or out of: the codes a request can be answered with (each
// with its HTTP status, its outcome class and its meaning), the outcomes a
// database adapter reports, an instance's connection settings, and the rules
// for instance names and token ids. It imports nothing of ours and no
// driver, AWS or HTTP package beyond net/http's status numbers.
package erp

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Code is the cod_error a request is answered with. Zero is success and also
// the database's own refusal (the original service's behaviour).
type Code int

// The codes are part of the public interface (README.md#error-codes): never
// renumber one. Each has its entry in codes below.
const (
	CodeOK             Code = 0
	CodeNotObject      Code = 1001
	CodeTooLarge       Code = 1002
	CodeClaveMissing   Code = 1003
	CodeClaveUnknown   Code = 1004
	CodeWrongEndpoint  Code = 1005
	CodeParamMissing   Code = 1006
	CodeParamNotString Code = 1007
	CodeParamTooLong   Code = 1008
	CodeUnknownField   Code = 1009
	CodeParamInvalid   Code = 1010
	CodeParamFormat    Code = 1011
	CodeBodyTimeout    Code = 1012
	CodeBatchEmpty     Code = 1013
	CodeBatchTooLarge  Code = 1014
	CodeReference      Code = 1015
	CodeNotFound       Code = 1101
	CodeMethod         Code = 1102
	CodeBadInstance    Code = 1103
	// 1104 (unknown instance) is retired: an unknown instance answers 1105.
	CodeUnauthorized   Code = 1105
	CodeTokenExpired   Code = 1106
	CodeOutOfScope     Code = 1107
	CodeUnavailable    Code = 1201
	CodeConfig         Code = 1202
	CodeThrottled      Code = 1203
	CodeOutcomeUnknown Code = 1204
	CodePaused         Code = 1205
	CodeAccessStale    Code = 1206
	CodeAccessDemoKey  Code = 1207
	CodeInternal       Code = 1299
	CodeTooManyRows    Code = 1301
	CodeAnswerTooLarge Code = 1302
	CodeKeyInvalid     Code = 1401
	CodeKeyNotEnabled  Code = 1402
	CodeKeyReused      Code = 1403
	CodeKeyInProgress  Code = 1404
	CodeKeyDryRun      Code = 1405
	CodePreferInvalid  Code = 1406
	// An element of a batch's answer: the batch failed elsewhere.
	CodeRolledBack       Code = 1501
	CodeNotRun           Code = 1502
	CodeReferenceMissing Code = 1503
)

// Outcome is a class of answers, the Outcome dimension of the metrics.
type Outcome string

// The outcome classes.
const (
	OutcomeOK           Outcome = "ok"
	OutcomeRefusedByDB  Outcome = "not_found_or_refused_by_db"
	OutcomeClientError  Outcome = "client_error"
	OutcomeUnauthorized Outcome = "unauthorized"
	OutcomeUnavailable  Outcome = "unavailable"
	OutcomeInternal     Outcome = "internal"
	// OutcomeCut: a streamed answer ended after its first byte (its status
	// sent), by a deadline, a lost connection, a row limit or the
	// procedure's refusal; the client got a body no JSON parser accepts.
	OutcomeCut Outcome = "cut"
)

// Health is the status word of an instance's health check.
type Health string

// The health check's statuses.
const (
	HealthOK          Health = "ok"          // the catalog and the database agree
	HealthWarnings    Health = "warnings"    // findings, none fatal
	HealthFailing     Health = "failing"     // a finding is fatal: an operation cannot run
	HealthUnavailable Health = "unavailable" // the database did not answer
	HealthPaused      Health = "paused"      // its breaker is open
)

// Healths lists every health status, for the OpenAPI document.
func Healths() []Health {
	return []Health{HealthOK, HealthWarnings, HealthFailing, HealthUnavailable, HealthPaused}
}

// Scope says on which requests a code can be answered, so the OpenAPI
// document lists it only where it can happen.
type Scope uint8

// The scopes; a code may have several.
const (
	// ScopeRouting: a path or method no operation serves.
	ScopeRouting Scope = 1 << iota
	// ScopeEdge: any request, before the handler (throttling) or from a bug.
	ScopeEdge
	// ScopeInstance: any request naming an instance.
	ScopeInstance
	// ScopeBody: a request to executequery or execute, for its body.
	ScopeBody
	// ScopeDatabase: a call of a procedure, read or write.
	ScopeDatabase
	// ScopeWrite: a call of a write.
	ScopeWrite
	// ScopeBatch: an element of a batch's answer (HTTP 200 for the whole).
	ScopeBatch
)

// Info is one code's entry: what it means and how it is answered.
type Info struct {
	Code    Code
	Status  int
	Outcome Outcome
	Scope   Scope
	// Meaning is one sentence for an integrator (OpenAPI); the README's
	// table says more.
	Meaning string
}

// codes is the one table every status, outcome and description is derived
// from; TestCodesInREADME holds the README's table to it.
var codes = [...]Info{
	{CodeOK, http.StatusOK, OutcomeOK, ScopeBody, "Success, or the database's own refusal in ex_execsql (a procedure's exception, a constraint, a database trigger refusing the transaction's start or its commit)."},
	{CodeNotObject, http.StatusBadRequest, OutcomeClientError, ScopeBody, "The body is not a JSON object, or gives a field twice."},
	{CodeTooLarge, http.StatusRequestEntityTooLarge, OutcomeClientError, ScopeBody, "The body is too large."},
	{CodeClaveMissing, http.StatusBadRequest, OutcomeClientError, ScopeBody, "CLAVE is missing, null or not a string."},
	{CodeClaveUnknown, http.StatusBadRequest, OutcomeClientError, ScopeBody, "CLAVE names no operation."},
	{CodeWrongEndpoint, http.StatusBadRequest, OutcomeClientError, ScopeBody, "A write CLAVE sent to executequery, or a read to execute."},
	{CodeParamMissing, http.StatusBadRequest, OutcomeClientError, ScopeBody, "A required parameter is missing or null."},
	{CodeParamNotString, http.StatusBadRequest, OutcomeClientError, ScopeBody, "A parameter is not a JSON string (integers and decimals also take numbers)."},
	{CodeParamTooLong, http.StatusBadRequest, OutcomeClientError, ScopeBody, "A value is longer than its parameter."},
	{CodeUnknownField, http.StatusBadRequest, OutcomeClientError, ScopeBody, "A field the operation does not take."},
	{CodeParamInvalid, http.StatusBadRequest, OutcomeClientError, ScopeBody, "A value holds a NUL character, bytes that are not UTF-8 or half of a surrogate pair (U+FFFD itself is text)."},
	{CodeParamFormat, http.StatusBadRequest, OutcomeClientError, ScopeBody, "A date, integer or decimal value is not of its form, or names a day that does not exist."},
	{CodeBodyTimeout, http.StatusRequestTimeout, OutcomeClientError, ScopeBody, "The body did not arrive in time (the local server)."},
	{CodeBatchEmpty, http.StatusBadRequest, OutcomeClientError, ScopeBody, "The batch is an empty array."},
	{CodeBatchTooLarge, http.StatusBadRequest, OutcomeClientError, ScopeBody, "The batch has more calls than this service takes in one request."},
	{CodeReference, http.StatusBadRequest, OutcomeClientError, ScopeBody, "A {\"$from\", \"$field\"} value is malformed, outside a batch, or names no earlier call of the batch."},

	{CodeNotFound, http.StatusNotFound, OutcomeClientError, ScopeRouting, "No such path."},
	{CodeMethod, http.StatusMethodNotAllowed, OutcomeClientError, ScopeRouting, "A method the path does not serve; Allow names the one it does."},
	{CodeBadInstance, http.StatusBadRequest, OutcomeClientError, ScopeInstance, "The instance name is not " + InstanceNameRule + "."},
	{CodeUnauthorized, http.StatusUnauthorized, OutcomeUnauthorized, ScopeInstance, "No token, a wrong or revoked token, several Authorization headers, or no such instance."},
	{CodeTokenExpired, http.StatusUnauthorized, OutcomeUnauthorized, ScopeInstance, "The token has expired; its message says when."},
	{CodeOutOfScope, http.StatusForbidden, OutcomeUnauthorized, ScopeBody, "The token may not run this CLAVE (it is limited to reads or to a list of CLAVEs); the message names the CLAVE."},
	{CodeUnavailable, http.StatusServiceUnavailable, OutcomeUnavailable, ScopeDatabase, "The database is unreachable, cannot run the operation, or did not answer in time."},
	{CodeConfig, http.StatusServiceUnavailable, OutcomeUnavailable, ScopeInstance, "The instance's settings cannot be read right now."},
	{CodeThrottled, http.StatusTooManyRequests, OutcomeClientError, ScopeEdge, "Throttled (API Gateway, an API key's plan, WAF, the local server's bound)."},
	{CodeOutcomeUnknown, http.StatusServiceUnavailable, OutcomeUnavailable, ScopeWrite, "A write's commit was sent and never confirmed: it may or may not have happened."},
	{CodePaused, http.StatusServiceUnavailable, OutcomeUnavailable, ScopeDatabase, "Calls to the instance are paused after it repeatedly did not answer in time; see Retry-After."},
	{CodeAccessStale, http.StatusServiceUnavailable, OutcomeUnavailable, ScopeInstance, "Tokens cannot be checked: the access document is malformed or has not been read for longer than allowed; see Retry-After."},
	{CodeAccessDemoKey, http.StatusServiceUnavailable, OutcomeUnavailable, ScopeInstance, "The deployment's access document holds the published demo key: every token is refused until its operator replaces it."},
	{CodeInternal, http.StatusInternalServerError, OutcomeInternal, ScopeEdge, "A bug; logged."},
	{CodeTooManyRows, http.StatusUnprocessableEntity, OutcomeClientError, ScopeDatabase, "The answer has more rows than the operation's limit."},
	{CodeAnswerTooLarge, http.StatusUnprocessableEntity, OutcomeClientError, ScopeDatabase, "The answer is larger than a Lambda function may return (a write's, or a read's where answers cannot stream), or than an Idempotency-Key keeps (1 MiB); nothing was written."},
	{CodeKeyInvalid, http.StatusBadRequest, OutcomeClientError, ScopeWrite, "The Idempotency-Key header is not 1 to " + strconv.Itoa(MaxKeyLength) + " printable ASCII characters, or is sent more than once."},
	{CodeKeyNotEnabled, http.StatusBadRequest, OutcomeClientError, ScopeWrite, "The instance does not keep Idempotency-Keys: its operator must install their table and turn them on."},
	{CodeKeyReused, http.StatusUnprocessableEntity, OutcomeClientError, ScopeWrite, "The Idempotency-Key was used for a different request."},
	{CodeKeyInProgress, http.StatusConflict, OutcomeClientError, ScopeWrite, "A request with this Idempotency-Key is still running; see Retry-After."},
	{CodeKeyDryRun, http.StatusBadRequest, OutcomeClientError, ScopeWrite, "An Idempotency-Key on a request that keeps nothing: a dry run (Prefer: tx=rollback), or a batch on execute with no write."},
	{CodePreferInvalid, http.StatusBadRequest, OutcomeClientError, ScopeWrite, "Prefer: tx= holds a value other than commit or rollback (any case), or Prefer a quoted string never closed: nothing runs."},
	{CodeRolledBack, http.StatusOK, OutcomeRefusedByDB, ScopeBatch, "Another call of the batch was refused, or the database refused the batch's commit: this one ran, and was rolled back with the rest (on executequery: its answer was dropped)."},
	{CodeNotRun, http.StatusOK, OutcomeRefusedByDB, ScopeBatch, "Another call of the batch was refused before this one's turn: it did not run."},
	{CodeReferenceMissing, http.StatusOK, OutcomeRefusedByDB, ScopeBatch, "A {\"$from\", \"$field\"} value of this call found no such column, or no row, in the answer it names: the batch was rolled back."},
}

// Codes lists every code's entry in the order of the numbers.
func Codes() []Info { return append([]Info(nil), codes[:]...) }

// Info is the code's entry; an unknown code is answered as a bug.
func (c Code) Info() Info {
	for _, i := range codes {
		if i.Code == c {
			return i
		}
	}
	i := CodeInternal.Info()
	i.Code = c
	return i
}

// Status is the HTTP status the code is answered with.
func (c Code) Status() int { return c.Info().Status }

// Outcome is the code's outcome class.
func (c Code) Outcome() Outcome { return c.Info().Outcome }

// Error is a refusal: a code and a message meant for the integrator.
type Error struct {
	Code    Code
	Message string
	// RetryAfter, when not zero, tells the caller when to try again.
	RetryAfter time.Duration
}

func (e *Error) Error() string { return fmt.Sprintf("cod_error %d: %s", e.Code, e.Message) }

// Refuse makes a refusal with a formatted message.
func Refuse(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
