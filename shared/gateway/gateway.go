// Package gateway is the HTTP face of the service: it routes
// POST /{instance}/RestServerIsapi.dll/api/v1/{class}/{executequery|execute},
// resolves the instance, validates the body against the catalog, runs the
// call and writes the original service's JSON. The Lambdas, the local server
// and the tests all serve this one handler.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/record"
	"github.com/erp-gateway/gateway/shared/tally"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// Database runs procedures and encodes their rows into out; *firebird.Pools
// is the real one.
type Database interface {
	Read(ctx context.Context, t firebird.Target, procedure string, args []any, out *record.Encoder) error
	Write(ctx context.Context, t firebird.Target, procedure string, args []any, readBack string, readArgs []any, out *record.Encoder) error
}

// Access checks a request's credentials for an instance name before any
// per-instance work; *access.Current is the real one. It returns the id of
// the token presented ("" when the instance takes anonymous requests).
type Access interface {
	Authorize(instance string, authorization []string) (tokenID string, ok bool)
}

// Instances resolves instance names; *tenants.File and *tenants.Cache are.
type Instances interface {
	Lookup(ctx context.Context, name string) (tenants.Instance, error)
}

// Refresher is an Instances whose documents can be read again at once, for
// when the database refuses the credentials it holds (a rotated password).
type Refresher interface {
	Refresh(ctx context.Context, name string) (tenants.Instance, error)
}

// Config holds the deployment's choices. Zero values take the defaults.
type Config struct {
	// Class is the interface-class path segment, TServiceRestInterface by
	// default; real deployments carry the vendor's name there.
	Class string
	// ErrorPrefix starts every ex_execsql, before "exception N". A
	// deployment may set "[FireDAC][Phys][FB]" to match the original.
	ErrorPrefix string
	// MaxBody is the largest request body accepted, in bytes.
	MaxBody int64
	// Timeout bounds each database call.
	Timeout time.Duration
	// Endpoints served; both when empty. A Lambda serves one.
	Endpoints []catalog.Endpoint
	// MaxAnswer bounds an answer's size written as a JSON string, the form
	// Lambda's response limit counts.
	MaxAnswer int
	// OpenAPI serves GET .../{instance}/openapi.json (the local server).
	OpenAPI bool
	// Breaker tunes the per-instance circuit breaker.
	Breaker BreakerConfig
	// MetricsNamespace, when set, makes each request's log line a
	// CloudWatch Embedded Metric Format document in this namespace.
	MetricsNamespace string
}

// Defaults of Config.
const (
	DefaultClass       = "TServiceRestInterface"
	DefaultErrorPrefix = "[firebirdsql]"
	DefaultMaxBody     = 64 << 10
	DefaultTimeout     = 10 * time.Second
	// DefaultMaxAnswer leaves room under Lambda's 6 MB (6,291,456 bytes)
	// response limit for the response's status and headers.
	DefaultMaxAnswer = 6_291_456 - 16<<10
)

// Handler is the gateway's http.Handler.
type Handler struct {
	cfg       Config
	catalog   *catalog.Catalog
	access    Access
	instances Instances
	db        Database
	log       *slog.Logger
	// described caches what instances' databases say of the catalog's
	// procedures, for the health check and for explaining a call the
	// database cannot run.
	described *descriptions
	breakers  *breakers
}

