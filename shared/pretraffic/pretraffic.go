// Package pretraffic is the CodeDeploy pre-traffic hook of a function's
// canary deployment. Before the new version takes any traffic, the hook sends
// it, as API Gateway would, one read of each operation of its endpoint
// against one instance, and tells CodeDeploy to go on only if every answer is
// well formed. The execute function is never made to write: it gets one
// request the catalog must refuse, which still takes it through start-up,
// the token check and the instance's secret.
package pretraffic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/codedeploy"
	cdtypes "github.com/aws/aws-sdk-go-v2/service/codedeploy/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/smithy-go"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
)

// Invoker invokes a function version; *lambda.Client is one.
type Invoker interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, optFns ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// Reporter tells CodeDeploy a hook's verdict; *codedeploy.Client is one.
type Reporter interface {
	PutLifecycleEventHookExecutionStatus(ctx context.Context, in *codedeploy.PutLifecycleEventHookExecutionStatusInput, optFns ...func(*codedeploy.Options)) (*codedeploy.PutLifecycleEventHookExecutionStatusOutput, error)
}

// Config says what the hook checks.
type Config struct {
	Endpoint catalog.Endpoint
	// Target is the new version's ARN (qualified): the only thing invoked.
	Target string
	// Instance is read from; empty: the new version is only asked to
	// refuse a request without a token, which proves that it starts and
	// reads its settings and access document.
	Instance string
	// Class is the interface-class path segment the functions serve.
	Class string
}

// Event is what CodeDeploy invokes a lifecycle hook with.
type Event struct {
	DeploymentID                  string `json:"DeploymentId"`
	LifecycleEventHookExecutionID string `json:"LifecycleEventHookExecutionId"`
}

// Hook checks a new version and reports to CodeDeploy.
type Hook struct {
	cfg    Config
	cat    *catalog.Catalog
	invoke Invoker
	report Reporter
	// token mints a bearer token for an instance, when one is needed.
	token func(ctx context.Context, instance string) (string, error)
	log   *slog.Logger
	// broken is why the hook could not be set up; it then reports Failed.
	broken error
}

// New returns the hook.
func New(cfg Config, cat *catalog.Catalog, invoke Invoker, report Reporter, token func(context.Context, string) (string, error), log *slog.Logger) *Hook {
	return &Hook{cfg: cfg, cat: cat, invoke: invoke, report: report, token: token, log: log}
}

// Broken returns a hook that reports Failed for why, for a hook that could
// not be set up: one that exits instead leaves CodeDeploy waiting an hour
// (Lambda retries the asynchronous invocation, which fails the same way).
func Broken(report Reporter, why error, log *slog.Logger) *Hook {
	return &Hook{report: report, log: log, broken: why}
}

// reportTime is kept back from the hook's deadline to report the verdict.
const reportTime = 5 * time.Second

// Handle checks the new version and reports the verdict. It returns an error
// only when the verdict could not be reported (CodeDeploy then fails the
// deployment when the hook's hour is up).
func (h *Hook) Handle(ctx context.Context, ev Event) error {
	status := cdtypes.LifecycleEventStatusFailed
	if err := h.checkSafely(ctx, ev.DeploymentID); err != nil {
		h.log.ErrorContext(ctx, "pre-traffic check failed: the deployment will roll back", "target", h.cfg.Target, "err", err)
	} else {
		status = cdtypes.LifecycleEventStatusSucceeded
	}
	_, err := h.report.PutLifecycleEventHookExecutionStatus(ctx, &codedeploy.PutLifecycleEventHookExecutionStatusInput{
		DeploymentId:                  aws.String(ev.DeploymentID),
		LifecycleEventHookExecutionId: aws.String(ev.LifecycleEventHookExecutionID),
		Status:                        status,
	})
	if err != nil {
		return fmt.Errorf("reporting %s to CodeDeploy: %w", status, err)
	}
	return nil
}

// checkSafely is Check bounded to leave time for the verdict, and a panic
// turned into a failure, so that a verdict is always reported.
func (h *Hook) checkSafely(ctx context.Context, deploymentID string) (err error) {
	if h.broken != nil {
		return h.broken
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the check panicked: %v", p)
		}
	}()
	checkCtx := ctx
	if deadline, ok := ctx.Deadline(); ok {
		// The verdict must be sent before the hook's own timeout: a hook
		// that never reports holds the deployment for an hour. A database
		// that hangs costs each probe a whole database timeout.
		var cancel context.CancelFunc
		checkCtx, cancel = context.WithDeadline(ctx, deadline.Add(-reportTime))
		defer cancel()
	}
	return h.Check(checkCtx, deploymentID)
}

