package gateway

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// route is one path the handler serves: {instance} followed by suffix, whose
// segments match without regard to case, as IIS did ("{class}" stands for
// Config.Class). Before {instance} comes Config.BasePath, exactly; behind
// API Gateway, which routes only its own routes and tells the instance it
// matched (WithPathInstance), whatever its stage or mapping put there.
type route struct {
	method string
	suffix []string
	// listed: API Gateway routes it to this handler (Routes).
	listed bool
	serve  func(h *Handler, w http.ResponseWriter, r *http.Request, c caller) outcome
}

// caller is an authenticated request's instance and credentials.
type caller struct {
	target erp.Target
	// keys: the instance keeps idempotency keys; readOnly: its document's
	// user only reads (tenants.Instance.ReadOnly).
	keys, readOnly bool
	// grant is the caller's token and its limits; its id ("" for an
	// anonymous instance) is the scope of the caller's idempotency keys.
	grant erp.Grant
}

// routes is the table of what a handler with cfg serves.
func routes(cfg Config) []route {
	var rs []route
	for _, e := range cfg.Endpoints {
		rs = append(rs, route{method: http.MethodPost, listed: true,
			suffix: []string{"RestServerIsapi.dll", "api", "v1", "{class}", string(e)},
			serve: func(h *Handler, w http.ResponseWriter, r *http.Request, c caller) outcome {
				return h.execute(w, r, c, e)
			}})
		if e == catalog.ExecuteQuery {
			rs = append(rs, route{method: http.MethodGet, listed: true, suffix: []string{"health"},
				serve: func(h *Handler, _ http.ResponseWriter, r *http.Request, c caller) outcome {
					return h.health(r.Context(), c)
				}})
		}
	}
	if cfg.OpenAPI {
		rs = append(rs, route{method: http.MethodGet, suffix: []string{"openapi.json"},
			serve: func(h *Handler, _ http.ResponseWriter, r *http.Request, c caller) outcome {
				return h.openAPI(r, c.target)
			}})
	}
	return rs
}

// Routes lists what API Gateway routes to the handler as "METHOD /path" in
// its path-parameter syntax, {class} standing for Config.Class; a test holds
// template.yaml to it.
func (h *Handler) Routes() []string {
	var out []string
	for _, rt := range h.routes {
		if rt.listed {
			out = append(out, rt.method+" /{instance}/"+strings.Join(rt.suffix, "/"))
		}
	}
	return out
}

// match reports the instance the path names if it is rt's; base holds the
// segments before {instance}, or is nil for any.
func (rt route) match(segs, base []string, class string) (instance string, ok bool) {
	n := len(rt.suffix)
	if len(segs) < n+1 || base != nil && (len(segs) != len(base)+n+1 || !slices.Equal(segs[:len(base)], base)) {
		return "", false
	}
	tail := segs[len(segs)-n:]
	for i, want := range rt.suffix {
		if want == "{class}" {
			want = class
		}
		if !strings.EqualFold(tail[i], want) {
			return "", false
		}
	}
	return segs[len(segs)-n-1], true
}

// route finds r's route and the instance its path names.
func (h *Handler) route(r *http.Request) (rt route, instance string, ok bool) {
	// Routing reads the path as sent: a segment such as x%2Facme is one
	// (invalid) instance name, never the instance acme.
	segs := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	base := h.base
	if _, routed := r.Context().Value(pathInstanceKey{}).(string); routed {
		base = nil
	}
	for _, rt := range h.routes {
		if instance, ok := rt.match(segs, base, h.cfg.Class); ok {
			return rt, instance, true
		}
	}
	return route{}, "", false
}

// Admits reports whether r is a route's, with its method, and carries
// what opens its instance: what the handler checks before it reads a body.
// A server that reads bodies before the handler (the local server, whose
// requests count against its limit once their bodies arrived) asks first,
// so that a stranger's body is never read.
func (h *Handler) Admits(r *http.Request) bool {
	rt, instance, ok := h.route(r)
	if !ok || r.Method != rt.method || !erp.ValidInstanceName(instance) {
		return false
	}
	_, denied := h.access.Authorize(r.Context(), instance, r.Header.Values("Authorization"))
	return denied == nil
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request) outcome {
	if rt, instance, ok := h.route(r); ok {
		if r.Method != rt.method {
			o := refusal(erp.CodeMethod, "use "+rt.method)
			o.allow = rt.method
			return o
		}
		inst, grant, denied := h.authenticate(r, instance)
		if denied != nil {
			return *denied
		}
		// Who writes, for the ERP's triggers (erp.Origin).
		ids, _ := requestIDsOf(r.Context())
		r = r.WithContext(erp.WithOrigin(r.Context(), erp.Origin{TokenID: grant.TokenID, RequestID: ids.API}))
		o := rt.serve(h, w, r, caller{target: erp.Target{Instance: instance, Connection: inst.Connection}, keys: inst.Idempotency, readOnly: inst.ReadOnly, grant: grant})
		o.instance = instance
		o.tokenID = grant.TokenID
		return o
	}
	return refusal(erp.CodeNotFound, "no such path; POST to /{instance}/RestServerIsapi.dll/api/v1/"+h.cfg.Class+"/executequery or .../execute")
}

