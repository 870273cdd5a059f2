package pretraffic

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/codedeploy"
	cdtypes "github.com/aws/aws-sdk-go-v2/service/codedeploy/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/smithy-go"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
)

func TestWellFormed(t *testing.T) {
	read, refusal := Probe{Name: "read"}, Probe{Name: "refusal", Refused: erp.CodeClaveUnknown}
	tests := []struct {
		name   string
		probe  Probe
		status int
		body   string
		ok     bool
	}{
		{"rows", read, 200, `{"cod_error":0,"data":[{"A":1}]}`, true},
		{"no rows", read, 200, `{"cod_error":0,"data":[]}`, true},
		{"the database's refusal", read, 200, `{"cod_error":0,"ex_execsql":"exception 1"}`, true},
		{"unavailable", read, 503, `{"cod_error":1201,"ex_execsql":"timeout"}`, false},
		{"refused by the gateway", read, 400, `{"cod_error":1006,"ex_execsql":"X is required"}`, false},
		{"an error code with 200", read, 200, `{"cod_error":1299,"ex_execsql":"internal"}`, false},
		{"no data", read, 200, `{"cod_error":0}`, false},
		{"data not an array", read, 200, `{"cod_error":0,"data":{}}`, false},
		{"not JSON", read, 200, `<html>`, false},
		{"no cod_error", read, 200, `{"data":[]}`, false},
		{"the refusal wanted", refusal, 400, `{"cod_error":1004,"ex_execsql":"CLAVE unknown"}`, true},
		{"another refusal", refusal, 401, `{"cod_error":1105,"ex_execsql":"credentials"}`, false},
		{"accepted instead of refused", refusal, 200, `{"cod_error":0,"data":[]}`, false},
		{"a stranger refused", stranger, 401, `{"cod_error":1105,"ex_execsql":"credentials"}`, true},
		{"a stranger served", stranger, 400, `{"cod_error":1004,"ex_execsql":"CLAVE unknown"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := wellFormed(events.APIGatewayProxyResponse{StatusCode: tt.status, Body: tt.body}, tt.probe)
			if (err == nil) != tt.ok {
				t.Fatalf("wellFormed = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestProbesPassValidation(t *testing.T) {
	cat := catalog.Default()
	for _, endpoint := range []catalog.Endpoint{catalog.ExecuteQuery, catalog.Execute} {
		for _, p := range Probes(cat, endpoint) {
			_, refused := cat.Parse(endpoint, []byte(p.Body))
			switch {
			case p.Refused == 0 && refused != nil:
				t.Errorf("%s %s: refused %v", endpoint, p.Body, refused)
			case p.Refused != 0 && (refused == nil || refused.Code != p.Refused):
				t.Errorf("%s %s: got %v, want cod_error %d", endpoint, p.Body, refused, p.Refused)
			}
		}
	}
}

// hangingLambda is a new version whose every invocation hangs.
type hangingLambda struct{}

func (hangingLambda) Invoke(ctx context.Context, _ *lambda.InvokeInput, _ ...func(*lambda.Options)) (*lambda.InvokeOutput, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

type verdicts struct {
	got []cdtypes.LifecycleEventStatus
}

func (v *verdicts) PutLifecycleEventHookExecutionStatus(ctx context.Context, in *codedeploy.PutLifecycleEventHookExecutionStatusInput, _ ...func(*codedeploy.Options)) (*codedeploy.PutLifecycleEventHookExecutionStatusOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v.got = append(v.got, in.Status)
	return &codedeploy.PutLifecycleEventHookExecutionStatusOutput{}, nil
}

// TestVerdictBeforeTheHooksDeadline: a new version that never answers still
// gets its Failed verdict reported before the hook's own timeout.
func TestVerdictBeforeTheHooksDeadline(t *testing.T) {
	v := &verdicts{}
	token := func(context.Context, string) (string, error) { return "t", nil }
	h := New(Config{Endpoint: catalog.ExecuteQuery, Target: "arn:v:1", Instance: "demo"}, catalog.Default(), hangingLambda{}, v, token,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithTimeout(context.Background(), reportTime+time.Second)
	defer cancel()
	if err := h.Handle(ctx, Event{DeploymentID: "d-1", LifecycleEventHookExecutionID: "e-1"}); err != nil {
		t.Fatal(err)
	}
	if len(v.got) != 1 || v.got[0] != cdtypes.LifecycleEventStatusFailed {
		t.Fatalf("verdicts %v, want one Failed", v.got)
	}
}

// scriptedLambda answers each invocation with the next of its answers.
type scriptedLambda struct {
	answers []func() (*lambda.InvokeOutput, error)
	calls   int
}

func (l *scriptedLambda) Invoke(context.Context, *lambda.InvokeInput, ...func(*lambda.Options)) (*lambda.InvokeOutput, error) {
	a := l.answers[min(l.calls, len(l.answers)-1)]
	l.calls++
	return a()
}

func TestVerdicts(t *testing.T) {
	ok := func() (*lambda.InvokeOutput, error) {
		return &lambda.InvokeOutput{Payload: []byte(`{"statusCode":200,"body":"{\"cod_error\":0,\"data\":[]}"}`)}, nil
	}
	denied := func() (*lambda.InvokeOutput, error) {
		return nil, &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "not authorized"}
	}
	tests := []struct {
		name    string
		answers []func() (*lambda.InvokeOutput, error)
		want    cdtypes.LifecycleEventStatus
	}{
		{"well-formed answers", []func() (*lambda.InvokeOutput, error){ok}, cdtypes.LifecycleEventStatusSucceeded},
		// IAM applying the new version's permission a moment late.
		{"denied twice, then allowed", []func() (*lambda.InvokeOutput, error){denied, denied, ok}, cdtypes.LifecycleEventStatusSucceeded},
		{"a check that panics", []func() (*lambda.InvokeOutput, error){func() (*lambda.InvokeOutput, error) { panic("boom") }}, cdtypes.LifecycleEventStatusFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &verdicts{}
			token := func(context.Context, string) (string, error) { return "t", nil }
			h := New(Config{Endpoint: catalog.ExecuteQuery, Target: "arn:v:1", Instance: "demo"}, catalog.Default(), &scriptedLambda{answers: tt.answers}, v, token,
				slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err := h.Handle(context.Background(), Event{DeploymentID: "d-1", LifecycleEventHookExecutionID: "e-1"}); err != nil {
				t.Fatal(err)
			}
			if len(v.got) != 1 || v.got[0] != tt.want {
				t.Fatalf("verdicts %v, want one %s", v.got, tt.want)
			}
		})
	}
}

func TestBrokenHookReportsFailed(t *testing.T) {
	v := &verdicts{}
	h := Broken(v, errors.New("GATEWAY_HOOK_ENDPOINT unset"), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := h.Handle(context.Background(), Event{DeploymentID: "d-1", LifecycleEventHookExecutionID: "e-1"}); err != nil {
		t.Fatal(err)
	}
	if len(v.got) != 1 || v.got[0] != cdtypes.LifecycleEventStatusFailed {
		t.Fatalf("verdicts %v, want one Failed", v.got)
	}
}

func TestCatalogWithoutReadsStillProbes(t *testing.T) {
	cat, err := catalog.New([]catalog.Operation{{Clave: "Set_X", Endpoint: catalog.Execute, Procedure: "P", ReadBack: &catalog.ReadBack{Procedure: "Q"}}})
	if err != nil {
		t.Fatal(err)
	}
	probes := Probes(cat, catalog.ExecuteQuery)
	if len(probes) != 1 || probes[0].Refused != erp.CodeClaveUnknown {
		t.Fatalf("probes %+v, want the unknown-CLAVE refusal", probes)
	}
}
