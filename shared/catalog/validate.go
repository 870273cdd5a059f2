package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Code is the cod_error a refused request answers with. Zero is success and
// also the database's own exceptions (the original service's behaviour).
type Code int

// The codes are part of the public interface (README, "Error codes"): never
// renumber one.
const (
	CodeNotObject      Code = 1001 // body is not a JSON object
	CodeTooLarge       Code = 1002 // body over the size limit
	CodeClaveMissing   Code = 1003 // no CLAVE, or CLAVE not a string
	CodeClaveUnknown   Code = 1004
	CodeWrongEndpoint  Code = 1005 // a write CLAVE on executequery or a read on execute
	CodeParamMissing   Code = 1006
	CodeParamNotString Code = 1007
	CodeParamTooLong   Code = 1008
	CodeUnknownField   Code = 1009
	CodeParamInvalid   Code = 1010 // not valid UTF-8 or holds a NUL character
	CodeParamFormat    Code = 1011 // not a date, integer or decimal of the parameter's form
	CodeBodyTimeout    Code = 1012 // the body did not arrive within the server's read timeout
	CodeNotFound       Code = 1101 // no such route
	CodeMethod         Code = 1102 // not POST
	CodeBadInstance    Code = 1103 // instance name is not well formed
	// 1104 (unknown instance) is retired: an unknown instance answers 1105.
	CodeUnauthorized   Code = 1105 // no or wrong token, or no such instance
	CodeUnavailable    Code = 1201 // database unreachable or timed out
	CodeConfig         Code = 1202 // the instance's settings cannot be read
	CodeThrottled      Code = 1203 // API Gateway's throttling (template.yaml); never sent by the handler
	CodeOutcomeUnknown Code = 1204 // a write's commit was sent and never confirmed
	CodePaused         Code = 1205 // the instance's breaker is open: its database failed in a row
	CodeInternal       Code = 1299
	CodeTooManyRows    Code = 1301 // the answer has more rows than the operation's max_rows
	CodeAnswerTooLarge Code = 1302 // the answer passes what a Lambda function may return
)

// Error is a refusal: a code and a message meant for the integrator.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("cod_error %d: %s", e.Code, e.Message) }

func refuse(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

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
// happens here, before any database is touched.
func (c *Catalog) Parse(endpoint Endpoint, body []byte) (Call, *Error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Call{}, refuse(CodeNotObject, "the body must be a JSON object")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return Call{}, refuse(CodeNotObject, "the body is not valid JSON: %s", jsonProblem(err))
	}

	raw, ok := fields["CLAVE"]
	if !ok || isNull(raw) {
		return Call{}, refuse(CodeClaveMissing, "CLAVE is required")
	}
	var clave string
	if json.Unmarshal(raw, &clave) != nil {
		return Call{}, refuse(CodeClaveMissing, "CLAVE must be a JSON string")
	}
	op, ok := c.ops[clave]
	if !ok {
		return Call{}, refuse(CodeClaveUnknown, "CLAVE %q is not an operation of this service", clave)
	}
	if op.Endpoint != endpoint {
		return Call{}, refuse(CodeWrongEndpoint, "CLAVE %s is served on /%s, not on /%s", clave, op.Endpoint, endpoint)
	}

	if unknown := unknownFields(op, fields); len(unknown) > 0 {
		return Call{}, refuse(CodeUnknownField, "CLAVE %s takes no field %s", clave, strings.Join(unknown, ", "))
	}

	args := make([]any, len(op.Params))
	for i, p := range op.Params {
		raw, ok := fields[p.Name]
		if !ok || isNull(raw) {
			if p.Required {
				return Call{}, refuse(CodeParamMissing, "%s is required for CLAVE %s", p.Name, clave)
			}
			continue
		}
		var s string
		switch {
		case raw[0] == '"':
			if json.Unmarshal(raw, &s) != nil {
				return Call{}, refuse(CodeParamNotString, "%s must be a JSON string", p.Name)
			}
		case p.Kind == Integer || p.Kind == Decimal:
			// A JSON number is taken as written, never through a float.
			if !isNumber(raw) {
				return Call{}, refuse(CodeParamNotString, "%s must be a number, as a JSON number or string", p.Name)
			}
			s = string(raw)
		default:
			return Call{}, refuse(CodeParamNotString, "%s must be a JSON string", p.Name)
		}
		if !textOK(s) {
			return Call{}, refuse(CodeParamInvalid, "%s holds characters that cannot be stored", p.Name)
		}
		if p.Kind == Text {
			if n := utf8.RuneCountInString(s); n > p.MaxLen {
				return Call{}, refuse(CodeParamTooLong, "%s is %d characters long; at most %d fit", p.Name, n, p.MaxLen)
			}
			args[i] = s
			continue
		}
		if absent(s) {
			if p.Required {
				return Call{}, refuse(CodeParamMissing, "%s is required for CLAVE %s", p.Name, clave)
			}
			continue
		}
		v, err := p.value(s)
		if err != nil {
			return Call{}, refuse(CodeParamFormat, "%s", err)
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
