package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/access"
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// TestLongInstanceSegmentWritesAShortLine: what a stranger puts in the path
// reaches the log cut to gateway.MaxLogged.
func TestLongInstanceSegmentWritesAShortLine(t *testing.T) {
	e := demoEnv(t, gateway.Config{})
	for _, segment := range []string{strings.Repeat("a", 60000), strings.Repeat("ñ", 30000)} {
		e.log.Reset()
		r := e.post(t, path(segment, "executequery"), `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`)
		if r.Status != 400 {
			t.Fatalf("%d %.200s", r.Status, r.Raw)
		}
		line := strings.TrimSpace(e.log.String())
		if len(line) >= 2048 || !strings.Contains(line, " bytes)") {
			t.Errorf("a %d-byte segment wrote a %d-byte line: %.300s", len(segment), len(line), line)
		}
	}
}

// TestHealthOfALimitedToken: a token limited to one CLAVE learns nothing of
// the others' findings; an unlimited one sees them all.
func TestHealthOfALimitedToken(t *testing.T) {
	e := newEnv(t, gateway.Config{}, map[string]any{"demo": tenants.Instance{Connection: fbtest.Demo(t)}})
	cat, err := catalog.New([]catalog.Operation{
		{Clave: "Get_Referencias", Endpoint: catalog.ExecuteQuery, Procedure: "REST_SELECT_REFERENCIA", Params: []catalog.Param{{Name: "CODIGO", MaxLen: 20, Required: true}}},
		{Clave: "Get_Secreto", Endpoint: catalog.ExecuteQuery, Procedure: "REST_NO_EXISTE"},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := gateway.New(gateway.Config{}, cat, access.Static(e.acc.Document), e.src, e.db, slog.New(slog.DiscardHandler))
	health := func(limits erp.Limits) response {
		token, _, err := e.acc.Mint("demo", limits)
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodGet, "/demo/health", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return response{Status: rec.Code, Raw: rec.Body.String()}
	}
	if r := health(erp.Limits{}); r.Status != 503 || !strings.Contains(r.Raw, "Get_Secreto") {
		t.Fatalf("unlimited: %d %s", r.Status, r.Raw)
	}
	if r := health(erp.Limits{Claves: []string{"Get_Referencias"}}); r.Status != 200 || strings.Contains(r.Raw, "Get_Secreto") || strings.Contains(r.Raw, "REST_NO_EXISTE") {
		t.Fatalf("limited to Get_Referencias: %d %s", r.Status, r.Raw)
	}
}

// TestTheAnswerLeavesBeforeItsLogLine: the client has its whole answer
// while the request's log line is still being written; it does not wait
// for our log.
func TestTheAnswerLeavesBeforeItsLogLine(t *testing.T) {
	h := waitingLog{entered: make(chan struct{}, 1), release: make(chan struct{})}
	srv := httptest.NewServer(gateway.New(gateway.Config{}, catalog.Default(), nil, nil, nil, slog.New(h)))
	defer srv.Close()
	defer close(h.release)
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(srv.URL + "/nowhere")
	if err != nil {
		t.Fatalf("the answer waited for its log line: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `"cod_error"`) {
		t.Fatalf("%d %s (%v)", resp.StatusCode, body, err)
	}
	select {
	case <-h.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("no log line was written")
	}
}

// waitingLog holds the request's log line until release is closed.
type waitingLog struct {
	entered chan struct{}
	release chan struct{}
}

func (waitingLog) Enabled(context.Context, slog.Level) bool { return true }
func (h waitingLog) WithAttrs([]slog.Attr) slog.Handler     { return h }
func (h waitingLog) WithGroup(string) slog.Handler          { return h }

func (h waitingLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "request" {
		h.entered <- struct{}{}
		<-h.release
	}
	return nil
}
