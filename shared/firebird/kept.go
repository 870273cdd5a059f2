package firebird

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/erp-gateway/gateway/shared/record"
)

// A keyed write's answer is kept by the block itself, as the read-back's
// values in text, when every column's values have a text the server writes
// and the driver's value can be told from exactly: the answer then costs no
// statement of its own after the block, a round trip of the few a write
// makes (README, "Measurements"). Answers with other columns (floating
// point, BLOB, time zones, binary or untyped text), or too long for the key
// table's ANSWER, are kept as their JSON by a statement of their own.
//
// The kept text is keptMark, then each column's code and name, then the
// rows' values in column order. A name or a value is its length in bytes,
// ":" and its bytes; a NULL value is "-". A replay encodes the values again
// with the encoder the answer was first written with.

// keptMark starts an answer kept as values; an answer kept as JSON starts
// with "{".
const keptMark = "K1;"

// keptHeaderMax bounds the columns' part, so that an answer without rows is
// always kept by the block.
const keptHeaderMax = 2000

// keptPartMax is the longest text a block variable holds (GATEWAY$V).
const keptPartMax = 32765

// textCharsMax is the longest text (in characters) kept: its UTF8 and its
// length fit in GATEWAY$V.
const textCharsMax = (keptPartMax - 24) / 4

// keptNumberChars is more than the server's text of any number, date, time
// or boolean the block keeps takes.
const keptNumberChars = 32

// Column codes: how a column's text is read back into the driver's value.
const (
	keptText      = 't' // VARCHAR: string
	keptChar      = 'c' // CHAR: string less trailing blanks, as the driver gives it
	keptInteger   = 'i' // SMALLINT, INTEGER, BIGINT: int64
	keptDecimal   = 'n' // NUMERIC, DECIMAL of up to 6 decimals: string
	keptDate      = 'd'
	keptTime      = 'h'
	keptTimestamp = 's'
	keptBoolean   = 'b'
)

// keptCode is the code of a column of the given RDB$FIELDS type, scale,
// character set and length, 0 when its values cannot be kept as text.
func keptCode(fieldType, scale, charset, chars int64) byte {
	text := func(code byte) byte {
		// NONE and OCTETS reach the driver as bytes.
		if charset <= 1 || chars <= 0 || chars > textCharsMax {
			return 0
		}
		return code
	}
	switch fieldType {
	case 7, 8, 16: // SMALLINT, INTEGER, BIGINT
		switch {
		case scale == 0:
			return keptInteger
		case scale < 0 && scale >= -6:
			// The driver writes a number below 1e-6 in scientific notation,
			// which the server's text never is: more than 6 decimals could
			// hold one.
			return keptDecimal
		}
	case 12:
		return keptDate
	case 13:
		return keptTime
	case 35:
		return keptTimestamp
	case 23:
		return keptBoolean
	case 14:
		return text(keptChar)
	case 37:
		return text(keptText)
	}
	return 0
}