// New builds the handler from long-lived parts made once by main.
func New(cfg Config, cat *catalog.Catalog, acc Access, instances Instances, db Database, log *slog.Logger) *Handler {
	if cfg.Class == "" {
		cfg.Class = DefaultClass
	}
	if cfg.ErrorPrefix == "" {
		cfg.ErrorPrefix = DefaultErrorPrefix
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxAnswer <= 0 {
		cfg.MaxAnswer = DefaultMaxAnswer
	}
	if len(cfg.Endpoints) == 0 {
		cfg.Endpoints = []catalog.Endpoint{catalog.ExecuteQuery, catalog.Execute}
	}
	if log != nil {
		log = slog.New(requestLog{log.Handler()})
	}
	return &Handler{cfg: cfg, catalog: cat, access: acc, instances: instances, db: db, log: log, described: newDescriptions(), breakers: newBreakers(cfg.Breaker)}
}

// Routes lists what the handler serves as "METHOD /path" in API Gateway's
// path-parameter syntax, {class} standing for Config.Class; a test holds
// template.yaml to it.
func (h *Handler) Routes() []string {
	var out []string
	for _, e := range h.cfg.Endpoints {
		out = append(out, "POST /{instance}/RestServerIsapi.dll/api/v1/{class}/"+string(e))
		if e == catalog.ExecuteQuery {
			out = append(out, "GET /{instance}/health")
		}
	}
	return out
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ids, ok := requestIDsOf(r.Context())
	if !ok {
		ids.API = newRequestID()
		r = r.WithContext(WithRequestIDs(r.Context(), ids))
	}
	// The id an integrator's support ticket can quote.
	w.Header().Set("X-Request-Id", ids.API)
	var work tally.Counts
	r = r.WithContext(tally.With(r.Context(), &work))
	o := outcome{status: http.StatusOK}
	defer func() {
		if p := recover(); p != nil {
			h.log.ErrorContext(r.Context(), "panic serving request", "panic", fmt.Sprint(p))
			o = refusal(catalog.CodeInternal, "internal error")
			o.write(w)
		}
		h.logRequest(r.Context(), r, o, &work, time.Since(start))
	}()
	o = h.serve(r)
	o.write(w)
}

type pathInstanceKey struct{}

// WithPathInstance tells the handler which instance name API Gateway matched
// ({instance} of pathParameters). The handler then serves that name or
// nothing, so a control keyed on {instance} (an authorizer, a WAF rule, a
// usage plan) sees the name that is served.
func WithPathInstance(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, pathInstanceKey{}, name)
}

// outcome is what one request answers.
type outcome struct {
	status     int
	code       catalog.Code
	body       []byte
	challenge  bool          // ask for a bearer token
	retryAfter time.Duration // when to try again, for a pause
	// For the request's log line and metrics:
	asked       string        // the instance name asked for, authenticated or not
	refusedByDB bool          // the database's own refusal, in ex_execsql
	dbTime      time.Duration // spent on the database call
	tripped     bool          // this request's outcome opened the instance's breaker
	instance    string
	clave       string
}

func (h *Handler) serve(r *http.Request) outcome {
	// Routing reads the path as sent: a segment such as x%2Facme is one
	// (invalid) instance name, never the instance acme.
	path := r.URL.EscapedPath()
	if instance, ok := h.lastSegment(path, "openapi.json"); ok && h.cfg.OpenAPI {
		if r.Method != http.MethodGet {
			return refusal(catalog.CodeMethod, "use GET")
		}
		inst, denied := h.authenticate(r, instance)
		if denied != nil {
			return *denied
		}
		o := h.openAPI(r, firebird.Target{Instance: instance, Config: inst.Config})
		o.instance = instance
		return o
	}
	if instance, ok := h.lastSegment(path, "health"); ok {
		if r.Method != http.MethodGet {
			return refusal(catalog.CodeMethod, "use GET")
		}
		inst, denied := h.authenticate(r, instance)
		if denied != nil {
			return *denied
		}
		o := h.health(r.Context(), firebird.Target{Instance: instance, Config: inst.Config})
		o.instance = instance
		return o
	}
	instance, endpoint, ok := h.route(path)
	if !ok {
		return refusal(catalog.CodeNotFound, "no such path; POST to /{instance}/RestServerIsapi.dll/api/v1/"+h.cfg.Class+"/executequery or .../execute")
	}
	if r.Method != http.MethodPost {
		return refusal(catalog.CodeMethod, "use POST")
	}
	inst, denied := h.authenticate(r, instance)
	if denied != nil {
		return *denied
	}

	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, h.cfg.MaxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return refusal(catalog.CodeTooLarge, fmt.Sprintf("the body is larger than %d bytes", h.cfg.MaxBody))
	case errors.Is(err, os.ErrDeadlineExceeded):
		return refusal(catalog.CodeBodyTimeout, "the body did not arrive in time")
	case err != nil:
		return refusal(catalog.CodeNotObject, "the body could not be read")
	}
	call, refused := h.catalog.Parse(endpoint, body)
	if refused != nil {
		o := refusal(refused.Code, refused.Message)
		o.instance = instance
		return o
	}

	o := h.run(r.Context(), firebird.Target{Instance: instance, Config: inst.Config}, call)
	o.instance, o.clave = instance, call.Op.Clave
	return o
}

