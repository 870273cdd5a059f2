// Package gateway is the HTTP face of the service: it routes
// POST /{instance}/RestServerIsapi.dll/api/v1/{class}/{executequery|execute},
// resolves the instance, validates the body against the catalog, runs the
// call and writes the original service's JSON. The Lambdas, the local server
// and the tests all serve this one handler.
package gateway

import (
	"cmp"
	"compress/gzip"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/erp-gateway/gateway/shared/calls"
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/tally"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// Database runs a request's calls (package calls) in an instance's
// database; *idempotency.Database is the real one.
type Database interface {
	// Run runs q, under k when not nil, keeping answer() under it; it
	// returns the answer kept before, with replayed, when k was.
	Run(ctx context.Context, t erp.Target, q *calls.Sequence, k *erp.Key, answer func() []byte) (kept []byte, replayed bool, err error)
	// Ping makes one round trip to the instance's database, connecting
	// first when it must: the breaker's probe, failed once the database
	// has been silent for silence while it waits.
	Ping(ctx context.Context, t erp.Target, silence time.Duration) error
}

// Access checks a request's credentials for an instance name before any
// per-instance work; *access.Current is the real one. It returns what they
// grant, or the refusal.
type Access interface {
	Authorize(ctx context.Context, instance string, authorization []string) (erp.Grant, *erp.Error)
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
	// BasePath comes before {instance} in every path served where API
	// Gateway does not route (the local server): "" by default, a custom
	// domain's mapping such as /erp to serve the URLs a deployment has.
	BasePath string
	// ErrorPrefix starts every ex_execsql, before "exception N". A
	// deployment may set "[FireDAC][Phys][FB]" to match the original.
	ErrorPrefix string
	// MaxBody is the largest request body accepted, in bytes.
	MaxBody int64
	// BatchMax is the most calls a batch may hold, BatchBody the largest
	// batch's body, and BatchTimeout bounds a whole batch.
	BatchMax     int
	BatchBody    int64
	BatchTimeout time.Duration
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
	// KeyTTL is how long an idempotency key is kept.
	KeyTTL time.Duration
	// StreamAbove, when not zero, makes a read whose answer passes this
	// many bytes stream it (DefaultStreamAbove); zero sends every answer
	// whole, up to MaxAnswer (a Lambda whose integration buffers).
	StreamAbove int
	// StreamTimeout bounds a streaming read from its start.
	StreamTimeout time.Duration
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
	DefaultKeyTTL    = 24 * time.Hour
	// A batch's defaults: 100 calls of two round trips each over a 100 ms
	// link take 20 s, within the execute function's 25 s (and API
	// Gateway's 29 s) with room to answer; 100 Set_Terceros of
	// their longest values take about 400 KB.
	DefaultBatchMax     = 100
	DefaultBatchBody    = 1 << 20
	DefaultBatchTimeout = 22 * time.Second
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
	routes    []route
	// base: BasePath's segments, matched exactly where API Gateway does not
	// route.
	base  []string
	gzips sync.Pool // *gzip.Writer of streaming answers
}

// New builds the handler from long-lived parts made once by main.
func New(cfg Config, cat *catalog.Catalog, acc Access, instances Instances, db Database, log *slog.Logger) *Handler {
	cfg.Class = cmp.Or(cfg.Class, DefaultClass)
	cfg.ErrorPrefix = cmp.Or(cfg.ErrorPrefix, DefaultErrorPrefix)
	cfg.MaxBody = cmp.Or(cfg.MaxBody, DefaultMaxBody)
	cfg.Timeout = cmp.Or(cfg.Timeout, DefaultTimeout)
	cfg.BatchMax = cmp.Or(cfg.BatchMax, DefaultBatchMax)
	cfg.BatchBody = cmp.Or(cfg.BatchBody, DefaultBatchBody)
	cfg.BatchTimeout = cmp.Or(cfg.BatchTimeout, DefaultBatchTimeout)
	cfg.MaxAnswer = cmp.Or(cfg.MaxAnswer, DefaultMaxAnswer)
	cfg.KeyTTL = cmp.Or(cfg.KeyTTL, DefaultKeyTTL)
	cfg.StreamTimeout = cmp.Or(cfg.StreamTimeout, DefaultStreamTimeout)
	if len(cfg.Endpoints) == 0 {
		cfg.Endpoints = []catalog.Endpoint{catalog.ExecuteQuery, catalog.Execute}
	}
	if log != nil {
		log = slog.New(requestLog{log.Handler()})
	}
	h := &Handler{cfg: cfg, catalog: cat, access: acc, instances: instances, db: db, log: log, described: newDescriptions(), breakers: newBreakers(cfg.Breaker), routes: routes(cfg), base: []string{}}
	if p := strings.Trim(cfg.BasePath, "/"); p != "" {
		h.base = strings.Split(p, "/")
	}
	// BestSpeed: a price list shrinks to a tenth either way, and the
	// function's CPU is billed while it compresses.
	h.gzips.New = func() any { zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed); return zw }
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	// A client that leaves does not cancel its calls, as in Lambda, where
	// API Gateway holds the invocation: a write cut short by a client's
	// going would cost the customer's database a cancelled statement and a
	// discarded attachment, and a client that half-closes its end after
	// its request (an HTTP/1.0 habit), which net/http takes for leaving,
	// would be told its database is down. The calls keep their deadline;
	// a streamed answer stops at its first write that fails.
	ctx := context.WithoutCancel(r.Context())
	if deadline, ok := r.Context().Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	ids, ok := requestIDsOf(ctx)
	if !ok {
		ids.API = NewRequestID()
		ctx = WithRequestIDs(ctx, ids)
	}
	// The id an integrator's support ticket can quote.
	w.Header().Set("X-Request-Id", ids.API)
	var work tally.Counts
	r = r.WithContext(tally.With(ctx, &work))
	o := outcome{status: http.StatusOK}
	defer func() {
		if p := recover(); p != nil {
			h.log.ErrorContext(r.Context(), "panic serving request", "panic", fmt.Sprint(p))
			o = refusal(erp.CodeInternal, "internal error")
			o.write(w)
		}
		if o.cut == nil {
			// The answer leaves before its log line is written: the
			// client does not wait for our log (the local server, a
			// streamed answer; Lambda's buffered answer leaves on return).
			http.NewResponseController(w).Flush() //nolint:errcheck // a writer that cannot flush sends the answer on return
		}
		h.logRequest(r.Context(), r, o, &work, time.Since(start))
		if o.cut != nil {
			// The status is sent: only an unended body (no last chunk, no
			// gzip trailer) tells the client the answer is not whole.
			panic(http.ErrAbortHandler)
		}
	}()
	o = h.serve(w, r)
	if !o.streamed {
		o.write(w)
	}
}

type pathInstanceKey struct{}

// WithPathInstance tells the handler which instance name API Gateway matched
// ({instance} of pathParameters). The handler then serves that name or
// nothing, so a control keyed on {instance} (an authorizer, a WAF rule, a
// usage plan) sees the name that is served.
func WithPathInstance(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, pathInstanceKey{}, name)
}
