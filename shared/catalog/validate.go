package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/erp-gateway/gateway/shared/erp"
)

// Call is a validated request: the operation and its arguments in the
// procedure's order: a string (text, decimal), time.Time (date), int64
// (integer), or nil for SQL NULL. In a batch, an argument may come from an
// earlier call's answer instead (Refs); its place in Args is nil until the
// batch runs.
type Call struct {
	Op   *Operation
	Args []any
	Refs []Ref
}

// Ref is an argument a batch passes between calls: the value of column
// Field in the first row of call From's answer (From counts from 0 and is
// earlier in the batch), as the database gave it.
type Ref struct {
	Param int // the argument's index in Args
	From  int
	Field string
}

// ReadBackArgs are the arguments of the write's read-back procedure.
func (c Call) ReadBackArgs() []any {
	from := c.ReadBackFrom()
	if from == nil {
		return nil
	}
	args := make([]any, len(from))
	for i, j := range from {
		if j >= 0 {
			args[i] = c.Args[j]
		}
	}
	return args
}

// ReadBackFrom is, for each argument of the write's read-back procedure,
// the index in Args of the parameter it repeats, -1 for none (NULL); nil
// without a read-back.
func (c Call) ReadBackFrom() []int {
	rb := c.Op.ReadBack
	if rb == nil {
		return nil
	}
	from := make([]int, len(rb.Params))
	for i, name := range rb.Params {
		from[i] = -1
		for j, p := range c.Op.Params {
			if p.Name == name {
				from[i] = j
			}
		}
	}
	return from
}

// Parse decodes and validates a request body sent to endpoint. Every refusal
// happens here, before any database is touched. A refusal of an operation's
// body still carries the operation in Call.Op, for the request's log line.
func (c *Catalog) Parse(endpoint Endpoint, body []byte) (Call, *erp.Error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Call{}, erp.Refuse(erp.CodeNotObject, "the body must be a JSON object, or an array of them (a batch)")
	}
	return c.parse(endpoint, body, -1)
}

// IsBatch reports whether body is a batch: a JSON array.
func IsBatch(body []byte) bool {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	return len(trimmed) > 0 && trimmed[0] == '['
}

// ParseBatch decodes and validates a batch sent to endpoint: a JSON array of
// at most most request bodies, each validated as Parse does and allowed
// references to earlier calls. On executequery a batch holds reads only;
// on execute, writes and reads (which see the batch's writes). A refusal
// names the element in its message and returns its index (-1 for the
// array as a whole); nothing is run unless every element passes. allow,
// when not nil, judges each element's operation as soon as it is known:
// its refusal (a token's scope) comes before any fault of the element's
// fields, as for a single call, so a caller learns nothing of the
// parameters of an operation it may not run.
func (c *Catalog) ParseBatch(endpoint Endpoint, body []byte, most int, allow func(*Operation) *erp.Error) ([]Call, int, *erp.Error) {
	var elems []json.RawMessage
	if err := json.Unmarshal(body, &elems); err != nil {
		return nil, -1, erp.Refuse(erp.CodeNotObject, "the batch is not a valid JSON array of objects: %s", jsonProblem(err))
	}
	switch {
	case len(elems) == 0:
		return nil, -1, erp.Refuse(erp.CodeBatchEmpty, "the batch is empty: send at least one call")
	case len(elems) > most:
		return nil, -1, erp.Refuse(erp.CodeBatchTooLarge, "the batch has %d calls; at most %d are taken in one request", len(elems), most)
	}
	calls := make([]Call, len(elems))
	for i, raw := range elems {
		trimmed := bytes.TrimLeft(raw, " \t\r\n")
		if len(trimmed) == 0 || trimmed[0] != '{' {
			return nil, i, erp.Refuse(erp.CodeNotObject, "call %d of the batch is not a JSON object", i)
		}
		call, bad := c.parse(endpoint, raw, i)
		if call.Op != nil && allow != nil {
			if out := allow(call.Op); out != nil {
				bad = &erp.Error{Code: out.Code, Message: out.Message, RetryAfter: out.RetryAfter}
			}
		}
		if bad != nil {
			bad.Message = fmt.Sprintf("call %d of the batch: %s", i, bad.Message)
			return nil, i, bad
		}
		calls[i] = call
	}
	return calls, -1, nil
}