// authenticate checks the request's token for the instance name and only
// then resolves the instance: a request without a valid token costs no
// lookup, no cache entry and no connection, and learns nothing of which
// names exist.
func (h *Handler) authenticate(r *http.Request, instance string) (tenants.Instance, *outcome) {
	refuse := func(o outcome) (tenants.Instance, *outcome) {
		o.asked = instance
		return tenants.Instance{}, &o
	}
	if !tenants.ValidName(instance) {
		return refuse(refusal(catalog.CodeBadInstance, "the instance name must be 1 to 64 letters, digits, _ or -"))
	}
	if matched, ok := r.Context().Value(pathInstanceKey{}).(string); ok && matched != instance {
		return refuse(refusal(catalog.CodeBadInstance, "the instance name in the path is ambiguous"))
	}
	tokenID, ok := h.access.Authorize(instance, r.Header.Values("Authorization"))
	if !ok {
		return refuse(unauthorized())
	}
	inst, err := h.instances.Lookup(r.Context(), instance)
	switch {
	case errors.Is(err, tenants.ErrUnknown):
		// Exactly the answer to a wrong token: an unauthenticated caller
		// must not learn which instance names exist.
		return refuse(unauthorized())
	case err != nil:
		h.log.WarnContext(r.Context(), "instance settings unavailable", "instance", instance, "err", err)
		return refuse(refusal(catalog.CodeConfig, "the settings of instance "+instance+" cannot be read right now; try again later"))
	}
	if tokenID != "" && inst.Revoked(tokenID) {
		return refuse(unauthorized())
	}
	return inst, nil
}

func unauthorized() outcome {
	o := refusal(catalog.CodeUnauthorized, "missing or invalid credentials for this instance: send Authorization: Bearer <token>")
	o.challenge = true
	return o
}

// route matches the path's last six segments, so a stage or a custom-domain
// base path may come before the instance. The fixed segments, the class and
// the endpoint match without regard to case, as IIS did.
func (h *Handler) route(path string) (instance string, endpoint catalog.Endpoint, ok bool) {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(segs) < 6 {
		return "", "", false
	}
	s := segs[len(segs)-6:]
	if !strings.EqualFold(s[1], "RestServerIsapi.dll") || !strings.EqualFold(s[2], "api") ||
		!strings.EqualFold(s[3], "v1") || !strings.EqualFold(s[4], h.cfg.Class) {
		return "", "", false
	}
	for _, e := range h.cfg.Endpoints {
		if strings.EqualFold(s[5], string(e)) {
			return s[0], e, true
		}
	}
	return "", "", false
}

func (h *Handler) run(ctx context.Context, t firebird.Target, call catalog.Call) outcome {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	out := record.NewEncoder(dataPrefix, record.Limits{MaxRows: call.Op.MaxRows, MaxBytes: h.cfg.MaxAnswer})
	began := time.Now()
	tripped, err := h.guarded(ctx, t, call, out)
	took := time.Since(began)
	o := h.answer(ctx, t, call, out, err)
	o.dbTime, o.tripped = took, tripped
	return o
}

