package gateway_test

import (
	"strings"
	"testing"

	"github.com/erp-gateway/gateway/shared/gateway"
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