// execute reads, validates and runs a request to endpoint; a read's answer
// may stream to w.
func (h *Handler) execute(w http.ResponseWriter, r *http.Request, c caller, endpoint catalog.Endpoint) outcome {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, max(h.cfg.MaxBody, h.cfg.BatchBody)))
	var tooBig *http.MaxBytesError
	batch := catalog.IsBatch(body)
	switch {
	case errors.As(err, &tooBig) && batch:
		return refusal(erp.CodeTooLarge, fmt.Sprintf("the batch's body is larger than %d bytes; send its calls in several batches", h.cfg.BatchBody))
	case errors.As(err, &tooBig) || !batch && int64(len(body)) > h.cfg.MaxBody:
		return refusal(erp.CodeTooLarge, fmt.Sprintf("the body is larger than %d bytes", h.cfg.MaxBody))
	case errors.Is(err, os.ErrDeadlineExceeded):
		return refusal(erp.CodeBodyTimeout, "the body did not arrive in time")
	case err != nil:
		return refusal(erp.CodeNotObject, "the body could not be read")
	case batch:
		return h.batch(r, c, endpoint, body)
	}
	call, bad := h.catalog.Parse(endpoint, body)
	if call.Op != nil {
		// Before the body's other faults: a token's holder learns nothing
		// of an operation it may not run.
		if out := c.grant.Allow(call.Op.Clave, call.Op.Endpoint == catalog.Execute); out != nil {
			bad = out
		}
	}
	var key string
	var dry bool
	if bad == nil {
		key, dry, bad = writeHeaders(r, c, endpoint)
	}
	var o outcome
	if bad != nil {
		o = refusalOf(bad)
	} else {
		// A read alone may stream its answer (a write's is small).
		var st *stream
		if h.cfg.StreamAbove > 0 && call.Op.Endpoint == catalog.ExecuteQuery {
			st = h.newStream(w, r)
		}
		o = h.run(r.Context(), c, h.sequence([]catalog.Call{call}, true, endpoint == catalog.Execute, dry), key, st)
	}
	// A refusal of an operation's body names the operation too.
	if call.Op != nil {
		o.clave = call.Op.Clave
	}
	return o
}

// idempotencyKey is the request's Idempotency-Key on execute ("" without
// one). Reads run nothing twice, so on executequery the header changes
// nothing. A key an instance cannot keep is refused, never ignored: a client
// that believes its write is protected must not be misled.
func idempotencyKey(r *http.Request, c caller, endpoint catalog.Endpoint) (string, *erp.Error) {
	keys := r.Header.Values("Idempotency-Key")
	if endpoint != catalog.Execute || len(keys) == 0 {
		return "", nil
	}
	if len(keys) > 1 || !erp.ValidKey(keys[0]) {
		return "", erp.Refuse(erp.CodeKeyInvalid, "Idempotency-Key must be sent once, 1 to %d printable ASCII characters", erp.MaxKeyLength)
	}
	if !c.keys {
		return "", erp.Refuse(erp.CodeKeyNotEnabled, "instance %s does not keep Idempotency-Keys: its operator must install their table (make idempotency-sql) and set \"idempotency\": true in its document; send the write without the header only if a retry cannot write twice", c.target.Instance)
	}
	return keys[0], nil
}

// authenticate checks the request's token for the instance name and only
// then resolves the instance: a request without a valid token costs no
// lookup, no cache entry and no connection, and learns nothing of which
// names exist.
func (h *Handler) authenticate(r *http.Request, instance string) (tenants.Instance, erp.Grant, *outcome) {
	refuse := func(o outcome) (tenants.Instance, erp.Grant, *outcome) {
		o.asked = instance
		return tenants.Instance{}, erp.Grant{}, &o
	}
	if !erp.ValidInstanceName(instance) {
		return refuse(refusal(erp.CodeBadInstance, "the instance name must be "+erp.InstanceNameRule))
	}
	if matched, ok := r.Context().Value(pathInstanceKey{}).(string); ok && matched != instance {
		return refuse(refusal(erp.CodeBadInstance, "the instance name in the path is ambiguous"))
	}
	grant, denied := h.access.Authorize(r.Context(), instance, r.Header.Values("Authorization"))
	if denied != nil {
		o := refusalOf(denied)
		// An expired token is genuine: its id says whose it was.
		o.tokenID = grant.TokenID
		return refuse(o)
	}
	inst, err := h.instances.Lookup(r.Context(), instance)
	switch {
	case errors.Is(err, tenants.ErrUnknown):
		// Exactly the answer to a wrong token: an unauthenticated caller
		// must not learn which instance names exist.
		return refuse(refusalOf(erp.Unauthorized()))
	case err != nil:
		h.log.WarnContext(r.Context(), "instance settings unavailable", "instance", instance, "err", err)
		return refuse(refusal(erp.CodeConfig, "the settings of instance "+instance+" cannot be read right now; try again later"))
	}
	if grant.TokenID != "" && inst.Revoked(grant.TokenID) {
		return refuse(refusalOf(erp.Unauthorized()))
	}
	return inst, grant, nil
}