// answer turns a call's result into what the client sees.
func (h *Handler) answer(ctx context.Context, t firebird.Target, call catalog.Call, out *record.Encoder, err error) outcome {
	var paused *pausedError
	var exc *firebird.Exception
	nothingWritten := ""
	if call.Op.ReadBack != nil {
		nothingWritten = "; nothing was written"
	}
	switch {
	case err == nil:
		return outcome{status: http.StatusOK, body: out.Finish("}")}
	case errors.As(err, &paused):
		o := refusal(catalog.CodePaused, fmt.Sprintf("the database of instance %s failed repeatedly; calls to it are paused for %ds%s; try again later", t.Instance, retrySeconds(paused.wait), nothingWritten))
		o.retryAfter = paused.wait
		return o
	case errors.Is(err, record.ErrTooManyRows):
		return refusal(catalog.CodeTooManyRows, fmt.Sprintf("the answer of CLAVE %s has more than %d rows, its limit%s; ask for fewer (narrow the parameters)", call.Op.Clave, call.Op.MaxRows, nothingWritten))
	case errors.Is(err, record.ErrTooLarge):
		return refusal(catalog.CodeAnswerTooLarge, fmt.Sprintf("the answer of CLAVE %s would pass %d bytes, the most this service can return%s; ask for fewer rows (narrow the parameters)", call.Op.Clave, h.cfg.MaxAnswer, nothingWritten))
	case errors.As(err, &exc):
		return h.exception(exc)
	case errors.Is(err, firebird.ErrOutcomeUnknown):
		h.log.ErrorContext(ctx, "write outcome unknown", "instance", t.Instance, "clave", call.Op.Clave, "err", err)
		return refusal(catalog.CodeOutcomeUnknown, "the database of instance "+t.Instance+" did not confirm the write: it may or may not have happened; read the record before retrying")
	case errors.Is(err, firebird.ErrCannotRun):
		h.log.ErrorContext(ctx, "database cannot run the operation", "instance", t.Instance, "clave", call.Op.Clave, "err", err)
		why := "its procedure is missing, changed or not granted"
		if findings := h.diagnose(ctx, t, call.Op); len(findings) > 0 {
			why = strings.Join(findings, "; ")
		}
		return refusal(catalog.CodeUnavailable, "the database of instance "+t.Instance+" cannot run "+call.Op.Clave+" right now ("+why+")"+nothingWritten+"; try again later")
	case errors.Is(err, firebird.ErrUnavailable):
		h.log.WarnContext(ctx, "database unavailable", "instance", t.Instance, "clave", call.Op.Clave, "err", err)
		if errors.Is(err, context.DeadlineExceeded) {
			return refusal(catalog.CodeUnavailable, fmt.Sprintf("the database of instance %s did not answer within %s%s; try again later", t.Instance, h.cfg.Timeout, nothingWritten))
		}
		return refusal(catalog.CodeUnavailable, "the database of instance "+t.Instance+" is not reachable right now"+nothingWritten+"; try again later")
	default:
		h.log.ErrorContext(ctx, "call failed", "instance", t.Instance, "err", err)
		return refusal(catalog.CodeInternal, "internal error")
	}
}

// pausedError: the instance's breaker is open.
type pausedError struct{ wait time.Duration }

func (e *pausedError) Error() string { return "calls paused by the breaker" }

