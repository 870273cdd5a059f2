// Package lambdafn turns the gateway handler into the Lambda function of one
// endpoint: it builds the long-lived parts once per execution environment and
// adapts API Gateway REST (payload 1.0) events through aws-lambda-go-api-proxy.
package lambdafn

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/erp-gateway/gateway/shared/access"
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/idempotency"
	"github.com/erp-gateway/gateway/shared/settings"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// Function is one endpoint's Lambda handler.
type Function struct {
	adapter *httpadapter.HandlerAdapter
	handler http.Handler
	pools   *firebird.Pools
	log     *slog.Logger
	// streaming: the function's integration streams (HandleStream).
	streaming bool
}

// New builds the function serving endpoint with the settings read from the
// environment (infra/docs/configuration.md#configuration): read first, as
// they set the level of the log New writes to. builtCatalog is the catalog
// make build wrote into the binary, its JSON gzipped and base64'd, or
// empty. Call New once per execution environment, not per event.
func New(ctx context.Context, endpoint catalog.Endpoint, builtCatalog string, s settings.Settings, log *slog.Logger) (*Function, error) {
	// What each part of the start costs is told once, for the cold start's
	// breakdown (infra/docs/internals.md#cold-start).
	began := time.Now()
	took := func() float64 {
		now := time.Now()
		d := now.Sub(began)
		began = now
		return float64(d.Microseconds()) / 1000
	}
	cfg := s.Gateway()
	cfg.Endpoints = []catalog.Endpoint{endpoint}
	if s.ResponseStreaming {
		// Writes are always answered whole: only reads stream.
		cfg.StreamAbove = gateway.DefaultStreamAbove
	}
	cat, err := Catalog(builtCatalog, s)
	if err != nil {
		return nil, err
	}
	catalogMS := took()
	secrets := lazyAWS(ctx)
	acc, err := accessSource(ctx, s, secrets, log)
	if err != nil {
		return nil, err
	}
	accessMS := took()
	instances, err := instanceSource(s, secrets, log)
	if err != nil {
		return nil, err
	}
	opts := s.Pools(log)
	// An execution environment serves as many requests at once as Lambda
	// gives it: one on standard Lambda, AWS_LAMBDA_MAX_CONCURRENCY on managed
	// instances. That many connections per instance is all it can use, so
	// reserved concurrency (times this) caps the connections into each
	// customer's Firebird.
	opts.MaxConns = lambdacontext.MaxConcurrency()
	// Each request's log line is also its metrics (Embedded Metric Format).
	cfg.MetricsNamespace = s.MetricsNamespace
	pools := firebird.NewPools(opts)
	h := gateway.New(cfg, cat, acc, instances, idempotency.New(pools, 0), log)
	log.Info("started", "endpoint", endpoint, "gomaxprocs", runtime.GOMAXPROCS(0), "catalog_ms", catalogMS, "access_document_ms", accessMS, "rest_ms", took())
	return &Function{adapter: httpadapter.New(h), handler: h, pools: pools, log: log, streaming: s.ResponseStreaming}, nil
}

// Catalog is the catalog a binary serves: the file of the catalog setting,
// else the one built into the binary (built, as in New), else the
// specification's.
func Catalog(built string, s settings.Settings) (*catalog.Catalog, error) {
	if built == "" || s.Catalog != "" {
		return s.LoadCatalog()
	}
	zipped, err := base64.StdEncoding.DecodeString(built)
	if err != nil {
		return nil, fmt.Errorf("the catalog built into this binary: %w", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(zipped))
	if err != nil {
		return nil, fmt.Errorf("the catalog built into this binary: %w", err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("the catalog built into this binary: %w", err)
	}
	c, err := catalog.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("the catalog built into this binary: %w", err)
	}
	return c, nil
}

// lazyAWS loads the AWS configuration once, when a secret is first needed:
// sam local and tests that keep everything inline need none.
func lazyAWS(ctx context.Context) func() (*secretsmanager.Client, error) {
	return sync.OnceValues(func() (*secretsmanager.Client, error) {
		// Region, credentials and AWS_ENDPOINT_URL_SECRETS_MANAGER come from
		// the standard environment. Two attempts: a throttled or unreachable
		// Secrets Manager must answer in seconds, not hang a request.
		cfg, err := config.LoadDefaultConfig(ctx, config.WithRetryMaxAttempts(2))
		if err != nil {
			return nil, fmt.Errorf("AWS configuration: %w", err)
		}
		return secretsmanager.NewFromConfig(cfg), nil
	})
}

// accessSource reads the access document (infra/docs/configuration.md#tokens) once now, and
// again every refresh from Secrets Manager; tokens are refused once the last
// good read is older than its maximum age.
func accessSource(ctx context.Context, s settings.Settings, sm func() (*secretsmanager.Client, error), log *slog.Logger) (*access.Current, error) {
	if s.AccessJSON != "" {
		load := func(context.Context) ([]byte, error) { return []byte(s.AccessJSON), nil }
		acc, err := access.Start(ctx, load, access.Options{}, log)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", settings.EnvAccessJSON, err)
		}
		return acc, nil
	}
	if s.AccessSecret == "" {
		return nil, fmt.Errorf("no access document: set %s (or %s for sam local)", settings.EnvAccessSecret, settings.EnvAccessJSON)
	}
	client, err := sm()
	if err != nil {
		return nil, err
	}
	load := func(ctx context.Context) ([]byte, error) { return tenants.SecretString(ctx, client, s.AccessSecret) }
	// A document that cannot be read now is read again at requests, which
	// are refused (1206) until it is: never an init error, which API
	// Gateway would answer with a bare 502.
	return access.Start(ctx, load, access.Options{Every: s.AccessRefresh, MaxAge: s.AccessMaxAge, RefuseDemoKey: true}, log)
}