// parse validates one request object; index is its place in a batch, -1
// for a single request.
func (c *Catalog) parse(endpoint Endpoint, body []byte, index int) (Call, *erp.Error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return Call{}, erp.Refuse(erp.CodeNotObject, "the body is not valid JSON: %s", jsonProblem(err))
	}
	if members(body) != len(fields) {
		// encoding/json keeps a name's last value without a word, where
		// whatever reads the request before us (a proxy, a WAF, a log)
		// may take its first: one request must not mean two.
		return Call{}, erp.Refuse(erp.CodeNotObject, "the body gives %s more than once: give each field once", quoted(erp.Repeated(body, false)))
	}

	raw, ok := fields["CLAVE"]
	if !ok || isNull(raw) {
		return Call{}, erp.Refuse(erp.CodeClaveMissing, "CLAVE is required")
	}
	var clave string
	if json.Unmarshal(raw, &clave) != nil {
		return Call{}, erp.Refuse(erp.CodeClaveMissing, "CLAVE must be a JSON string")
	}
	op, ok := c.ops[clave]
	if !ok {
		return Call{}, erp.Refuse(erp.CodeClaveUnknown, "CLAVE %s is not an operation of this service", quoted(clave))
	}
	// A batch on execute may read what its writes wrote.
	if op.Endpoint != endpoint && !(index >= 0 && endpoint == Execute) {
		return Call{Op: op}, erp.Refuse(erp.CodeWrongEndpoint, "CLAVE %s is served on /%s, not on /%s", clave, op.Endpoint, endpoint)
	}

	if unknown := unknownFields(op, fields); len(unknown) > 0 {
		return Call{Op: op}, erp.Refuse(erp.CodeUnknownField, "CLAVE %s takes no field %s", clave, strings.Join(unknown, ", "))
	}

	call := Call{Op: op, Args: make([]any, len(op.Params))}
	// References first: a batch that points the wrong way is refused for
	// that, whatever else its calls lack.
	for i, p := range op.Params {
		if raw, ok := fields[p.Name]; ok && isReference(raw) {
			ref, bad := reference(raw, p.Name, index)
			if bad != nil {
				return Call{Op: op}, bad
			}
			ref.Param = i
			call.Refs = append(call.Refs, ref)
		}
	}
	for i, p := range op.Params {
		raw, ok := fields[p.Name]
		if !ok || isNull(raw) {
			if p.Required {
				return Call{Op: op}, erp.Refuse(erp.CodeParamMissing, "%s is required for CLAVE %s", p.Name, clave)
			}
			continue
		}
		var s string
		switch {
		case isReference(raw):
			continue
		case raw[0] == '"':
			if json.Unmarshal(raw, &s) != nil {
				return Call{Op: op}, erp.Refuse(erp.CodeParamNotString, "%s must be a JSON string", p.Name)
			}
		case p.Kind == Integer || p.Kind == Decimal:
			// A JSON number is taken as written, never through a float.
			if !isNumber(raw) {
				return Call{Op: op}, erp.Refuse(erp.CodeParamNotString, "%s must be a number, as a JSON number or string", p.Name)
			}
			s = string(raw)
		default:
			return Call{Op: op}, erp.Refuse(erp.CodeParamNotString, "%s must be a JSON string", p.Name)
		}
		if !textOK(raw, s) {
			return Call{Op: op}, erp.Refuse(erp.CodeParamInvalid, "%s holds a NUL character, bytes that are not UTF-8 or half of a surrogate pair: send the body in UTF-8, as JSON requires", p.Name)
		}
		v, refused := p.arg(s, clave)
		if refused != nil {
			return Call{Op: op}, refused
		}
		call.Args[i] = v
	}
	return call, nil
}

// isReference reports whether raw is written as a reference: an object
// naming $from or $field.
func isReference(raw json.RawMessage) bool {
	var fields map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &fields) != nil {
		return false
	}
	_, from := fields["$from"]
	_, field := fields["$field"]
	return from || field
}