// Check sends the new version its probes and returns what was wrong with
// the answers, all of it.
func (h *Hook) Check(ctx context.Context, deploymentID string) error {
	instance, token, probes := h.cfg.Instance, "", Probes(h.cat, h.cfg.Endpoint)
	if instance == "" {
		// A version that cannot start (a setting it refuses, a binary
		// that crashes) must not take traffic even so.
		h.log.InfoContext(ctx, "pre-traffic check without an instance (PreTrafficInstance): the new version is only asked to refuse a request without a token", "target", h.cfg.Target)
		instance, probes = strangerInstance, []Probe{stranger}
	} else {
		var err error
		if token, err = h.token(ctx, instance); err != nil {
			return fmt.Errorf("minting a token for %s: %w", instance, err)
		}
	}
	var errs []error
	for i, p := range probes {
		ev := h.event(instance, p, token, fmt.Sprintf("pretraffic-%s-%d", deploymentID, i))
		if err := h.send(ctx, ev, p); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.Name, err))
			continue
		}
		h.log.InfoContext(ctx, "pre-traffic probe answered well", "probe", p.Name, "request_id", ev.RequestContext.RequestID)
	}
	return errors.Join(errs...)
}

// Probe is one request of the check and the answer it must get.
type Probe struct {
	Name string
	Body string
	// Refused is the cod_error the answer must carry, with its status;
	// zero: a read's answer (200, data or the database's own refusal).
	Refused erp.Code
}

// stranger is the probe of a hook with no instance to read: a request
// without a token, for strangerInstance.
var stranger = Probe{Name: "a request without a token", Body: `{"CLAVE":"PreTraffic_Check"}`, Refused: erp.CodeUnauthorized}

const strangerInstance = "pretraffic-check"

// Probes are the requests sent to a version serving endpoint: one read of
// each of the catalog's reads, every required parameter given an example
// value; for execute, an operation the catalog does not have.
func Probes(cat *catalog.Catalog, endpoint catalog.Endpoint) []Probe {
	// One character longer than any catalog's CLAVE, so whatever the
	// catalog, this is no operation and nothing is written.
	const head = "PreTraffic_Check_"
	unknown := []Probe{{Name: "an unknown CLAVE", Body: `{"CLAVE":"` + head + strings.Repeat("x", catalog.MaxName+1-len(head)) + `"}`, Refused: erp.CodeClaveUnknown}}
	if endpoint != catalog.ExecuteQuery {
		return unknown
	}
	var out []Probe
	for _, clave := range cat.Claves() {
		op, _ := cat.Lookup(clave)
		if op.Endpoint != endpoint {
			continue
		}
		// Every parameter gets a value, optional ones too: an optional
		// filter left out can mean "everything" (a whole price list),
		// which a deployment has no business reading from a customer's
		// database, nor waiting for.
		body := map[string]string{"CLAVE": clave}
		for _, p := range op.Params {
			body[p.Name] = p.Example()
		}
		raw, _ := json.Marshal(body) // a map of strings always marshals
		out = append(out, Probe{Name: clave, Body: string(raw)})
	}
	if len(out) == 0 {
		// A catalog without reads: still start-up, the token and the
		// instance's secret are checked.
		return unknown
	}
	return out
}

// event is the probe as API Gateway would hand it to the function.
func (h *Hook) event(instance string, p Probe, token, requestID string) events.APIGatewayProxyRequest {
	resource := "/{instance}/RestServerIsapi.dll/api/v1/{class}/" + string(h.cfg.Endpoint)
	path := "/" + instance + "/RestServerIsapi.dll/api/v1/" + h.cfg.Class + "/" + string(h.cfg.Endpoint)
	headers := map[string]string{"Content-Type": "application/json", "User-Agent": "erp-gateway-pretraffic"}
	if token != "" {
		headers["Authorization"] = "Bearer " + token
	}
	multi := make(map[string][]string, len(headers))
	for k, v := range headers {
		multi[k] = []string{v}
	}
	return events.APIGatewayProxyRequest{
		Resource: resource, Path: path, HTTPMethod: http.MethodPost,
		Headers: headers, MultiValueHeaders: multi,
		PathParameters: map[string]string{"instance": instance, "class": h.cfg.Class},
		RequestContext: events.APIGatewayProxyRequestContext{
			RequestID: requestID, ResourcePath: resource, HTTPMethod: http.MethodPost, Path: path, Stage: "pretraffic",
			Identity: events.APIGatewayRequestIdentity{SourceIP: "127.0.0.1", UserAgent: "erp-gateway-pretraffic"},
		},
		Body: p.Body,
	}
}

