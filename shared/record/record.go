// Package record encodes what a stored procedure returns, as ordered columns
// of typed values, into the gateway's JSON: each row an object whose keys keep
// the procedure's output order. Rows are encoded as they are fetched, so an
// answer is held once, as its JSON, and its limits are checked on the way.
package record

import (
	"encoding/base64"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind says how a column's values are encoded.
type Kind uint8

// Each Kind names the Go type its non-NULL values have in a row.
const (
	Text      Kind = iota // string
	Integer               // int64
	Decimal               // string holding an exact decimal number, e.g. "-12.30"
	Float64               // float64
	Float32               // float64 holding a 32-bit float
	Boolean               // bool
	Date                  // time.Time, wall clock of the database
	Time                  // time.Time
	Timestamp             // time.Time
	Binary                // []byte
)

// Column is one output column of a procedure.
type Column struct {
	Name string
	Kind Kind
}

func appendValue(dst []byte, kind Kind, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...)
	case string:
		// The driver gives INT128 and some exact numbers as text.
		if kind == Decimal || kind == Integer {
			if isJSONNumber(v) {
				return append(dst, v...)
			}
			if p, ok := plainDecimal(v); ok {
				return append(dst, p...)
			}
		}
		return AppendString(dst, v)
	case int64:
		return strconv.AppendInt(dst, v, 10)
	case float64:
		return appendFloat(dst, v, kind)
	case bool:
		return strconv.AppendBool(dst, v)
	case time.Time:
		return appendTime(dst, v, kind)
	case []byte:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, v)
		return append(dst, '"')
	default:
		// A type the driver does not produce for the kinds above: keep the
		// response valid rather than guess an encoding.
		return append(dst, "null"...)
	}
}

// Answered is v, a value of a column of kind, as an answer writes it, unquoted:
// "0.00000012" for a NUMERIC the driver gives as "1.2E-7", "0.1" for a
// FLOAT, "2018-11-04" for a DATE, a BLOB's base64. A text is itself, its
// bytes as the database gave them. ok is false for NULL (and for what an
// answer writes as null: a float that is not a number).
func Answered(kind Kind, v any) (s string, ok bool) {
	switch v := v.(type) {
	case nil:
		return "", false
	case string:
		if p, ok := plainDecimal(v); ok && (kind == Decimal || kind == Integer) {
			return p, true
		}
		return v, true
	case []byte:
		return base64.StdEncoding.EncodeToString(v), true
	}
	b := appendValue(nil, kind, v)
	if string(b) == "null" {
		return "", false
	}
	return strings.Trim(string(b), `"`), true // a time's quotes; no escapes within
}

func appendFloat(dst []byte, f float64, kind Kind) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...) // JSON has no NaN or infinity
	}
	bits := 64
	if kind == Float32 {
		bits = 32
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	return strconv.AppendFloat(dst, f, format, -1, bits)
}

func appendTime(dst []byte, t time.Time, kind Kind) []byte {
	dst = append(dst, '"')
	switch kind {
	case Date:
		dst = t.AppendFormat(dst, "2006-01-02")
	case Time:
		dst = t.AppendFormat(dst, "15:04:05.9999")
	default:
		dst = t.AppendFormat(dst, "2006-01-02T15:04:05.9999")
	}
	return append(dst, '"')
}

// isJSONNumber reports whether s is a number in JSON's grammar, so it can be
// written as it is.
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - start
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// plainDecimal writes a number the driver gave in scientific notation (it
// does so for a NUMERIC whose value is under 1e-6, 0 included:
// NUMERIC(18,8) 0 is "0E-8", 0.00000012 is "1.2E-7") with its digits and
// scale, as the driver writes the others: "0.00000000", "0.00000012".
func plainDecimal(s string) (string, bool) {
	mantissa, exp, ok := strings.Cut(s, "E")
	if !ok {
		return "", false
	}
	sign := ""
	if rest, neg := strings.CutPrefix(mantissa, "-"); neg {
		sign, mantissa = "-", rest
	}
	whole, frac, _ := strings.Cut(mantissa, ".")
	adjusted, err := strconv.Atoi(exp)
	digits := whole + frac
	// The exponent of the last digit: the scale, negated.
	e := adjusted - len(frac)
	if err != nil || len(whole) != 1 || e < -maxScale || e > 0 || strings.Trim(digits, "0123456789") != "" {
		return "", false
	}
	if e == 0 {
		return sign + digits, true
	}
	if n := -e; len(digits) > n {
		return sign + digits[:len(digits)-n] + "." + digits[len(digits)-n:], true
	}
	return sign + "0." + strings.Repeat("0", -e-len(digits)) + digits, true
}

// maxScale is the largest scale of a Firebird NUMERIC (38, from Firebird 4).
const maxScale = 38

const hex = "0123456789abcdef"

// AppendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// encoding/json does.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