// keptHeader is the start of an answer kept as values: the mark and the
// columns. ok is false when it cannot be: a column whose values cannot be
// kept, a name not in ASCII (the block's text may reach the server in
// another character set), or too many columns.
func keptHeader(cols []param) (header string, ok bool) {
	var b strings.Builder
	b.WriteString(keptMark)
	for _, c := range cols {
		if c.kept == 0 || !ascii(c.name) {
			return "", false
		}
		b.WriteByte(c.kept)
		b.WriteString(strconv.Itoa(len(c.name)) + ":" + c.name)
	}
	return b.String(), b.Len() <= keptHeaderMax
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// keptValues is what a block adds to its answer for one row of cols: the
// values in text, while they fit. The answer is GATEWAY$A; GATEWAY$KEPT
// turns 0 for good at the first part that does not fit. A statement writes
// the values of as many columns as GATEWAY$V surely holds (one statement
// for all costs the server a third of one for each column).
func keptValues(cols []param) string {
	var b strings.Builder
	var parts []string
	size := 0
	flush := func() {
		if len(parts) == 0 {
			return
		}
		b.WriteString("    GATEWAY$V = " + strings.Join(parts, "\n      || ") + ";\n")
		fmt.Fprintf(&b, "    IF (GATEWAY$KEPT = 1 AND OCTET_LENGTH(GATEWAY$A) + OCTET_LENGTH(GATEWAY$V) <= %d) THEN GATEWAY$A = GATEWAY$A || GATEWAY$V;\n    ELSE GATEWAY$KEPT = 0;\n", inlineMax)
		parts, size = nil, 0
	}
	for _, c := range cols {
		chars := keptNumberChars
		if c.kept == keptText || c.kept == keptChar {
			chars = c.chars
		}
		// UTF8 takes up to 4 bytes a character; the length's digits and
		// ":" are the rest.
		most := chars*4 + 24
		if size+most > keptPartMax {
			flush()
		}
		text := fmt.Sprintf("CAST(:%s AS VARCHAR(%d) CHARACTER SET UTF8)", quoted(c.name), chars)
		parts = append(parts, fmt.Sprintf("COALESCE(OCTET_LENGTH(%s) || ':' || %s, '-')", text, text))
		size += most
	}
	flush()
	return b.String()
}

var errKeptUnreadable = errors.New("the kept answer cannot be read")

// replayKept encodes an answer kept as values into out.
func replayKept(kept []byte, out *record.Encoder) error {
	r := keptReader{rest: kept[len(keptMark):]}
	var codes []byte
	var cols []record.Column
	for len(r.rest) > 0 && r.rest[0] >= 'a' && r.rest[0] <= 'z' {
		code := r.rest[0]
		r.rest = r.rest[1:]
		name, ok := r.next()
		if !ok || name == nil {
			return errKeptUnreadable
		}
		kind, ok := keptKinds[code]
		if !ok {
			return fmt.Errorf("%w: column code %q", errKeptUnreadable, code)
		}
		codes = append(codes, code)
		cols = append(cols, record.Column{Name: string(name), Kind: kind})
	}
	out.Reset()
	out.Columns(cols)
	row := make([]any, len(cols))
	for len(r.rest) > 0 {
		for i, code := range codes {
			text, ok := r.next()
			if !ok {
				return errKeptUnreadable
			}
			v, err := keptValue(code, text)
			if err != nil {
				return fmt.Errorf("%w: %w", errKeptUnreadable, err)
			}
			row[i] = v
		}
		if err := out.Row(row); err != nil {
			return err
		}
	}
	return nil
}

var keptKinds = map[byte]record.Kind{
	keptText: record.Text, keptChar: record.Text, keptInteger: record.Integer, keptDecimal: record.Decimal,
	keptDate: record.Date, keptTime: record.Time, keptTimestamp: record.Timestamp, keptBoolean: record.Boolean,
}

// keptValue is the driver's value of a column of code whose server text is
// text (nil for NULL).
func keptValue(code byte, text []byte) (any, error) {
	if text == nil {
		return nil, nil
	}
	s := string(text)
	switch code {
	case keptChar:
		return strings.TrimRight(s, " "), nil
	case keptInteger:
		return strconv.ParseInt(s, 10, 64)
	case keptDate:
		return time.Parse("2006-01-02", s)
	case keptTime:
		// Go reads the fraction after the seconds without being told.
		return time.Parse("15:04:05", s)
	case keptTimestamp:
		return time.Parse("2006-01-02 15:04:05", s)
	case keptBoolean:
		return strconv.ParseBool(s)
	}
	return s, nil
}

// keptReader reads the length-prefixed parts of a kept answer.
type keptReader struct{ rest []byte }

// next is the next part, nil for "-" (NULL); ok is false when there is no
// whole part.
func (r *keptReader) next() (part []byte, ok bool) {
	if len(r.rest) > 0 && r.rest[0] == '-' {
		r.rest = r.rest[1:]
		return nil, true
	}
	colon := bytes.IndexByte(r.rest, ':')
	if colon < 1 {
		return nil, false
	}
	n, err := strconv.Atoi(string(r.rest[:colon]))
	if err != nil || n < 0 || n > len(r.rest)-colon-1 {
		return nil, false
	}
	part, r.rest = r.rest[colon+1:colon+1+n], r.rest[colon+1+n:]
	return part, true
}