// send invokes the target with ev and checks the answer against p.
func (h *Hook) send(ctx context.Context, ev events.APIGatewayProxyRequest, p Probe) error {
	payload, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encoding the probe: %w", err)
	}
	var out *lambda.InvokeOutput
	for wait := time.Second; ; wait *= 2 {
		out, err = h.invoke.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(h.cfg.Target), Payload: payload})
		// The permission to invoke this version is granted in the same
		// stack update that starts the deployment, and IAM takes a few
		// seconds to apply it everywhere: a denial is asked again, for
		// half a minute, not taken for the version's failure.
		var apiErr smithy.APIError
		if err == nil || !errors.As(err, &apiErr) || apiErr.ErrorCode() != "AccessDeniedException" || wait > 16*time.Second {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("invoking the new version: %w", err)
		case <-time.After(wait):
		}
	}
	if err != nil {
		return fmt.Errorf("invoking the new version: %w", err)
	}
	if out.FunctionError != nil {
		return fmt.Errorf("the new version failed (%s): %s", *out.FunctionError, clip(out.Payload))
	}
	resp, err := proxyResponse(out.Payload)
	if err != nil {
		return err
	}
	return wellFormed(resp, p)
}

// proxyResponse reads a function's response as API Gateway does: a proxy
// response (JSON), or, from a function whose integration streams, a JSON
// prelude, eight NUL bytes and the body, which Invoke returns as written.
func proxyResponse(payload []byte) (events.APIGatewayProxyResponse, error) {
	var resp events.APIGatewayProxyResponse
	prelude, body, streamed := bytes.Cut(payload, make([]byte, 8))
	if streamed && len(prelude) <= 16<<10 && json.Unmarshal(prelude, &resp) == nil && resp.StatusCode != 0 {
		resp.Body = string(body)
		return resp, nil
	}
	resp = events.APIGatewayProxyResponse{}
	if err := json.Unmarshal(payload, &resp); err != nil || resp.StatusCode == 0 {
		return resp, fmt.Errorf("not an API Gateway proxy response: %s", clip(payload))
	}
	return resp, nil
}

// wellFormed holds an answer to what the gateway's interface promises.
func wellFormed(resp events.APIGatewayProxyResponse, p Probe) error {
	var answer struct {
		Code      *int             `json:"cod_error"`
		Data      *json.RawMessage `json:"data"`
		ExExecSQL *string          `json:"ex_execsql"`
	}
	if err := json.Unmarshal([]byte(resp.Body), &answer); err != nil || answer.Code == nil {
		return fmt.Errorf("status %d, a body without cod_error: %s", resp.StatusCode, clip([]byte(resp.Body)))
	}
	if p.Refused != 0 {
		if resp.StatusCode != p.Refused.Status() || *answer.Code != int(p.Refused) || answer.ExExecSQL == nil {
			return fmt.Errorf("want %d with cod_error %d, got %d with %s", p.Refused.Status(), p.Refused, resp.StatusCode, clip([]byte(resp.Body)))
		}
		return nil
	}
	switch {
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("status %d: %s", resp.StatusCode, clip([]byte(resp.Body)))
	case *answer.Code != 0:
		return fmt.Errorf("cod_error %d: %s", *answer.Code, clip([]byte(resp.Body)))
	case answer.ExExecSQL != nil:
		return nil // the database's own refusal, in the original's shape
	case answer.Data == nil || !strings.HasPrefix(string(*answer.Data), "["):
		return fmt.Errorf("no data array: %s", clip([]byte(resp.Body)))
	}
	return nil
}

// clip keeps an unexpected answer short enough for a log line.
func clip(b []byte) string {
	const max = 300
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
