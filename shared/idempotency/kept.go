package idempotency

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/erp-gateway/gateway/shared/calls"
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/record"
)

// The kept form. A keyed write's answer is kept by the write's own block as
// the read-back's values in text, when every column's values have a text
// the server writes and the driver's value can be told from exactly: the
// answer then costs no statement of its own after the block, a round trip
// of the few a write makes (infra/docs/measurements.md). Answers with other
// columns (floating point, BLOB, time zones, binary or untyped text), or
// too long for ANSWER, are kept as their JSON by a statement of their own.
//
// The text is keptMark, then each column's code and name, then the rows'
// values in column order. A name or a value is its length in bytes, ":"
// and its bytes; a NULL value is "-". A replay decodes the values into the
// driver's and encodes them again with the encoder the answer was first
// written with, so it is byte for byte the first answer. `make kept` shows
// a kept answer as JSON.
//
// This file is the form's one description: the columns it keeps (form),
// the SQL that writes it (form.header, form.values) and its reading
// (decode).

// keptMark starts an answer kept as values; an answer kept as JSON starts
// with "{".
const keptMark = "K1;"

const (
	// keptHeaderMax bounds the columns' part, so that an answer without
	// rows is always kept by the block.
	keptHeaderMax = 2000
	// keptPartMax is the longest text a block variable holds (GATEWAY$V).
	keptPartMax = 32765
	// textCharsMax is the longest text (in characters) kept: its UTF8 and
	// its length fit in GATEWAY$V.
	textCharsMax = (keptPartMax - 24) / 4
	// keptNumberChars is more than the server's text of any number, date,
	// time or boolean the block keeps takes.
	keptNumberChars = 32
)

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

var keptKinds = map[byte]record.Kind{
	keptText: record.Text, keptChar: record.Text, keptInteger: record.Integer, keptDecimal: record.Decimal,
	keptDate: record.Date, keptTime: record.Time, keptTimestamp: record.Timestamp, keptBoolean: record.Boolean,
}

// keptCode is the code of a column, 0 when its values cannot be kept.
func keptCode(p catalog.DBParam) byte {
	switch p.Type {
	case "SMALLINT", "INTEGER", "BIGINT":
		return keptInteger
	case "NUMERIC", "DECIMAL":
		// Any scale: the server's text of a value has its digits and
		// scale, as the answer does (the driver's scientific notation of a
		// number below 1e-6 is written out: record.plainDecimal).
		return keptDecimal
	case "DATE":
		return keptDate
	case "TIME":
		return keptTime
	case "TIMESTAMP":
		return keptTimestamp
	case "BOOLEAN":
		return keptBoolean
	case "CHAR", "VARCHAR":
		// NONE and OCTETS reach the driver as bytes.
		if p.Charset == "NONE" || p.Charset == "OCTETS" || p.Charset == "" || p.Chars <= 0 || p.Chars > textCharsMax {
			return 0
		}
		if p.Type == "CHAR" {
			return keptChar
		}
		return keptText
	}
	return 0
}

// form is the kept form of a read-back's columns.
type form struct{ cols []catalog.DBParam }

// header is the start of a kept answer: the mark and the columns. ok is
// false when the answer cannot be kept as values: a column whose values
// cannot be, a name not in ASCII (the block's text may reach the server in
// another character set), or too many columns.
func (f form) header() (header string, ok bool) {
	var b strings.Builder
	b.WriteString(keptMark)
	for _, c := range f.cols {
		code := keptCode(c)
		if code == 0 || !ascii(c.Name) {
			return "", false
		}
		b.WriteByte(code)
		b.WriteString(strconv.Itoa(len(c.Name)) + ":" + c.Name)
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

// values is what a block adds to the kept answer GATEWAY$A for one row: the
// values in text, while they fit. GATEWAY$KEPT turns 0 for good at the
// first part that does not fit. A statement writes the values of as many
// columns as GATEWAY$V surely holds (one statement for all costs the server
// a third of one for each column).
func (f form) values() string {
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
	for _, c := range f.cols {
		chars, most := keptChars(c)
		if size+most > keptPartMax {
			flush()
		}
		text := fmt.Sprintf("CAST(:%s AS VARCHAR(%d) CHARACTER SET UTF8)", calls.Quote(c.Name), chars)
		parts = append(parts, fmt.Sprintf("COALESCE(OCTET_LENGTH(%s) || ':' || %s, '-')", text, text))
		size += most
	}
	flush()
	return b.String()
}

// keptChars is the most characters a column's value takes in the kept
// form's text, and the most bytes its part does: UTF8 takes up to 4 bytes
// a character, and the length's digits and ":" are the rest.
func keptChars(c catalog.DBParam) (chars, most int) {
	chars = keptNumberChars
	if code := keptCode(c); code == keptText || code == keptChar {
		chars = c.Chars
	}
	return chars, chars*4 + 24
}

// rowMost is the most bytes one row's values take in the kept form.
func (f form) rowMost() int {
	n := 0
	for _, c := range f.cols {
		_, most := keptChars(c)
		n += most
	}
	return n
}

var errKeptUnreadable = errors.New("the kept answer cannot be read")

// decode encodes an answer kept as values into out.
func decode(kept []byte, out *record.Encoder) error {
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
