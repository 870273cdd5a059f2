package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/erp-gateway/gateway/shared/cache"
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/openapi"
)

// Describer reads what a database says of procedures;
// *idempotency.Database is one. A Database that is not has no health check
// and plainer messages.
type Describer interface {
	// Describe reads the procedures and what keeps the gateway from what
	// it needs of the database (catalog.OrphansFinding, catalog.UserFinding
	// and, when keys, catalog.KeysFinding; nothing when all is there), in
	// one reading.
	Describe(ctx context.Context, t erp.Target, procedures []string, keys bool) (map[string]catalog.Procedure, []catalog.Finding, error)
}

// How long a database's description serves. A call the database cannot run
// is explained from one up to descriptionTTL old, read again when that one
// sees nothing wrong; the health check reads afresh unless a reading began
// at most healthReuse ago, so an ALTER or DROP shows at once. At most
// descriptionsCap readings are kept; only authenticated requests add one.
const (
	descriptionTTL  = time.Minute
	healthReuse     = time.Second
	descriptionsCap = 1024
)

// said is what one reading of a database said.
type said struct {
	procs map[string]catalog.Procedure
	// keys: the idempotency keys' table was checked; needs are the
	// findings about what the gateway needs of the database.
	keys  bool
	needs []catalog.Finding
}

// keyFindings are the findings about the keys' table: fatal, since every
// keyed write fails.
func (s said) keyFindings() []catalog.Finding {
	var out []catalog.Finding
	for _, f := range s.needs {
		if f.Clave == catalog.KeysFinding {
			out = append(out, f)
		}
	}
	return out
}

// descriptions are the latest readings, each serving the calls that would
// read the same: a burst (of calls the database cannot run, of health
// checks) reads it once, and waiting for a reading ends with the caller's
// deadline. A failed reading is not kept.
type descriptions = cache.Cache[reading, said]

// reading is what is read: an instance's database, reached with cfg, and
// its idempotency keys' table when keys.
type reading struct {
	instance string
	cfg      erp.Connection
	keys     bool
}

func newDescriptions() *descriptions {
	return cache.New[reading, said](cache.Options{TTL: descriptionTTL, MinRefresh: healthReuse, MaxEntries: descriptionsCap})
}

// describe returns what the instance's database says of the catalog's
// procedures (and of the key table, when keys), read again when the kept
// reading began more than maxAge ago. fresh reports a new reading, so its
// findings are logged once per reading rather than per request.
func (h *Handler) describe(ctx context.Context, t erp.Target, maxAge time.Duration, keys bool) (got said, fresh bool, err error) {
	d, ok := h.db.(Describer)
	if !ok {
		return said{}, false, nil
	}
	read := h.described.Get
	if maxAge < descriptionTTL {
		read = h.described.Refresh // kept for healthReuse
	}
	// Of the callers waiting for a reading, the one whose it is says so.
	var mine atomic.Bool
	got, err = read(ctx, reading{t.Instance, t.Connection, keys}, func(ctx context.Context) (said, error) {
		mine.Store(true)
		procs, needs, err := d.Describe(ctx, t, h.catalog.Procedures(), keys)
		return said{procs: procs, keys: keys, needs: needs}, err
	})
	if err != nil && erp.FaultOf(err) == nil && errors.Is(err, context.DeadlineExceeded) {
		// The wait for the reading ran out, not the reading: the database
		// did not give it in time, which the breaker counts as it counts
		// the reading's own failure.
		err = fmt.Errorf("%w: waiting for the description: %w", erp.ErrUnavailable, err)
	}
	return got, mine.Load(), err
}