// guarded runs the call unless the instance's breaker is open, and tells the
// breaker how it went.
func (h *Handler) guarded(ctx context.Context, t firebird.Target, call catalog.Call, out *record.Encoder) (tripped bool, err error) {
	ticket, ok, wait := h.breakers.allow(t.Instance)
	if !ok {
		return false, &pausedError{wait: wait}
	}
	unavailable := true // a panic below counts as a failure
	defer func() {
		if tripped = h.breakers.done(t.Instance, ticket, unavailable); tripped {
			h.log.WarnContext(ctx, "breaker opened: calls to the instance paused", "instance", t.Instance)
		}
	}()
	err = h.call(ctx, t, call, out)
	if errors.Is(err, firebird.ErrCredentials) {
		// The password may have been rotated: read the instance's settings
		// again, bypassing the cache, and retry once if they changed.
		if fresh, ok := h.refreshed(ctx, t); ok {
			h.log.InfoContext(ctx, "credentials refused; retrying with refreshed settings", "instance", t.Instance)
			t.Config = fresh.Config
			err = h.call(ctx, t, call, out)
		}
	}
	// A database that answered "cannot run this" is up; one procedure's
	// trouble must not pause the instance's other operations.
	// Credentials refused are the database answering; a client that went
	// away says nothing of the database either.
	unavailable = (errors.Is(err, firebird.ErrUnavailable) && !errors.Is(err, firebird.ErrCannotRun) &&
		!errors.Is(err, firebird.ErrCredentials) && !errors.Is(err, context.Canceled)) ||
		errors.Is(err, firebird.ErrOutcomeUnknown)
	return false, err
}

func retrySeconds(d time.Duration) int { return int((d + time.Second - 1) / time.Second) }

func (h *Handler) call(ctx context.Context, t firebird.Target, call catalog.Call, out *record.Encoder) error {
	if rb := call.Op.ReadBack; rb != nil {
		return h.db.Write(ctx, t, call.Op.Procedure, call.Args, rb.Procedure, call.ReadBackArgs(), out)
	}
	return h.db.Read(ctx, t, call.Op.Procedure, call.Args, out)
}

func (h *Handler) refreshed(ctx context.Context, t firebird.Target) (tenants.Instance, bool) {
	r, ok := h.instances.(Refresher)
	if !ok {
		return tenants.Instance{}, false
	}
	fresh, err := r.Refresh(ctx, t.Instance)
	if err != nil {
		h.log.WarnContext(ctx, "refreshing instance settings", "instance", t.Instance, "err", err)
		return tenants.Instance{}, false
	}
	return fresh, fresh.Config != t.Config
}

// dataPrefix starts every answer with rows; the rows follow as they are
// fetched.
const dataPrefix = `{"cod_error":0,"data":`

// exception answers as the original did: HTTP 200, cod_error 0 and the
// database's text in ex_execsql, lines joined by CR LF.
func (h *Handler) exception(exc *firebird.Exception) outcome {
	b := make([]byte, 0, 256)
	b = append(b, `{"cod_error":0,"ex_execsql":`...)
	b = record.AppendString(b, h.cfg.ErrorPrefix+strings.Join(exc.Lines, "\r\n"))
	b = append(b, '}')
	return outcome{status: http.StatusOK, body: b, refusedByDB: true}
}

func statusOf(code catalog.Code) int {
	switch code {
	case catalog.CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case catalog.CodeBodyTimeout:
		return http.StatusRequestTimeout
	case catalog.CodeNotFound:
		return http.StatusNotFound
	case catalog.CodeMethod:
		return http.StatusMethodNotAllowed
	case catalog.CodeUnauthorized:
		return http.StatusUnauthorized
	case catalog.CodeUnavailable, catalog.CodeConfig, catalog.CodeOutcomeUnknown, catalog.CodePaused:
		return http.StatusServiceUnavailable
	case catalog.CodeInternal:
		return http.StatusInternalServerError
	case catalog.CodeTooManyRows, catalog.CodeAnswerTooLarge:
		// The request is valid and understood; what it asks for cannot be
		// answered in one response.
		return http.StatusUnprocessableEntity
	}
	return http.StatusBadRequest
}

func refusal(code catalog.Code, message string) outcome {
	status := statusOf(code)
	b := make([]byte, 0, 64+len(message))
	b = fmt.Appendf(b, `{"cod_error":%d,"ex_execsql":`, code)
	b = record.AppendString(b, message)
	b = append(b, '}')
	return outcome{status: status, code: code, body: b}
}

func (o outcome) write(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(o.body)))
	if o.status == http.StatusMethodNotAllowed {
		h.Set("Allow", http.MethodPost)
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
