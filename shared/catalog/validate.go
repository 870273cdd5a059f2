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
// (integer), or nil for SQL NULL.
type Call struct {
	Op   *Operation
	Args []any
}

// ReadBackArgs are the arguments of the write's read-back procedure.
func (c Call) ReadBackArgs() []any {
	rb := c.Op.ReadBack
	if rb == nil {
		return nil
	}
	args := make([]any, len(rb.Params))
	for i, name := range rb.Params {
		for j, p := range c.Op.Params {
			if p.Name == name {
				args[i] = c.Args[j]
			}
		}
	}
	return args
}

// Parse decodes and validates a request body sent to endpoint. Every refusal
// happens here, before any database is touched. A refusal of an operation's
// body still carries the operation in Call.Op, for the request's log line.
func (c *Catalog) Parse(endpoint Endpoint, body []byte) (Call, *erp.Error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Call{}, erp.Refuse(erp.CodeNotObject, "the body must be a JSON object")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return Call{}, erp.Refuse(erp.CodeNotObject, "the body is not valid JSON: %s", jsonProblem(err))
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
		return Call{}, erp.Refuse(erp.CodeClaveUnknown, "CLAVE %q is not an operation of this service", clave)
	}
	if op.Endpoint != endpoint {
		return Call{Op: op}, erp.Refuse(erp.CodeWrongEndpoint, "CLAVE %s is served on /%s, not on /%s", clave, op.Endpoint, endpoint)
	}

	if unknown := unknownFields(op, fields); len(unknown) > 0 {
		return Call{Op: op}, erp.Refuse(erp.CodeUnknownField, "CLAVE %s takes no field %s", clave, strings.Join(unknown, ", "))
	}

	args := make([]any, len(op.Params))
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
		if !textOK(s) {
			return Call{Op: op}, erp.Refuse(erp.CodeParamInvalid, "%s holds characters that cannot be stored", p.Name)
		}
		if p.Kind == Text {
			if n := utf8.RuneCountInString(s); n > p.MaxLen {
				return Call{Op: op}, erp.Refuse(erp.CodeParamTooLong, "%s is %d characters long; at most %d fit", p.Name, n, p.MaxLen)
			}
			args[i] = s
			continue
		}
		if absent(s) {
			if p.Required {
				return Call{Op: op}, erp.Refuse(erp.CodeParamMissing, "%s is required for CLAVE %s", p.Name, clave)
			}
			continue
		}
		v, err := p.value(s)
		if err != nil {
			return Call{Op: op}, erp.Refuse(erp.CodeParamFormat, "%s", err)
		}
		args[i] = v
	}
	return Call{Op: op, Args: args}, nil
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
			unknown = append(unknown, fmt.Sprintf("%q", name))
		}
	}
	sort.Strings(unknown)
	return unknown
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
	return hex.EncodeToString(h.Sum(nil))
}
