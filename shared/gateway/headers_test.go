package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/openapi"
)

// TestDocumentedHeadersAreTheAnswers: every header the OpenAPI document
// gives one value is sent, with that value, by the answers that carry it: a
// stranger's refusal, a dry run, a replay.
func TestDocumentedHeadersAreTheAnswers(t *testing.T) {
	e, token, _ := keysEnv(t, true)
	doc, err := openapi.Document(openapi.Input{Catalog: e.cat, Class: gateway.DefaultClass, Server: "http://127.0.0.1:3000"})
	if err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Components struct {
			Headers map[string]struct{ Schema struct{ Enum []string } }
		}
	}
	if err := json.Unmarshal(doc, &parsed); err != nil {
		t.Fatal(err)
	}
	code := fmt.Sprintf("H%d", time.Now().UnixNano()%1e12)
	bearer := "Bearer " + token
	answers := []sent{
		send(t, e.h, "execute", pago(code, 1)),
		send(t, e.h, "execute", pago(code, 1), "Authorization", bearer, "Prefer", "tx=rollback"),
		send(t, e.h, "execute", pago(code, 1), "Authorization", bearer, "Idempotency-Key", code),
		send(t, e.h, "execute", pago(code, 1), "Authorization", bearer, "Idempotency-Key", code),
	}
	seen := http.Header{}
	for _, a := range answers {
		for name, values := range a.header {
			seen[name] = append(seen[name], values...)
		}
	}
	for name, h := range parsed.Components.Headers {
		if len(h.Schema.Enum) != 1 {
			continue
		}
		values := seen.Values(name)
		if len(values) == 0 {
			t.Errorf("%s: documented as %q, sent by none of the answers", name, h.Schema.Enum[0])
		}
		for _, v := range values {
			if v != h.Schema.Enum[0] {
				t.Errorf("%s: documented as %q, sent as %q", name, h.Schema.Enum[0], v)
			}
		}
	}
}
