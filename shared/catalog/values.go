package catalog

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/erp-gateway/gateway/shared/erp"
)

// dateLayout turns a format such as DD.MM.YYYY into Go's layout. Each of DD,
// MM and YYYY appears once; between them only the separators . / - and space.
func dateLayout(format string) (string, error) {
	var b strings.Builder
	seen := map[string]bool{}
	for rest := format; rest != ""; {
		token := ""
		switch {
		case strings.HasPrefix(rest, "YYYY"):
			token = "YYYY"
			b.WriteString("2006")
		case strings.HasPrefix(rest, "MM"):
			token = "MM"
			b.WriteString("01")
		case strings.HasPrefix(rest, "DD"):
			token = "DD"
			b.WriteString("02")
		case strings.ContainsRune("./- ", rune(rest[0])):
			b.WriteByte(rest[0])
			rest = rest[1:]
			continue
		default:
			return "", fmt.Errorf("%q: only DD, MM, YYYY and the separators . / - and space may appear", format)
		}
		if seen[token] {
			return "", fmt.Errorf("%q: %s appears twice", format, token)
		}
		seen[token] = true
		rest = rest[len(token):]
	}
	if len(seen) != 3 {
		return "", fmt.Errorf("%q: DD, MM and YYYY must each appear once", format)
	}
	return b.String(), nil
}

// absent reports whether a typed parameter's value means "not given": the
// original service's clients write "" or NA for a value they do not use.
func absent(s string) bool { return s == "" || s == "NA" }

// Example is a value p accepts, for requests that must pass validation
// whatever they find (the pre-traffic hook's) and for messages.
func (p Param) Example() string {
	if p.Kind == Date {
		layout, _ := dateLayout(p.Format) // checked by New
		return time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC).Format(layout)
	}
	return "0" // text (at least one character fits), integer, decimal
}

// value checks one request value against p and returns what the procedure is
// passed: a string (text and decimal), a time.Time (date) or an int64
// (integer).
func (p Param) value(s string) (any, error) {
	switch p.Kind {
	case Date:
		layout, _ := dateLayout(p.Format) // checked by New
		t, err := time.Parse(layout, s)
		switch {
		case !sameShape(s, p.Example()):
			return nil, fmt.Errorf("%s must be a date written %s, e.g. %s", p.Name, p.Format, p.Example())
		case err != nil || t.Year() < 1:
			// Written as asked, so the writer needs to hear what is wrong
			// with the date itself, not its form.
			return nil, fmt.Errorf("%s is written %s but %s is not a day of the calendar", p.Name, p.Format, s)
		}
		return t, nil
	case Integer:
		n, err := strconv.ParseInt(s, 10, p.Bits)
		if err != nil {
			return nil, fmt.Errorf("%s must be a whole number of %d bits (%d to %d), written in digits, without a point or exponent", p.Name, p.Bits, -(int64(1) << (p.Bits - 1)), int64(1)<<(p.Bits-1)-1)
		}
		return n, nil
	case Decimal:
		d, err := decimal(s, p.Precision, p.Scale)
		if err != nil {
			return nil, fmt.Errorf("%s must be a number of NUMERIC(%d,%d), at most %d digits after the decimal point, written with a point: %w", p.Name, p.Precision, p.Scale, p.Scale, err)
		}
		return d, nil
	}
	return s, nil
}

// arg checks s, the text of a value given for p, and returns what the
// procedure is passed (nil: absent, NULL).
func (p Param) arg(s, clave string) (any, *erp.Error) {
	if p.Kind == Text {
		if n := utf8.RuneCountInString(s); n > p.MaxLen {
			return nil, erp.Refuse(erp.CodeParamTooLong, "%s is %d characters long; at most %d fit", p.Name, n, p.MaxLen)
		}
		return s, nil
	}
	if absent(s) {
		if p.Required {
			return nil, erp.Refuse(erp.CodeParamMissing, "%s is required for CLAVE %s", p.Name, clave)
		}
		return nil, nil
	}
	v, err := p.value(s)
	if err != nil {
		return nil, erp.Refuse(erp.CodeParamFormat, "%s", err)
	}
	return v, nil
}

// Referenced checks a value an earlier call of a batch answered (the column
// a $from names) for p as a request's value is checked, and returns what
// the procedure is passed: the value as the answer wrote it (answered,
// null: ok false), except that a DATE or TIMESTAMP (v, as the driver gave
// it) passes to a date parameter as it is (its digits: a DATE input takes
// its day, a TIMESTAMP one all of it), and a binary value's bytes pass to a
// text one as they are (the answer's base64 is for JSON). So a reference is
// refused where the value written in the request would be (a NULL for a
// required parameter, too many decimals, a text too long), and passes to a
// text parameter what the client read.
func (p Param) Referenced(clave string, v any, answered string, ok bool) (any, *erp.Error) {
	if !ok {
		if p.Required {
			return nil, erp.Refuse(erp.CodeParamMissing, "%s is required for CLAVE %s, and the value it takes is null", p.Name, clave)
		}
		return nil, nil
	}
	switch v := v.(type) {
	case time.Time:
		if p.Kind == Date && v.Year() >= 1 {
			return time.Date(v.Year(), v.Month(), v.Day(), v.Hour(), v.Minute(), v.Second(), v.Nanosecond(), time.UTC), nil
		}
	case []byte:
		if p.Kind == Text {
			if len(v) > p.MaxLen {
				return nil, erp.Refuse(erp.CodeParamTooLong, "%s is %d bytes long; at most %d fit", p.Name, len(v), p.MaxLen)
			}
			return v, nil
		}
	}
	return p.arg(answered, clave)
}

