package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"time"

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

func newRequestID() string {
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

// logRequest writes the request's one line. In Lambda (a metrics namespace
// set) the line is also a CloudWatch Embedded Metric Format document, so the
// metrics cost no API call and no agent.
func (h *Handler) logRequest(ctx context.Context, r *http.Request, o outcome, work *tally.Counts, took time.Duration) {
	ms := float64(took.Microseconds()) / 1000
	attrs := []slog.Attr{
		slog.String("instance", o.instance), slog.String("clave", o.clave),
		slog.Int("status", o.status), slog.Int("cod_error", int(o.code)), slog.Float64("ms", ms),
	}
	if o.status >= 400 && o.status < 500 {
		// Scans and brute force show up as refusals from one address,
		// with the names they tried.
		attrs = append(attrs, slog.String("source_ip", sourceIP(r)), slog.String("instance_asked", o.asked))
	}
	if h.cfg.MetricsNamespace != "" {
		attrs = append(attrs, h.emf(o, work, ms)...)
	}
	h.log.LogAttrs(ctx, slog.LevelInfo, "request", attrs...)
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
	trips := 0
	if o.tripped {
		trips = 1
	}
	metric := func(name, unit string) map[string]string { return map[string]string{"Name": name, "Unit": unit} }
	return []slog.Attr{
		slog.Group("_aws",
			slog.Int64("Timestamp", time.Now().UnixMilli()),
			slog.Any("CloudWatchMetrics", []map[string]any{{
				"Namespace":  h.cfg.MetricsNamespace,
				"Dimensions": [][]string{{"Operation", "Outcome"}},
				"Metrics": []map[string]string{metric("Requests", "Count"), metric("Latency", "Milliseconds"),
					metric("DatabaseTime", "Milliseconds"), metric("BreakerTrips", "Count"),
					// What the request cost the systems it shares: a rise
					// here is a cold cache or churning connections.
					metric("SecretFetches", "Count"), metric("ConnectionOpens", "Count"), metric("StatementPrepares", "Count")},
			}, {
				// Per customer only what an operator asks per customer, as
				// every dimension combination is a metric billed monthly.
				"Namespace":  h.cfg.MetricsNamespace,
				"Dimensions": [][]string{{"Instance", "Operation", "Outcome"}},
				"Metrics":    []map[string]string{metric("Requests", "Count"), metric("Latency", "Milliseconds")},
			}}),
		),
		slog.String("Operation", operation),
		slog.String("Outcome", string(o.class())),
		slog.String("Instance", instance),
		slog.Int("Requests", 1),
		slog.Float64("Latency", ms),
		slog.Float64("DatabaseTime", float64(o.dbTime.Microseconds())/1000),
		slog.Int("BreakerTrips", trips),
		slog.Int64("SecretFetches", work.Get(tally.SecretFetches)),
		slog.Int64("ConnectionOpens", work.Get(tally.ConnectionOpens)),
		slog.Int64("StatementPrepares", work.Get(tally.StatementPrepares)),
	}
}