func instanceSource(s settings.Settings, sm func() (*secretsmanager.Client, error), log *slog.Logger) (gateway.Instances, error) {
	// For sam local and tests only: in AWS, passwords belong in Secrets
	// Manager, not in the function's environment.
	if s.InstancesJSON != "" {
		f, err := tenants.ParseFile([]byte(s.InstancesJSON))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", settings.EnvInstancesJSON, err)
		}
		if s.SecretPrefix != "" {
			log.Warn("instances read from "+settings.EnvInstancesJSON+", not from Secrets Manager: "+settings.EnvSecretPrefix+" is ignored while it is set", "instances", len(f.Names()))
		}
		return f, nil
	}
	if s.SecretPrefix == "" {
		return nil, fmt.Errorf("no instance source: set %s (or %s for sam local)", settings.EnvSecretPrefix, settings.EnvInstancesJSON)
	}
	client, err := sm()
	if err != nil {
		return nil, err
	}
	return tenants.NewCache(tenants.NewSecretsManager(client, s.SecretPrefix, s.SecretSuffix), tenants.CacheOptions{TTL: s.SecretTTL, Log: log}), nil
}

// Handle serves one API Gateway event. The Lambda deadline and the API
// Gateway request context reach the handler through ctx.
func (f *Function) Handle(ctx context.Context, event events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	ctx, ids, cancel := f.requestContext(ctx, event)
	defer cancel()
	if err := usable(event); err != nil {
		f.log.WarnContext(ctx, "unusable event", "request_id", ids.API, "lambda_request_id", ids.Lambda, "err", gateway.Loggable(err.Error()))
		return badEvent(ids.API), nil
	}
	resp, err := f.adapter.ProxyWithContext(ctx, event)
	if err != nil {
		// The event could not become an http.Request (a body that is not
		// base64, a path net/url refuses): the caller's fault, not ours.
		f.log.WarnContext(ctx, "unusable event", "request_id", ids.API, "lambda_request_id", ids.Lambda, "err", gateway.Loggable(err.Error()))
		return badEvent(ids.API), nil
	}
	return resp, nil
}

// usable refuses an event whose URL net/url does not take, before the
// request adapter sees it: the adapter would print the whole URL to the log,
// as many kilobytes as a stranger sent, where ours keeps MaxLogged of it.
func usable(event events.APIGatewayProxyRequest) error {
	path := event.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	_, err := url.Parse("https://" + event.RequestContext.DomainName + path)
	return err
}

// answerTime is kept back from Lambda's deadline: whatever the request's
// own bounds, its calls end this long before Lambda stops the function, so
// that it still sends its answer (a 503 saying the database did not answer
// in time) where API Gateway would answer a bare 502 after a secret
// lookup and a database call had together outlasted the function.
const answerTime = time.Second

// requestContext hands the handler what the event says of the request: the
// instance API Gateway matched and the request's ids, with Lambda's
// deadline less answerTime; cancel releases it once the answer is sent.
func (f *Function) requestContext(ctx context.Context, event events.APIGatewayProxyRequest) (_ context.Context, _ gateway.RequestIDs, cancel context.CancelFunc) {
	cancel = func() {}
	if deadline, ok := ctx.Deadline(); ok {
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-answerTime))
	}
	if name, ok := event.PathParameters["instance"]; ok {
		ctx = gateway.WithPathInstance(ctx, name)
	}
	ids := gateway.RequestIDs{API: event.RequestContext.RequestID}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		ids.Lambda = lc.AwsRequestID
	}
	return gateway.WithRequestIDs(ctx, ids), ids, cancel
}

// Handler is what lambda.Start serves: HandleStream where the integration
// streams, Handle where it buffers.
func (f *Function) Handler() any {
	if f.streaming {
		return f.HandleStream
	}
	return f.Handle
}

func badEvent(requestID string) events.APIGatewayProxyResponse {
	h := http.Header{"X-Request-Id": {requestID}}
	gateway.SetAnswerHeaders(h)
	return events.APIGatewayProxyResponse{
		StatusCode:        erp.CodeNotObject.Status(),
		MultiValueHeaders: h,
		Body:              string(gateway.RefusalBody(erp.CodeNotObject, "the request could not be read: malformed path or body encoding")),
	}
}

// Close releases the function's database connections.
func (f *Function) Close() error { return f.pools.Close() }

// Main is the whole main of a function binary; builtCatalog as in New.
func Main(endpoint catalog.Endpoint, builtCatalog string) {
	// On standard Lambda an execution environment serves one invocation
	// at a time (managed instances: see New), on a share of a vCPU (256
	// MB: about a seventh): one P spares each hand-off
	// between goroutines (the driver's per-call watchers, the call's guard,
	// a streamed answer's pipe) a wake-up of another thread, and the CPU
	// quota the threads that spin looking for work would burn. A warm read
	// took 0.08x less time (make coldstart). An operator's GOMAXPROCS wins.
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	s, err := settings.Read(os.Getenv)
	// The template's LogLevel filters here, and Lambda's own filter
	// (LoggingConfig.ApplicationLogLevel) stays at DEBUG: Lambda would drop
	// the request lines, the metrics, at WARN. Settings that cannot be read
	// are told at INFO, the zero level.
	all := slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelDebug})
	log := slog.New(newLevelHandler(all, s.LambdaLogLevel))
	var fn *Function
	if err == nil {
		fn, err = New(context.Background(), endpoint, builtCatalog, s, log)
	}
	if err != nil {
		log.Error("cannot start", "endpoint", endpoint, "err", err)
		os.Exit(1)
	}
	lambda.Start(fn.Handler())
}
