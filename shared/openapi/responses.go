package openapi

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/erp-gateway/gateway/shared/erp"
)

// The headers answers carry, described once under components.headers.
func headers() obj {
	str := obj{{"type", "string"}}
	return obj{
		{"X-Request-Id", obj{{"description", "The request's id (API Gateway's request id in AWS): quote it to the operator, who finds the request's log line by it."}, {"schema", str}}},
		{"Cache-Control", obj{{"description", "no-store: answers are never cached."}, {"schema", oneValue("no-store")}}},
		{"X-Content-Type-Options", obj{{"description", "nosniff: the answer is JSON, never to be taken for another type."}, {"schema", oneValue("nosniff")}}},
		{"WWW-Authenticate", obj{{"description", "Send the instance's token (README.md#tokens)."}, {"schema", oneValue(`Bearer realm="erp-gateway"`)}}},
		{"Retry-After", obj{{"description", "Seconds to wait before trying again, when the gateway knows (a paused instance, the local server's bound)."}, {"schema", obj{{"type", "integer"}, {"minimum", 1}}}}},
		{"Allow", obj{{"description", "The method the path serves."}, {"schema", str}}},
		{"Preference-Applied", obj{{"description", "tx=rollback: the request ran as a dry run, and nothing of it was written."}, {"schema", oneValue("tx=rollback")}}},
		{"Idempotent-Replayed", obj{{"description", "true: the answer kept with the request's Idempotency-Key, byte for byte; nothing ran again (README.md#writes-that-are-safe-to-retry)."}, {"schema", oneValue("true")}}},
	}
}

// withHeader adds the header name to a response made by answer.
func withHeader(response obj, name string) obj {
	for i, e := range response {
		if e.k == "headers" {
			response[i].v = append(e.v.(obj), kv{name, header(name)})
		}
	}
	return response
}

// oneValue is a string that can only be v: an enum of one, not a const,
// which generators type as a string (oapi-codegen cannot bind a const's
// untyped value; ogen refuses a const discriminator).
func oneValue(v string) obj { return obj{{"type", "string"}, {"enum", []string{v}}} }

func header(name string) obj { return obj{{"$ref", "#/components/headers/" + name}} }

// headersOf are the headers an answer of status carries besides the ones
// every answer carries.
func headersOf(status int) obj {
	h := obj{{"X-Request-Id", header("X-Request-Id")}, {"Cache-Control", header("Cache-Control")}, {"X-Content-Type-Options", header("X-Content-Type-Options")}}
	switch status {
	case 401:
		h = append(h, kv{"WWW-Authenticate", header("WWW-Authenticate")})
	case 405:
		h = append(h, kv{"Allow", header("Allow")})
	case 409, 429, 503:
		// 409: a write under a key another request still holds (1404).
		h = append(h, kv{"Retry-After", header("Retry-After")})
	}
	return h
}

// answer is a response of status with content of the schemas given, one or
// one of several; examples may be nil.
func answer(status int, description string, examples obj, schemas ...obj) obj {
	schema := schemas[0]
	if len(schemas) > 1 {
		schema = obj{{"oneOf", schemas}}
	}
	media := obj{{"schema", schema}}
	if len(examples) > 0 {
		media = append(media, kv{"examples", examples})
	}
	return obj{{"description", description}, {"headers", headersOf(status)},
		{"content", obj{{"application/json", media}}}}
}

// refusals are the responses of the codes in scope, one per status, each
// naming its codes; extra adds codes of other scopes.
func refusals(scope erp.Scope, extra ...erp.Code) obj {
	byStatus := map[int][]erp.Info{}
	for _, info := range erp.Codes() {
		if info.Code != erp.CodeOK && (info.Scope&scope != 0 || slices.Contains(extra, info.Code)) {
			byStatus[info.Status] = append(byStatus[info.Status], info)
		}
	}
	statuses := make([]int, 0, len(byStatus))
	for s := range byStatus {
		statuses = append(statuses, s)
	}
	slices.Sort(statuses)
	out := obj{}
	for _, s := range statuses {
		out = append(out, kv{strconv.Itoa(s), refusal(s, byStatus[s])})
	}
	return out
}

func refusal(status int, infos []erp.Info) obj {
	var text []string
	for _, i := range infos {
		text = append(text, fmt.Sprintf("%d: %s", i.Code, i.Meaning))
	}
	return answer(status, strings.Join(text, " "), nil, ref("Refusal"))
}

// routingResponses answer a path or method no operation of the document
// serves, so they stand under components.responses, not under an
// operation where they cannot happen.
func routingResponses() obj {
	out := obj{}
	for _, r := range refusals(erp.ScopeRouting) {
		name := map[string]string{"404": "NotFound", "405": "MethodNotAllowed"}[r.k]
		if name == "" {
			name = "Status" + r.k
		}
		out = append(out, kv{name, r.v})
	}
	return out
}
