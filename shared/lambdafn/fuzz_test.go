package lambdafn_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/lambdafn"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// FuzzEvent: whatever API Gateway (or an emulator) puts in an event, the
// function answers a JSON answer or refusal with its code, never an error,
// a panic or a 500, and a streaming function answers as a buffering one. The instance's database does not listen, so an event
// that passes every check is answered 503 and nothing is written.
func FuzzEvent(f *testing.F) {
	sm, doc := newSecretsManager(f)
	down := fbtest.Demo(f)
	down.Host, down.Port = "127.0.0.1", 1
	put(sm, "demo", tenants.Instance{Connection: down})
	fn := newFunction(f, "1m")
	env := map[string]string{"GATEWAY_SECRET_PREFIX": prefix, "GATEWAY_ACCESS_SECRET": accessID, "GATEWAY_RESPONSE_STREAMING": "true"}
	streams, err := lambdafn.New(context.Background(), catalog.ExecuteQuery, "", fbtest.Settings(f, env), slog.New(slog.DiscardHandler))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { streams.Close() })
	token := fbtest.Token(f, doc, "demo")
	const route = "/RestServerIsapi.dll/api/v1/TServiceRestInterface/executequery"
	for _, seed := range []struct {
		method, path, instance, body string
		base64                       bool
		header, value, query         string
	}{
		{"POST", "/demo" + route, "demo", `{"CLAVE":"Get_Terceros","CODIGO":"1"}`, false, "Authorization", "Bearer " + token, ""},
		{"POST", "/demo" + route, "demo", `eyJDTEFWRSI6IkdldF9UZXJjZXJvcyJ9`, true, "authorization", "Bearer " + token, "a=b"},
		{"POST", "/prod/demo" + route, "otra", `[]`, false, "Content-Encoding", "gzip", ""},
		{"GET", "/demo/health", "demo", "", false, "Accept-Encoding", "gzip", "x=%zz"},
		{"post", "demo" + route, "", "{", true, "Idempotency-Key", "k", ""},
		{"POST", "/%2e%2e/demo" + route, "demo", `{"CLAVE":"Get_Terceros"}`, false, "Content-Type", "text/plain; charset=latin1", ""},
	} {
		f.Add(seed.method, seed.path, seed.instance, seed.body, seed.base64, seed.header, seed.value, seed.query)
	}
	f.Fuzz(func(t *testing.T, method, path, instance, body string, base64 bool, header, value, query string) {
		ev := events.APIGatewayProxyRequest{
			HTTPMethod:      method,
			Path:            path,
			Body:            body,
			IsBase64Encoded: base64,
			Headers:         map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json"},
			RequestContext:  events.APIGatewayProxyRequestContext{Stage: "prod", RequestID: "r", DomainName: "abc.execute-api.us-east-1.amazonaws.com"},
		}
		if instance != "" {
			ev.PathParameters = map[string]string{"instance": instance}
		}
		if header != "" {
			ev.Headers[header] = value
		}
		if k, v, ok := strings.Cut(query, "="); ok {
			ev.QueryStringParameters = map[string]string{k: v}
		}
		resp, err := fn.Handle(context.Background(), ev)
		if err != nil {
			t.Fatalf("%+v: error %v", ev, err)
		}
		answered(t, ev, resp.StatusCode, resp.Body, resp.IsBase64Encoded || http.Header(resp.MultiValueHeaders).Get("Content-Encoding") != "")
		streamed, err := streams.HandleStream(context.Background(), ev)
		if err != nil {
			t.Fatalf("%+v: error %v", ev, err)
		}
		streamedBody, err := io.ReadAll(streamed.Body)
		if err != nil {
			t.Fatalf("%+v: reading the stream: %v", ev, err)
		}
		answered(t, ev, streamed.StatusCode, string(streamedBody), http.Header(streamed.MultiValueHeaders).Get("Content-Encoding") != "")
		plain := !resp.IsBase64Encoded && http.Header(streamed.MultiValueHeaders).Get("Content-Encoding") == ""
		if streamed.StatusCode != resp.StatusCode || plain && string(streamedBody) != resp.Body {
			t.Fatalf("%+v: buffered HTTP %d %s, streamed HTTP %d %s", ev, resp.StatusCode, resp.Body, streamed.StatusCode, streamedBody)
		}
	})
}

// answered fails t unless status and body are a JSON answer or refusal with
// its code (an encoded body is not looked into).
func answered(t *testing.T, ev events.APIGatewayProxyRequest, status int, body string, encoded bool) {
	t.Helper()
	if status == http.StatusInternalServerError || status < 200 || status > 599 {
		t.Fatalf("%+v: HTTP %d %s", ev, status, body)
	}
	if strings.EqualFold(ev.HTTPMethod, http.MethodHead) || encoded {
		return
	}
	var answer any
	if err := json.Unmarshal([]byte(body), &answer); err != nil {
		t.Fatalf("%+v: HTTP %d, not JSON: %q", ev, status, body)
	}
	if status != http.StatusOK && !strings.Contains(body, `"cod_error":`) {
		t.Fatalf("%+v: HTTP %d without a code: %s", ev, status, body)
	}
}
