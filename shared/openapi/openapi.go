// Package openapi describes a deployment as an OpenAPI 3.1 document: its
// catalog's operations (requests), the database's declared output
// parameters (answers), every refusal, the bearer scheme and examples.
// `make openapi` writes it; the local server serves it.
package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
)

// Input is what a document is made from.
type Input struct {
	Catalog *catalog.Catalog
	// Procedures is what the database says of the catalog's procedures
	// (firebird.Describe); an operation whose procedure is missing gets an
	// answer schema without columns.
	Procedures map[string]catalog.Procedure
	Class      string // the interface-class path segment
	Server     string // base URL, e.g. http://127.0.0.1:3000
	Examples   []Example
	BatchMax   int // the most calls of a batch (GATEWAY_BATCH_MAX)
}

// obj is a JSON object whose keys keep their order: the order of a row's
// columns is part of the contract.
type obj []kv

type kv struct {
	k string
	v any
}

func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(e.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(e.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func ref(name string) obj { return obj{{"$ref", "#/components/schemas/" + name}} }

// Document writes the OpenAPI 3.1 document, indented, ending in a newline.
func Document(in Input) ([]byte, error) {
	schemas := obj{}
	reads, writes := obj{}, obj{}
	for _, clave := range in.Catalog.Claves() {
		op, _ := in.Catalog.Lookup(clave)
		schemas = append(schemas,
			kv{clave + ".request", requestSchema(op)},
			kv{clave + ".answer", answerSchema(op, in.Procedures)})
		if op.Endpoint == catalog.ExecuteQuery {
			reads = append(reads, kv{clave, op})
		} else {
			writes = append(writes, kv{clave, op})
		}
	}
	schemas = append(schemas,
		kv{"DatabaseRefusal", obj{
			{"description", "The database refused the call: a procedure's exception (then ex_execsql holds `exception <N>`, the exception's name, its message and `At procedure '<NAME>' line: <n>, col: <n>`, after the deployment's prefix, joined by CR LF), a constraint, a lock or a conversion. HTTP 200, as the original service answered."},
			{"type", "object"}, {"required", []string{"cod_error", "ex_execsql"}}, {"additionalProperties", false},
			{"properties", obj{{"cod_error", obj{{"const", 0}}}, {"ex_execsql", obj{{"type", "string"}}}}},
		}},
		kv{"Answer", obj{
			{"description", "An answer of either endpoint, one call's: its rows (data), the database's refusal or a batch call's outcome (ex_execsql). The columns of each CLAVE's rows are in its own schema, <CLAVE>.answer: decode data with it (answers are open to columns the ERP adds later). One schema for every CLAVE, because the path is the same for all and a generator cannot tell their answers apart."},
			{"type", "object"}, {"required", []string{"cod_error"}},
			{"properties", obj{
				{"cod_error", obj{{"type", "integer"}, {"minimum", 0}, {"description", fmt.Sprintf("0, or a batch call's code (%d-%d; %d, %d or %d for a $from value its parameter refuses).", erp.CodeRolledBack, erp.CodeReferenceMissing, erp.CodeParamMissing, erp.CodeParamTooLong, erp.CodeParamFormat)}}},
				{"data", obj{{"type", "array"}, {"items", obj{{"type", "object"}, {"additionalProperties", true}}}}},
				{"ex_execsql", obj{{"type", "string"}}},
			}},
		}},
		kv{"Reference", obj{
			{"description", "In a batch, a value taken from an earlier call's answer: column $field of the first row of call $from (from 0)."},
			{"type", "object"}, {"required", []string{"$from", "$field"}}, {"additionalProperties", false},
			{"properties", obj{{"$from", obj{{"type", "integer"}, {"minimum", 0}}}, {"$field", obj{{"type", "string"}, {"minLength", 1}, {"maxLength", catalog.MaxName}}}}},
		}},
		kv{"Refusal", obj{
			{"description", "A request the gateway refused before or instead of running it; the codes are in the README.md#error-codes."},
			{"type", "object"}, {"required", []string{"cod_error", "ex_execsql"}}, {"additionalProperties", false},
			{"properties", obj{{"cod_error", obj{{"type", "integer"}, {"minimum", erp.Codes()[1].Code} /* the table is in order, success first */}}, {"ex_execsql", obj{{"type", "string"}}},
				{"index", obj{{"type", "integer"}, {"minimum", 0}, {"description", "A batch refused before it ran: the call (from 0) the refusal is about, also named in ex_execsql."}}}}},
		}},
		kv{"Health", obj{
			{"type", "object"}, {"required", []string{"cod_error", "status"}},
			{"properties", obj{
				{"cod_error", obj{{"type", "integer"}}},
				{"status", obj{{"enum", erp.Healths()}}},
				{"ex_execsql", obj{{"type", "string"}}},
				{"findings", obj{{"type", "array"}, {"items", obj{
					{"type", "object"}, {"required", []string{"clave", "fatal", "finding"}},
					{"properties", obj{{"clave", obj{{"type", "string"}}}, {"fatal", obj{{"type", "boolean"}}}, {"finding", obj{{"type", "string"}}}}},
				}}}},
			}},
		}},
	)
	paths := obj{}
	for _, e := range []struct {
		endpoint catalog.Endpoint
		ops      obj
	}{{catalog.ExecuteQuery, reads}, {catalog.Execute, writes}} {
		if len(e.ops) > 0 {
			op, request := operation(in, e.endpoint, e.ops)
			paths = append(paths, kv{"/{instance}/RestServerIsapi.dll/api/v1/{class}/" + string(e.endpoint), obj{{"post", op}}})
			schemas = append(schemas, kv{requestName(e.endpoint), request})
		}
	}
	paths = append(paths, kv{"/{instance}/health", obj{{"get", health()}}},
		kv{"/{instance}/openapi.json", obj{{"get", self()}}})
	doc := obj{
		{"openapi", "3.1.0"},
		{"info", obj{
			{"title", "ERP gateway"},
			{"version", "1"},
			{"description", "The vendor's REST interface, served from Firebird stored procedures: reads on executequery, writes on execute. Generated by make openapi from the catalog and the database's procedure parameters."},
		}},
		{"servers", []obj{{{"url", in.Server}}}},
		{"security", []obj{{{"bearer", []string{}}}}},
		{"paths", paths},
		{"components", obj{
			{"securitySchemes", obj{{"bearer", obj{{"type", "http"}, {"scheme", "bearer"}, {"description", "The instance's token, minted by its operator with make token (README.md#tokens). A token may be limited to reads (READ_ONLY=1), to a list of CLAVEs (CLAVES=...) and to a last day (EXPIRES=YYYY-MM-DD): a request outside its limits gets 403 with cod_error " + strconv.Itoa(int(erp.CodeOutOfScope)) + " naming the CLAVE, an expired token 401 with " + strconv.Itoa(int(erp.CodeTokenExpired)) + ". The operator revokes one token by its id (revoked_tokens of the instance document), or every token of a key by removing the key."}}}}},
			{"schemas", schemas},
			{"headers", headers()},
			{"responses", routingResponses()},
		}},
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

func pathParams(class string) []obj {
	return []obj{
		{{"name", "instance"}, {"in", "path"}, {"required", true}, {"description", "The ERP instance."},
			{"schema", obj{{"type", "string"}, {"pattern", erp.InstanceNamePattern}}}},
		{{"name", "class"}, {"in", "path"}, {"required", true}, {"description", "The interface class of the vendor's path."},
			{"schema", oneValue(class)}},
	}
}

// requestName names the schema of an endpoint's request body. A body of
// its own, not one inline: oapi-codegen's type for an inline union body
// loses the union's JSON encoding, and sends {}.
func requestName(endpoint catalog.Endpoint) string { return "Request." + string(endpoint) }

// operation is the endpoint's operation, and the schema of its request body.
func operation(in Input, endpoint catalog.Endpoint, ops obj) (op, request obj) {
	var requests []obj
	var claves []string // a batch's: these, and on execute the reads
	mapping := obj{}
	for _, e := range ops {
		requests = append(requests, ref(e.k+".request"))
		mapping = append(mapping, kv{e.k, "#/components/schemas/" + e.k + ".request"})
		claves = append(claves, e.k)
	}
	reqExamples, ansExamples := obj{}, obj{}
	for _, e := range ops {
		reqExamples = append(reqExamples, kv{e.k, obj{{"summary", "Every required parameter, with a value of its form"}, {"value", catalogExample(e.v.(*catalog.Operation))}}})
	}
	for i, ex := range in.Examples {
		if ex.Endpoint != endpoint || ex.Status != 200 {
			continue
		}
		name := fmt.Sprintf("%s_%d", claveOf(ex.Request), i+1)
		reqExamples = append(reqExamples, kv{name, obj{{"value", json.RawMessage(ex.Request)}}})
		ansExamples = append(ansExamples, kv{name, obj{{"value", json.RawMessage(ex.Answer)}}})
	}
	single := obj{{"oneOf", requests}, {"discriminator", obj{{"propertyName", "CLAVE"}, {"mapping", mapping}}}}
	batchCalls := "reads, in one snapshot: all see the same moment, each answers on its own"
	if endpoint == catalog.Execute {
		// A batch on execute may read what its writes wrote.
		for _, clave := range in.Catalog.Claves() {
			if op, _ := in.Catalog.Lookup(clave); op.Endpoint == catalog.ExecuteQuery {
				claves = append(claves, clave)
			}
		}
		batchCalls = "writes and reads, in order, in one transaction committed only when every call succeeded"
	}
	// A call of a batch is its operation's request, but that any value may
	// be a Reference: described as such, not as a second schema per
	// operation, whose CLAVE constants would rename those of every client
	// generated before (oapi-codegen's SetPrecio took another name).
	call := obj{{"type", "object"}, {"required", []string{"CLAVE"}},
		{"description", "A call: the request of operation CLAVE (<CLAVE>.request), whose values may each be a Reference."},
		// Its CLAVEs named in the description, not an enum, for the same
		// reason.
		{"properties", obj{{"CLAVE", obj{{"type", "string"}, {"description", "One of " + strings.Join(claves, ", ") + "."}}}}},
		{"additionalProperties", obj{{"anyOf", []obj{{{"type", []string{"string", "null"}}}, ref("Reference")}}}}}
	batch := obj{{"type", "array"}, {"minItems", 1}, {"maxItems", in.BatchMax},
		{"description", "A batch (README.md#batches): " + batchCalls + ". A parameter's value may be a Reference: {\"$from\": i, \"$field\": \"NAME\"}, column NAME of the first row of call i's answer (i from 0, an earlier call)."},
		{"items", call}}
	request = obj{{"oneOf", []obj{single, batch}}}
	reqMedia := obj{{"schema", ref(requestName(endpoint))}}
	reqMedia = append(reqMedia, kv{"examples", reqExamples})
	// An object or an array: generators tell the two apart by the JSON
	// type, which they cannot do between the operations' answers.
	ok := answer(200, "One call's answer: the procedure's rows (`data`, each row's keys in the procedure's output order, as <CLAVE>.answer describes them), or the database's refusal (`ex_execsql`); for a batch, an array of them.", ansExamples,
		obj{{"oneOf", []obj{ref("Answer"), {{"type", "array"}, {"description", "A batch's answer: one element per call, in order, each in the single call's shape; a failed batch's elements carry no data (codes " + fmt.Sprintf("%d-%d; %d, %d or %d for a $from value its parameter refuses", erp.CodeRolledBack, erp.CodeReferenceMissing, erp.CodeParamMissing, erp.CodeParamTooLong, erp.CodeParamFormat) + ")."}, {"items", ref("Answer")}}}}})
	summary, scope := "Run a read operation (a selectable procedure)", erp.ScopeEdge|erp.ScopeInstance|erp.ScopeBody|erp.ScopeDatabase
	params := pathParams(in.Class)
	if endpoint == catalog.Execute {
		summary, scope = "Run a write operation (an executable procedure, answered by its read-back or its outputs)", scope|erp.ScopeWrite
		params = append(params, obj{{"name", "Idempotency-Key"}, {"in", "header"}, {"required", false},
			{"description", "Makes the write safe to retry: the same key with the same request answers the first answer, byte for byte, and writes nothing again (README.md#writes-that-are-safe-to-retry). Only on instances that keep keys."},
			{"schema", obj{{"type", "string"}, {"minLength", 1}, {"maxLength", erp.MaxKeyLength}, {"pattern", `^[\x20-\x7e]+$`}}}})
		params = append(params, obj{{"name", "Prefer"}, {"in", "header"}, {"required", false},
			{"description", "tx=rollback (RFC 7240): a dry run. Everything runs and answers as it would, then is rolled back; numbers a generator handed out are used up, so they differ from a real run's. Refused with an Idempotency-Key (" + strconv.Itoa(int(erp.CodeKeyDryRun)) + ")."},
			{"schema", obj{{"type", "string"}}}})
		ok = withHeader(withHeader(ok, "Idempotent-Replayed"), "Preference-Applied")
	}
	return obj{
		{"operationId", string(endpoint)},
		{"summary", summary},
		{"parameters", params},
		{"requestBody", obj{{"required", true}, {"content", obj{{"application/json", reqMedia}}}}},
		{"responses", append(obj{{"200", ok}}, refusals(scope)...)},
	}, request
}

func health() obj {
	responses := obj{{"200", answer(200, "ok, or warnings", nil, ref("Health"))}}
	for _, r := range refusals(erp.ScopeEdge | erp.ScopeInstance) {
		if r.k == "503" {
			// The health check answers its own document when the database
			// fails; the instance's settings failing is a refusal.
			r.v = answer(503, fmt.Sprintf("failing (a fatal finding) or unavailable; or %d: %s", erp.CodeConfig, erp.CodeConfig.Info().Meaning), nil, ref("Health"), ref("Refusal"))
		}
		responses = append(responses, r)
	}
	return obj{
		{"operationId", "health"},
		{"summary", "Connect to the instance's database and compare the catalog with it"},
		{"parameters", pathParams("")[:1]},
		{"responses", responses},
	}
}

// self is this document's own path: the local server serves it (make run);
// a Lambda deployment does not.
func self() obj {
	return obj{
		{"operationId", "openapi"},
		{"summary", "This document, its answers' columns as the instance's database declares them (the local server only)"},
		{"parameters", pathParams("")[:1]},
		{"responses", append(obj{{"200", answer(200, "The OpenAPI 3.1 document.", nil, obj{{"type", "object"}})}},
			refusals(erp.ScopeEdge|erp.ScopeInstance, erp.CodeUnavailable)...)},
	}
}

// catalogExample is a request of op with a value of its form for every
// required parameter.
func catalogExample(op *catalog.Operation) json.RawMessage {
	b := []byte(`{"CLAVE":`)
	b = strconv.AppendQuote(b, op.Clave)
	for _, p := range op.Params {
		if p.Required {
			b = append(b, ',')
			b = strconv.AppendQuote(b, p.Name)
			b = append(b, ':')
			b = strconv.AppendQuote(b, p.Example())
		}
	}
	return append(b, '}')
}