// diagnose explains, in the doctor's words, why the database cannot run op
// (keyed: under an idempotency key); nothing when it cannot tell.
func (h *Handler) diagnose(ctx context.Context, t erp.Target, op *catalog.Operation, keyed bool) []string {
	findings := func(got said) []catalog.Finding {
		out := op.Diagnose(got.procs, t.Connection.User)
		if keyed {
			out = append(out, got.keyFindings()...)
		}
		return out
	}
	got, fresh, err := h.describe(ctx, t, descriptionTTL, keyed)
	if err != nil || got.procs == nil {
		return nil
	}
	found := findings(got)
	if len(found) == 0 && !fresh {
		// The call failed, yet the kept reading sees nothing wrong: the
		// database has likely changed since (ALTER, DROP, REVOKE).
		if got, fresh, err = h.describe(ctx, t, healthReuse, keyed); err != nil {
			return nil
		}
		found = findings(got)
	}
	var texts []string
	for _, f := range found {
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
	var got said
	_, err := h.breaker(ctx, t, func(ctx context.Context) (err error) {
		got, _, err = h.describe(ctx, t, descriptionTTL, false)
		return err
	})
	if errors.Is(err, erp.ErrPaused) {
		return h.refuse(ctx, t, subject{}, err)
	}
	if err != nil || got.procs == nil {
		return refusal(erp.CodeUnavailable, "the database of instance "+t.Instance+" is not reachable right now; try again later")
	}
	doc, err := openapi.Document(openapi.Input{Catalog: h.catalog, Procedures: got.procs, Class: h.cfg.Class, Server: "http://" + r.Host, BatchMax: h.cfg.BatchMax})
	if err != nil {
		return refusal(erp.CodeInternal, "internal error")
	}
	return outcome{status: http.StatusOK, body: doc}
}

// health connects to the instance's database and compares the catalog with
// it (infra/docs/catalog.md#the-doctor-and-the-health-check): afresh, since an operator asks it after changing the
// database; a read-only document's user, with the reads alone.
func (h *Handler) health(ctx context.Context, c caller) outcome {
	t, keys, grant := c.target, c.keys, c.grant
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	if _, ok := h.db.(Describer); !ok {
		return refusal(erp.CodeNotFound, "no health check here")
	}
	var got said
	var fresh bool
	_, err := h.breaker(ctx, t, func(ctx context.Context) (err error) {
		got, fresh, err = h.describe(ctx, t, healthReuse, keys)
		return err
	})
	if paused := (*pausedError)(nil); errors.As(err, &paused) {
		o := healthAnswer(http.StatusServiceUnavailable, erp.CodePaused, erp.HealthPaused, "calls to the database of instance "+t.Instance+" are paused: it did not answer in time, repeatedly", nil)
		o.retryAfter = paused.wait
		return o
	}
	if err != nil {
		h.log.WarnContext(ctx, "health: database unavailable", "instance", t.Instance, "err", err)
		return healthAnswer(http.StatusServiceUnavailable, erp.CodeUnavailable, erp.HealthUnavailable, "the database of instance "+t.Instance+" is not reachable right now", nil)
	}
	diagnose := h.catalog.Diagnose
	if c.readOnly {
		diagnose = h.catalog.DiagnoseReader
	}
	all := append(diagnose(got.procs, t.Connection.User), got.needs...)
	if fresh && len(all) > 0 {
		// A warning alone fails no call: logged as an error, a monitor
		// asking every minute would raise one a minute for a grant an
		// operator chose not to give.
		level := slog.LevelWarn
		texts := make([]string, len(all))
		for i, f := range all {
			texts[i] = f.Text
			if f.Fatal {
				level = slog.LevelError
			}
		}
		h.log.Log(ctx, level, "the catalog and the database disagree", "instance", t.Instance, "findings", texts)
	}
	// A limited token learns only of what it may run: its CLAVEs, and what
	// writes need when it may write. The status is of those findings.
	var findings []catalog.Finding
	for _, f := range all {
		op, known := h.catalog.Lookup(f.Clave)
		switch {
		case (f.Clave == catalog.KeysFinding || f.Clave == catalog.OrphansFinding || f.Clave == catalog.UserFinding) && !grant.ReadOnly, known && grant.Allow(f.Clave, op.Endpoint == catalog.Execute) == nil:
			findings = append(findings, f)
		}
	}
	status, code, word := http.StatusOK, erp.Code(0), erp.HealthOK
	for _, f := range findings {
		word = erp.HealthWarnings
		if f.Fatal {
			status, code, word = http.StatusServiceUnavailable, erp.CodeUnavailable, erp.HealthFailing
			break
		}
	}
	return healthAnswer(status, code, word, "", findings)
}

// health is a health check's answer.
type health struct {
	Code     erp.Code          `json:"cod_error"`
	Status   erp.Health        `json:"status"`
	Message  string            `json:"ex_execsql,omitempty"`
	Findings []catalog.Finding `json:"findings,omitempty"`
}

func healthAnswer(status int, code erp.Code, word erp.Health, message string, findings []catalog.Finding) outcome {
	h := health{Code: code, Status: word, Message: message, Findings: findings}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	// As every answer: text as it is, not <, > and & as \u escapes.
	enc.SetEscapeHTML(false)
	enc.Encode(h) //nolint:errcheck // strings, a bool and integers always encode
	return outcome{status: status, code: code, body: bytes.TrimSuffix(b.Bytes(), []byte("\n"))}
}
