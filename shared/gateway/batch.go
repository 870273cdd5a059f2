package gateway

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/erp-gateway/gateway/shared/calls"
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
)

// A batch is a JSON array of ordinary requests, run in one transaction and
// answered by an array with one element per call, each in the single
// call's shape (README.md#batches). On execute its calls run in order in
// one read-write transaction, committed only when every one succeeded; on
// executequery they are reads in one snapshot, each answering on its own.

// batch validates a batch sent to endpoint, runs it and answers it.
func (h *Handler) batch(r *http.Request, c caller, endpoint catalog.Endpoint, body []byte) outcome {
	cs, at, bad := h.catalog.ParseBatch(endpoint, body, h.cfg.BatchMax, func(op *catalog.Operation) *erp.Error {
		return c.grant.Allow(op.Clave, op.Endpoint == catalog.Execute)
	})
	var key string
	var dry bool
	if bad == nil {
		key, dry, bad = writeHeaders(r, c, endpoint)
	}
	q := h.sequence(cs, false, endpoint == catalog.Execute, dry)
	if bad == nil && key != "" && !q.Writes() {
		bad = erp.Refuse(erp.CodeKeyDryRun, "a batch with no write keeps nothing under an Idempotency-Key: send it without the header, or to executequery")
	}
	var o outcome
	if bad != nil {
		o = refusalOf(bad)
		if at >= 0 {
			o.body = append(o.body[:len(o.body)-1], fmt.Sprintf(`,"index":%d}`, at)...)
		}
	} else {
		o = h.run(r.Context(), c, q, key, nil)
	}
	o.clave = batchOperation
	o.claves = make([]string, len(cs))
	for i, call := range cs {
		o.claves[i] = call.Op.Clave
	}
	return o
}

// writeHeaders reads what a request's headers ask of its writes: its
// Idempotency-Key (idempotencyKey) and a dry run (Prefer: tx=rollback, on
// execute), refusing both at once: nothing would be kept under the key.
func writeHeaders(r *http.Request, c caller, endpoint catalog.Endpoint) (key string, dry bool, bad *erp.Error) {
	key, bad = idempotencyKey(r, c, endpoint)
	if endpoint == catalog.Execute && bad == nil {
		dry, bad = txPreference(r.Header.Values("Prefer"))
	}
	if bad == nil && dry && key != "" {
		bad = erp.Refuse(erp.CodeKeyDryRun, "a dry run (Prefer: tx=rollback) keeps nothing under an Idempotency-Key: send it without the header, or without the preference")
	}
	return key, dry, bad
}

// txPreference reads what Prefer headers (RFC 7240: comma-separated
// preferences, each a token, optionally = a value, quoted or not, and
// parameters after ";"; the first of a name counts) ask of a write's
// transaction: tx=rollback is a dry run, tx=commit the default, in any
// case. Any other value of tx is refused: a client that asked for a dry run
// must never get a commit for a spelling this service does not know.
func txPreference(prefer []string) (dry bool, bad *erp.Error) {
	for _, header := range prefer {
		prefs, closed := splitUnquoted(header, ',')
		if !closed {
			// Where the quote was meant to end decides what tx says.
			return false, erp.Refuse(erp.CodePreferInvalid, "Prefer holds a quoted string that is never closed; nothing was run")
		}
		for _, pref := range prefs {
			params, _ := splitUnquoted(pref, ';')
			name, value, _ := strings.Cut(strings.TrimSpace(params[0]), "=")
			if !strings.EqualFold(strings.TrimSpace(name), "tx") {
				continue
			}
			switch value = strings.Trim(strings.TrimSpace(value), `"`); {
			case strings.EqualFold(value, "rollback"):
				return true, nil
			case strings.EqualFold(value, "commit"):
				return false, nil
			}
			return false, erp.Refuse(erp.CodePreferInvalid, "Prefer: tx takes commit or rollback (a dry run), not %q; nothing was run", Loggable(value))
		}
	}
	return false, nil
}

// splitUnquoted splits s at each sep outside a quoted string (RFC 9110's
// quoted-string, backslash escapes included): a preference's quoted value
// may hold commas, and a tx= inside one is no preference of its own.
// closed is false when s ends inside a quoted string.
func splitUnquoted(s string, sep byte) (parts []string, closed bool) {
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case c == sep && !quoted:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:]), !quoted
}

// batchAnswer is the batch's answer: an array of each call's. A batch on
// execute fails as a whole at its first refused call, or at its commit (its
// last call then carries the database's refusal), one on executequery
// only at a reference that found nothing: then no element carries data.
func (h *Handler) batchAnswer(q *calls.Sequence) []byte {
	failed := q.Failed()
	why := fmt.Sprintf("call %d of the batch was refused", failed)
	if failed >= 0 && q.Steps[failed].Refused != nil && q.Steps[failed].Refused.Commit {
		why = fmt.Sprintf("the database refused the batch's commit (call %d's element says why)", failed)
	}
	ran, nothing := "this call ran and was rolled back", "; nothing of the batch was written"
	if !q.Writes() {
		ran, nothing = "this call ran and its answer was dropped", ""
	}
	b := []byte{'['}
	for i, st := range q.Steps {
		if i > 0 {
			b = append(b, ',')
		}
		switch {
		case i == failed && st.Unresolved != nil:
			b = append(b, RefusalBody(st.Unresolved.Code, fmt.Sprintf("call %d of the batch: %s%s", i, st.Unresolved.Message, nothing))...)
		case st.Refused != nil && (i == failed || failed < 0):
			b = append(b, h.exception(st.Refused)...)
		case failed >= 0 && (st.Ran || st.Refused != nil):
			b = append(b, RefusalBody(erp.CodeRolledBack, why+": "+ran+nothing)...)
		case failed >= 0:
			b = append(b, RefusalBody(erp.CodeNotRun, why+": this call did not run"+nothing)...)
		default:
			b = append(b, st.Out.Finish()...)
		}
	}
	return append(b, ']')
}
