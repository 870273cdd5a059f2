package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/erp-gateway/gateway/shared/tally"
)

// RequestIDs identify one request: API Gateway's (requestContext.requestId,
// what an integrator quotes) and the Lambda invocation's.
type RequestIDs struct {
	API    string
	Lambda string
}

type requestIDsKey struct{}

// WithRequestIDs hands the handler the ids of the request ctx belongs to.
// Without them (the local server) the handler makes its own.
func WithRequestIDs(ctx context.Context, ids RequestIDs) context.Context {
	return context.WithValue(ctx, requestIDsKey{}, ids)
}

func requestIDsOf(ctx context.Context) (RequestIDs, bool) {
	ids, ok := ctx.Value(requestIDsKey{}).(RequestIDs)
	return ids, ok && ids.API != ""
}

// NewRequestID makes a request's id where API Gateway gives none (the local
// server): what its answer's X-Request-Id says.
func NewRequestID() string {
	b := make([]byte, 16)
	rand.Read(b) //nolint:errcheck // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// requestLog is a slog.Handler that adds the request's ids to every line
// logged with its context, whichever package logs it.
type requestLog struct{ slog.Handler }

func (h requestLog) Handle(ctx context.Context, r slog.Record) error {
	if ids, ok := requestIDsOf(ctx); ok {
		r.AddAttrs(slog.String("request_id", ids.API))
		if ids.Lambda != "" {
			r.AddAttrs(slog.String("lambda_request_id", ids.Lambda))
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestLog) WithAttrs(as []slog.Attr) slog.Handler {
	return requestLog{h.Handler.WithAttrs(as)}
}

func (h requestLog) WithGroup(name string) slog.Handler {
	return requestLog{h.Handler.WithGroup(name)}
}

// sourceIP is the client's address: API Gateway's sourceIp (the adapter puts
// it in RemoteAddr) or the peer of the local server.
func sourceIP(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// MaxLogged bounds what a log line holds of a value the request's sender
// chose (the instance segment asked for, an error quoting the path): a
// stranger must not write kilobytes into the logs per request.
const MaxLogged = 128

// Loggable is s cut to MaxLogged bytes at a character's start, saying how
// long it was.
func Loggable(s string) string {
	if len(s) <= MaxLogged {
		return s
	}
	cut := MaxLogged
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:cut], len(s))
}

// logRequest writes the request's one line. In Lambda (a metrics namespace
// set) the line is also a CloudWatch Embedded Metric Format document, so the
// metrics cost no API call and no agent.
func (h *Handler) logRequest(ctx context.Context, r *http.Request, o outcome, work *tally.Counts, took time.Duration) {
	ms := float64(took.Microseconds()) / 1000
	attrs := []slog.Attr{
		slog.String("instance", o.instance), slog.String("clave", o.clave),
		slog.Int("status", o.status), slog.Int("cod_error", int(o.code)), slog.Float64("ms", ms),
		// A slow link or a chatty procedure shows as round trips.
		slog.Int64("round_trips", work.Get(tally.RoundTrips)),
	}
	if len(o.claves) > 0 {
		attrs = append(attrs, slog.String("claves", strings.Join(o.claves, ",")), slog.Int("batch_size", len(o.claves)))
	}
	if o.tokenID != "" {
		// Which integrator did it: the id, never the token.
		attrs = append(attrs, slog.String("token_id", o.tokenID))
	}
	if o.replayed {
		attrs = append(attrs, slog.Bool("replayed", true))
	}
	if o.status >= 400 && o.status < 500 {
		// Scans and brute force show up as refusals from one address,
		// with the names they tried.
		attrs = append(attrs, slog.String("source_ip", sourceIP(r)), slog.String("instance_asked", Loggable(o.asked)))
	}
	if h.cfg.MetricsNamespace != "" {
		attrs = append(attrs, h.emf(o, work, ms)...)
	}
	h.log.LogAttrs(ctx, slog.LevelInfo, "request", attrs...)
}

// metric is one metric of the requests' log lines.
type metric struct {
	Name, Unit string
	// PerInstance: also by Instance. Per customer only what an operator
	// asks per customer, as every dimension combination is a metric billed
	// monthly.
	PerInstance bool
	// value reads the metric from a request's measure, beside its name so
	// that a metric cannot be declared and never given a value.
	value func(measure) float64
}

// measure is what a request's metrics are read from.
type measure struct {
	o    outcome
	work *tally.Counts
	ms   float64
}

// count reads a side counter of the request's work.
func count(k tally.Kind) func(measure) float64 {
	return func(m measure) float64 { return float64(m.work.Get(k)) }
}

// metrics lists the metrics every request's line carries, by Operation and
// Outcome (erp.Outcome); the template's alarms and dashboard are held to it.
func metrics() []metric {
	return []metric{
		{"Requests", "Count", true, func(measure) float64 { return 1 }},
		{"Latency", "Milliseconds", true, func(m measure) float64 { return m.ms }},
		{"DatabaseTime", "Milliseconds", false, func(m measure) float64 { return float64(m.o.dbTime.Microseconds()) / 1000 }},
		{"BreakerTrips", "Count", false, func(m measure) float64 {
			if m.o.tripped {
				return 1
			}
			return 0
		}},
		// What the request cost the systems it shares: a rise here is a
		// cold cache or churning connections.
		{"SecretFetches", "Count", false, count(tally.SecretFetches)},
		{"ConnectionOpens", "Count", false, count(tally.ConnectionOpens)},
		{"StatementPrepares", "Count", false, count(tally.StatementPrepares)},
		{"RoundTrips", "Count", false, count(tally.RoundTrips)},
		// A batch's calls; a single call counts 0.
		{"BatchCalls", "Count", false, func(m measure) float64 { return float64(len(m.o.claves)) }},
		// Attachments a cut link left behind, cancelled before the call.
		{"OrphansCancelled", "Count", false, count(tally.OrphansCancelled)},
	}
}

// emf is the Embedded Metric Format part of a request's line: the metadata
// under _aws and the dimension and metric values as top-level members.
func (h *Handler) emf(o outcome, work *tally.Counts, ms float64) []slog.Attr {
	operation := o.clave
	if operation == "" {
		operation = "-" // CloudWatch refuses empty dimension values
	}
	// Only an authenticated instance becomes a dimension: names a stranger
	// sends must not create metrics (each is billed).
	instance := o.instance
	if instance == "" {
		instance = "-"
	}
	var all, perInstance []map[string]string
	attrs := []slog.Attr{
		slog.String("Operation", operation),
		slog.String("Outcome", string(o.class())),
		slog.String("Instance", instance),
	}
	for _, m := range metrics() {
		def := map[string]string{"Name": m.Name, "Unit": m.Unit}
		all = append(all, def)
		if m.PerInstance {
			perInstance = append(perInstance, def)
		}
		attrs = append(attrs, slog.Float64(m.Name, m.value(measure{o, work, ms})))
	}
	return append([]slog.Attr{
		slog.Group("_aws",
			slog.Int64("Timestamp", time.Now().UnixMilli()),
			slog.Any("CloudWatchMetrics", []map[string]any{
				{"Namespace": h.cfg.MetricsNamespace, "Dimensions": [][]string{{"Operation", "Outcome"}}, "Metrics": all},
				{"Namespace": h.cfg.MetricsNamespace, "Dimensions": [][]string{{"Instance", "Operation", "Outcome"}}, "Metrics": perInstance},
			}),
		),
	}, attrs...)
}