// sameShape reports whether s has digits where example has them and the
// same other characters elsewhere.
func sameShape(s, example string) bool {
	if len(s) != len(example) {
		return false
	}
	for i := range len(s) {
		a, b := s[i], example[i]
		if isDigit(a) != isDigit(b) || !isDigit(a) && a != b {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

var errNotNumber = errors.New("not a number")

// decimal checks s as a plain decimal number (an optional sign, digits, an
// optional point and digits; an exponent as JSON numbers may have) and
// returns it in the form Firebird converts exactly.
func decimal(s string, precision, scale int) (string, error) {
	sign, body := "", strings.TrimPrefix(s, "+")
	if b, ok := strings.CutPrefix(s, "-"); ok {
		sign, body = "-", b
	}
	body, exp, hasExp := strings.Cut(strings.ToLower(body), "e")
	whole, frac, hasPoint := strings.Cut(body, ".")
	if whole == "" && frac == "" || hasPoint && frac == "" || !digitsOnly(whole) || !digitsOnly(frac) {
		return "", errNotNumber
	}
	if hasExp {
		// Shift the point; an exponent this far out cannot give a NUMERIC
		// of 18 digits, and bounding it keeps the work small.
		e, err := strconv.Atoi(exp)
		if err != nil || e < -64 || e > 64 {
			return "", errNotNumber
		}
		digits, point := whole+frac, len(whole)+e
		switch {
		case point <= 0:
			whole, frac = "", strings.Repeat("0", -point)+digits
		case point >= len(digits):
			whole, frac = digits+strings.Repeat("0", point-len(digits)), ""
		default:
			whole, frac = digits[:point], digits[point:]
		}
	}
	whole = strings.TrimLeft(whole, "0")
	frac = strings.TrimRight(frac, "0")
	if len(frac) > scale {
		return "", fmt.Errorf("more than %d decimals", scale)
	}
	// The integer Firebird stores: the digits without the point, scaled.
	stored := sign + cmp.Or(whole+frac, "0") + strings.Repeat("0", scale-len(frac))
	if _, err := strconv.ParseInt(stored, 10, storageBits(precision)); err != nil {
		least, greatest := numericRange(precision, scale)
		return "", fmt.Errorf("outside the values NUMERIC(%d,%d) holds, %s to %s", precision, scale, least, greatest)
	}
	// The form Firebird converts exactly: no +, no leading zeros, no empty
	// whole part.
	out := sign + cmp.Or(whole, "0")
	if frac != "" {
		out += "." + frac
	}
	if out == "-0" {
		out = "0"
	}
	return out, nil
}

// storageBits is the size of the integer Firebird stores a NUMERIC(p,s) in,
// scaled by 10^s. The database takes any value that fits it, more than p−s
// digits before the point among them (NUMERIC(9,2) holds 21474836.47), and
// answers them: so does the gateway, so that an answer can be sent back.
func storageBits(precision int) int {
	switch {
	case precision <= 4:
		return 16
	case precision <= 9:
		return 32
	}
	return 64
}

// Range is the least and the greatest value a Decimal parameter takes, as
// decimal numbers: those of NUMERIC(Precision, Scale) in Firebird.
func (p Param) Range() (least, greatest string) {
	return numericRange(p.Precision, p.Scale)
}

func numericRange(precision, scale int) (least, greatest string) {
	bits := storageBits(precision)
	return scaled(math.MinInt64>>(64-bits), scale), scaled(math.MaxInt64>>(64-bits), scale)
}

// scaled writes v / 10^scale.
func scaled(v int64, scale int) string {
	s := strconv.FormatInt(v, 10)
	sign, digits := "", s
	if v < 0 {
		sign, digits = "-", s[1:]
	}
	if scale == 0 {
		return s
	}
	if len(digits) <= scale {
		digits = strings.Repeat("0", scale-len(digits)+1) + digits
	}
	return sign + digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
}

func digitsOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// textOK reports whether s, decoded from the JSON string raw, can be stored:
// no NUL, and every character as the client sent it. encoding/json decodes
// bytes that are not UTF-8 and a lone surrogate escape ("\ud800") as
// U+FFFD, which a client may also send as itself (text the gateway answered
// with it, from a column of character set NONE): only the first two are
// refused.
func textOK(raw []byte, s string) bool {
	if strings.ContainsRune(s, 0) {
		return false
	}
	return !strings.ContainsRune(s, utf8.RuneError) || utf8.Valid(raw) && !loneSurrogate(raw)
}

// loneSurrogate reports whether the JSON string raw escapes half of a
// surrogate pair without the other half.
func loneSurrogate(raw []byte) bool {
	escaped := func(i int) (rune, bool) { // the \uXXXX at raw[i:]
		if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
			return 0, false
		}
		r, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
		return rune(r), err == nil
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		r, ok := escaped(i)
		if !ok {
			i++ // an escape of one character: \\, \", \n...
			continue
		}
		i += 5
		switch {
		case r >= 0xdc00 && r < 0xe000:
			return true
		case r >= 0xd800 && r < 0xdc00:
			if low, ok := escaped(i + 1); !ok || low < 0xdc00 || low >= 0xe000 {
				return true
			}
			i += 6
		}
	}
	return false
}