// reference decodes the value of parameter name, {"$from": i, "$field":
// "NAME"}, in call index of a batch (-1: not in one).
func reference(raw json.RawMessage, name string, index int) (Ref, *erp.Error) {
	var v struct {
		From  *int    `json:"$from"`
		Field *string `json:"$field"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	form := `{"$from": <an earlier call's index, from 0>, "$field": "<a column of its answer>"}`
	switch {
	case dec.Decode(&v) != nil || members(raw) != 2 || v.From == nil || v.Field == nil || *v.Field == "" || utf8.RuneCountInString(*v.Field) > MaxName:
		return Ref{}, erp.Refuse(erp.CodeReference, "%s: a value taken from another call is written %s", name, form)
	case index < 0:
		return Ref{}, erp.Refuse(erp.CodeReference, "%s: a value taken from another call needs a batch (a JSON array of calls)", name)
	case index == 0:
		return Ref{}, erp.Refuse(erp.CodeReference, "%s: the first call of a batch has no earlier call to take a value from", name)
	case *v.From < 0 || *v.From >= index:
		return Ref{}, erp.Refuse(erp.CodeReference, "%s: $from %d is not an earlier call of the batch (0 to %d)", name, *v.From, index-1)
	}
	return Ref{From: *v.From, Field: *v.Field}, nil
}

// members counts the members of the JSON object b, which must be valid
// JSON (as Unmarshal found it): the colons outside strings at its top
// level. A name given twice is one entry of the map Unmarshal fills, and
// two here.
func members(b []byte) int {
	n, depth, inString := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++ // the escaped byte, a quote perhaps
		case inString:
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		case c == ':' && depth == 1:
			n++
		}
	}
	return n
}

func unknownFields(op *Operation, fields map[string]json.RawMessage) []string {
	var unknown []string
	for name := range fields {
		if name == "CLAVE" {
			continue
		}
		known := false
		for _, p := range op.Params {
			if p.Name == name {
				known = true
				break
			}
		}
		if !known {
			unknown = append(unknown, quoted(name))
		}
	}
	sort.Strings(unknown)
	// A refusal names what was sent, not kilobytes of it.
	if len(unknown) > maxNamed {
		unknown = append(unknown[:maxNamed], fmt.Sprintf("and %d more", len(unknown)-maxNamed))
	}
	return unknown
}

// maxNamed is how many unknown fields a refusal names.
const maxNamed = 10

// quoted is a name the sender sent, quoted for a refusal: no name this
// service knows is longer than MaxName, so more of it says nothing.
func quoted(name string) string {
	if utf8.RuneCountInString(name) <= MaxName {
		return strconv.Quote(name)
	}
	cut := 0
	for range MaxName {
		_, size := utf8.DecodeRuneInString(name[cut:])
		cut += size
	}
	return strconv.Quote(name[:cut]) + fmt.Sprintf("…(%d bytes)", len(name))
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// isNumber reports whether raw, already valid JSON, is a number.
func isNumber(raw json.RawMessage) bool {
	return len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')
}

// jsonProblem describes a decoding error without echoing the body back.
func jsonProblem(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("syntax error at byte %d", syn.Offset)
	case errors.As(err, &typ):
		return "a top-level value that is not an object"
	default:
		return "unexpected end of input"
	}
}

// Fingerprint identifies the request: its CLAVE and its arguments as
// validated, so two bodies that differ only in spacing, field order or how a
// number or an absent value is written are the same request, and any other
// difference is another. An idempotency key is kept with it.
func (c Call) Fingerprint() string {
	h := sha256.New()
	io.WriteString(h, c.Op.Clave) //nolint:errcheck // a hash never fails to write
	for _, a := range c.Args {
		// Each value with its kind and length, so no two argument lists
		// write the same bytes.
		var v string
		switch a := a.(type) {
		case nil:
			v = "n"
		case string:
			v = "s" + a
		case int64:
			v = "i" + strconv.FormatInt(a, 10)
		case time.Time:
			v = "d" + a.Format(time.DateOnly)
		default:
			v = fmt.Sprintf("?%T%v", a, a)
		}
		fmt.Fprintf(h, "\x00%d:%s", len(v), v)
	}
	for _, r := range c.Refs {
		fmt.Fprintf(h, "\x01%d:%d:%d:%s", r.Param, r.From, len(r.Field), r.Field)
	}
	return hex.EncodeToString(h.Sum(nil))
}
