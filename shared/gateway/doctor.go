package gateway

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/openapi"
	"github.com/erp-gateway/gateway/shared/record"
)

// Describer reads what a database says of procedures; *firebird.Pools is
// one. A Database that is not has no health check and plainer messages.
type Describer interface {
	Describe(ctx context.Context, t erp.Target, procedures []string) (map[string]catalog.Procedure, error)
}

// How long a database's description serves: an ERP upgrade or a new grant
// shows within it. At most descriptionsCap instances are kept; only
// authenticated requests add one.
const (
	descriptionTTL  = time.Minute
	descriptionsCap = 1024
)

type description struct {
	cfg   erp.Connection
	at    time.Time
	procs map[string]catalog.Procedure
}

type descriptions struct {
	// reading is held while a database is read, so that a burst of calls
	// the database cannot run reads it once, not once per call; waiting
	// for it ends with the caller's deadline.
	reading chan struct{}
	mu      sync.Mutex
	entries map[string]description
}

func newDescriptions() *descriptions {
	return &descriptions{reading: make(chan struct{}, 1), entries: make(map[string]description)}
}

// describe returns the instance's description of the catalog's procedures,
// read again when older than descriptionTTL. fresh reports a new reading, so
// its findings are logged once per reading rather than per request.
func (h *Handler) describe(ctx context.Context, t erp.Target) (procs map[string]catalog.Procedure, fresh bool, err error) {
	d, ok := h.db.(Describer)
	if !ok {
		return nil, false, nil
	}
	c := h.described
	cached := func() (map[string]catalog.Procedure, bool) {
		c.mu.Lock()
		defer c.mu.Unlock()
		e, hit := c.entries[t.Instance]
		return e.procs, hit && e.cfg == t.Connection && time.Since(e.at) < descriptionTTL
	}
	if procs, ok := cached(); ok {
		return procs, false, nil
	}
	select {
	case c.reading <- struct{}{}:
		defer func() { <-c.reading }()
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	if procs, ok := cached(); ok {
		return procs, false, nil
	}
	procs, err = d.Describe(ctx, t, h.catalog.Procedures())
	if err != nil {
		return nil, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= descriptionsCap {
		for name, e := range c.entries {
			if time.Since(e.at) >= descriptionTTL {
				delete(c.entries, name)
			}
		}
		if len(c.entries) >= descriptionsCap {
			clear(c.entries)
		}
	}
	c.entries[t.Instance] = description{cfg: t.Connection, at: time.Now(), procs: procs}
	return procs, true, nil
}

// diagnose explains, in the doctor's words, why the database cannot run op;
// nothing when it cannot tell.
func (h *Handler) diagnose(ctx context.Context, t erp.Target, op *catalog.Operation) []string {
	procs, fresh, err := h.describe(ctx, t)
	if err != nil || procs == nil {
		return nil
	}
	var texts []string
	for _, f := range op.Diagnose(procs) {
		texts = append(texts, f.Text)
	}
	if fresh && len(texts) > 0 {
		h.log.ErrorContext(ctx, "the catalog and the database disagree", "instance", t.Instance, "clave", op.Clave, "findings", texts)
	}
	return texts
}

// openAPI answers the deployment's OpenAPI document, its answers' columns as
// the instance's database declares them.
func (h *Handler) openAPI(r *http.Request, t erp.Target) outcome {
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.Timeout)
	defer cancel()
	procs, _, err := h.describe(ctx, t)
	if err != nil || procs == nil {
		return refusal(erp.CodeUnavailable, "the database of instance "+t.Instance+" is not reachable right now; try again later")
	}
	doc, err := openapi.Document(openapi.Input{Catalog: h.catalog, Procedures: procs, Class: h.cfg.Class, Server: "http://" + r.Host})
	if err != nil {
		return refusal(erp.CodeInternal, "internal error")
	}
	return outcome{status: http.StatusOK, body: doc}
}

// health connects to the instance's database and compares the catalog with
// it (README, "Health").
func (h *Handler) health(ctx context.Context, t erp.Target) outcome {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	if _, ok := h.db.(Describer); !ok {
		return refusal(erp.CodeNotFound, "no health check here")
	}
	procs, fresh, err := h.describe(ctx, t)
	if err != nil {
		h.log.WarnContext(ctx, "health: database unavailable", "instance", t.Instance, "err", err)
		return healthAnswer(http.StatusServiceUnavailable, erp.CodeUnavailable, "unavailable", "the database of instance "+t.Instance+" is not reachable right now", nil)
	}
	findings := h.catalog.Diagnose(procs)
	if fresh && len(findings) > 0 {
		texts := make([]string, len(findings))
		for i, f := range findings {
			texts[i] = f.Text
		}
		h.log.ErrorContext(ctx, "the catalog and the database disagree", "instance", t.Instance, "findings", texts)
	}
	status, code, word := http.StatusOK, erp.Code(0), "ok"
	for _, f := range findings {
		word = "warnings"
		if f.Fatal {
			status, code, word = http.StatusServiceUnavailable, erp.CodeUnavailable, "failing"
			break
		}
	}
	return healthAnswer(status, code, word, "", findings)
}

func healthAnswer(status int, code erp.Code, word, message string, findings []catalog.Finding) outcome {
	b := []byte(`{"cod_error":`)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"status":`...)
	b = record.AppendString(b, word)
	if message != "" {
		b = append(b, `,"ex_execsql":`...)
		b = record.AppendString(b, message)
	}
	if len(findings) > 0 {
		b = append(b, `,"findings":[`...)
		for i, f := range findings {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"clave":`...)
			b = record.AppendString(b, f.Clave)
			b = append(b, `,"fatal":`...)
			if f.Fatal {
				b = append(b, "true"...)
			} else {
				b = append(b, "false"...)
			}
			b = append(b, `,"finding":`...)
			b = record.AppendString(b, f.Text)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, '}')
	return outcome{status: status, code: code, body: b}
}
