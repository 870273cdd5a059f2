package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/calls"
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
)

// TestEveryFaultIsAnsweredOnce: each fault, for a single call and a batch,
// keyed and not, is answered by refuse with its code's status, a message
// that says what happened and, for a write, whether anything was written,
// and Retry-After where a retry in a moment may succeed; an error without a
// fault is a bug, answered 500.
func TestEveryFaultIsAnsweredOnce(t *testing.T) {
	cat := catalog.Default()
	h := New(Config{}, cat, nil, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	setTerceros, _ := cat.Lookup("Set_Terceros")
	target := erp.Target{Instance: "acme"}
	errOf := func(f *erp.Fault) error {
		if f == erp.ErrPaused {
			return &pausedError{wait: 2 * time.Second}
		}
		return fmt.Errorf("%w: the adapter's cause", f)
	}
	retries := map[*erp.Fault]bool{erp.ErrPaused: true, erp.ErrKeyInProgress: true, erp.ErrLocked: true, erp.ErrBusy: true, erp.ErrMaintenance: true}
	for _, f := range erp.Faults() {
		for _, batch := range []bool{false, true} {
			for _, keyed := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/batch=%v/keyed=%v", f, batch, keyed), func(t *testing.T) {
					q := &calls.Sequence{Single: !batch, Execute: true, Steps: []calls.Step{{Call: catalog.Call{Op: setTerceros}, Started: true}}}
					o := h.refuse(context.Background(), target, subjectOf(q, keyed), errOf(f))
					var body struct {
						CodError int    `json:"cod_error"`
						Message  string `json:"ex_execsql"`
					}
					if err := json.Unmarshal(o.body, &body); err != nil || o.status != f.Code.Status() || body.CodError != int(f.Code) || body.Message == "" {
						t.Fatalf("%d %s (%v)", o.status, o.body, err)
					}
					if (o.retryAfter > 0) != retries[f] {
						t.Errorf("Retry-After %s", o.retryAfter)
					}
					written := strings.Contains(body.Message, "nothing was written") || strings.Contains(body.Message, "nothing of the batch was written")
					switch {
					case f == erp.ErrOutcomeUnknown && keyed:
						written = strings.Contains(body.Message, "send it again with the same Idempotency-Key")
					case f == erp.ErrOutcomeUnknown:
						written = strings.Contains(body.Message, "may or may not have happened")
					case f == erp.ErrKeyInProgress:
						written = true // another request's to say
					}
					if !written {
						t.Errorf("a write's refusal does not say what was written: %s", body.Message)
					}
					if batch && f != erp.ErrKeyReused && f != erp.ErrKeyInProgress && !strings.Contains(body.Message, "batch") {
						t.Errorf("a batch's refusal does not say so: %s", body.Message)
					}
					if f.Advice != "" && f != erp.ErrOutcomeUnknown && !strings.HasSuffix(body.Message, f.Advice) && !strings.HasSuffix(body.Message, "send fewer calls") {
						t.Errorf("not ended by the fault's advice %q: %s", f.Advice, body.Message)
					}
				})
			}
		}
	}
	if o := h.refuse(context.Background(), target, subject{}, fmt.Errorf("no fault")); o.status != 500 || !strings.Contains(string(o.body), `"cod_error":1299`) {
		t.Fatalf("an error without a fault: %d %s", o.status, o.body)
	}
}
