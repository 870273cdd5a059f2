package record

import (
	"encoding/base64"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/erp-gateway/gateway/shared/erp"
)

// Limits bound an answer while it is encoded. Zero means no bound.
type Limits struct {
	MaxRows int
	// MaxBytes bounds the answer's size as a JSON string, the form in which
	// a Lambda function returns a body to API Gateway (see StringSize).
	MaxBytes int
}

// ErrSpill wraps what Spill.To returned.
var ErrSpill = errors.New("record: the answer could not be handed on")

// Spill hands an answer on in pieces, so that one of any size takes
// constant memory: once the encoded answer passes Above bytes, To gets it,
// and again each time Chunk more bytes are encoded. Pieces end between rows.
type Spill struct {
	Above, Chunk int
	// To takes the piece; the encoder reuses its bytes once To returns.
	To func([]byte) error
}

// Encoder writes an answer's rows as a JSON array as they arrive, after a
// prefix, into one buffer, or in pieces (Spill).
type Encoder struct {
	lim     Limits
	spill   Spill
	spilled bool
	prefix  int // bytes of the prefix and the array's "["
	suffix  string
	buf     []byte
	cols    []Column
	rows    int
	extra   int // what escaping the buffer as a JSON string adds to it
	// keepFirst: the first row's values are kept (KeepFirst), in first.
	keepFirst bool
	first     []any
}

// NewEncoder starts an answer with prefix, e.g. `{"cod_error":0,"data":`,
// and ends it with suffix, e.g. `}`: whoever finishes the answer (the
// gateway, or the layer that keeps it under an idempotency key) needs to
// know nothing of its frame.
func NewEncoder(prefix, suffix string, lim Limits) *Encoder {
	// A first guess a one-record answer fits (Get_Referencias' 50 columns
	// take 1,011 bytes); a longer one grows by doubling. Every request
	// allocates it, and 4 KB here was a quarter of a read's allocations,
	// which set the collector's pace (infra/docs/measurements.md).
	e := &Encoder{lim: lim, suffix: suffix, buf: make([]byte, 0, 1024)}
	e.buf = append(append(e.buf, prefix...), '[')
	e.prefix = len(e.buf)
	e.extra = stringExtra(e.buf)
	return e
}

// SpillTo makes the encoder hand the answer on in pieces (see Spill). An
// answer that ends within s.Above is never spilled.
func (e *Encoder) SpillTo(s Spill) { e.spill = s }

// Spilled reports whether part of the answer was handed on: it can no longer
// be reset or replaced by a refusal.
func (e *Encoder) Spilled() bool { return e.spilled }

// Reset drops the rows encoded so far, for a call that starts over; an
// encoder that spilled cannot start over (its caller must not retry).
func (e *Encoder) Reset() {
	if e.spilled {
		panic("record: Reset after a spill")
	}
	e.extra -= stringExtra(e.buf[e.prefix:])
	e.buf = e.buf[:e.prefix]
	e.cols, e.rows, e.first = nil, 0, nil
}

// Columns sets the columns of the rows that follow.
func (e *Encoder) Columns(cols []Column) { e.cols = cols }

// Rows is how many rows were encoded.
func (e *Encoder) Rows() int { return e.rows }

// Row encodes one row; vals[i] is column i's value (see Kind), nil for
// NULL. It keeps nothing of vals, so the caller may reuse it and the values'
// buffers. Past a limit it encodes nothing and returns erp.ErrTooManyRows or
// erp.ErrAnswerTooLarge.
func (e *Encoder) Row(vals []any) error {
	if e.lim.MaxRows > 0 && e.rows >= e.lim.MaxRows {
		return erp.ErrTooManyRows
	}
	start := len(e.buf)
	if e.rows > 0 {
		e.buf = append(e.buf, ',')
	}
	e.buf = append(e.buf, '{')
	for i, col := range e.cols {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.buf = AppendString(e.buf, col.Name)
		e.buf = append(e.buf, ':')
		var v any
		if i < len(vals) {
			v = vals[i]
		}
		if e.tooLarge(v) {
			e.buf = e.buf[:start]
			return erp.ErrAnswerTooLarge
		}
		e.buf = appendValue(e.buf, col.Kind, v)
	}
	e.buf = append(e.buf, '}')
	extra := stringExtra(e.buf[start:])
	// Room for the closing "]" and a suffix of a few bytes.
	if e.lim.MaxBytes > 0 && len(e.buf)+e.extra+extra+8 > e.lim.MaxBytes {
		e.buf = e.buf[:start]
		return erp.ErrAnswerTooLarge
	}
	e.extra += extra
	if e.rows == 0 && e.keepFirst {
		e.first = make([]any, len(e.cols))
		for i := range e.first {
			if i < len(vals) {
				e.first[i] = own(vals[i])
			}
		}
	}
	e.rows++
	if e.spill.To != nil && ((e.spilled && len(e.buf) >= e.spill.Chunk) || len(e.buf) >= e.spill.Above) {
		err := e.spill.To(e.buf)
		e.spilled = true
		e.buf, e.extra = e.buf[:0], 0
		if err != nil {
			return fmt.Errorf("%w: %w", ErrSpill, err)
		}
	}
	return nil
}

// Holds reports whether one more row, of at most raw bytes as the database
// sends it (its columns' names included), surely fits the answer's limits:
// a caller that could not take the row back (its write committed with it)
// asks first. A byte of a value takes at most 6 in JSON (\u00XX), 7 once
// the answer is a JSON string (StringSize); quotes and separators little
// more.
func (e *Encoder) Holds(raw int) bool {
	if e.lim.MaxRows > 0 && e.rows >= e.lim.MaxRows {
		return false
	}
	return e.lim.MaxBytes <= 0 || len(e.buf)+e.extra+7*raw+len(e.suffix)+64 <= e.lim.MaxBytes
}

// KeepFirst makes the encoder keep the first row's values, for First: a
// batch passes them from one call to the next. Other answers copy nothing.
func (e *Encoder) KeepFirst() { e.keepFirst = true }

// First is the value of column name in the first row, as Row got it; ok is
// false when there is no row or no such column, or First was not asked for
// (KeepFirst).
func (e *Encoder) First(name string) (v any, kind Kind, ok bool) {
	for i, c := range e.cols {
		if c.Name == name && e.first != nil {
			return e.first[i], c.Kind, true
		}
	}
	return nil, 0, false
}

// own is v, or a copy of it when the caller may reuse its bytes.
func own(v any) any {
	if b, ok := v.([]byte); ok {
		return append([]byte(nil), b...)
	}
	return v
}

// tooLarge tells, before a long value is encoded, that it cannot fit: a BLOB
// of tens of megabytes must not be base64-encoded into memory only to be
// refused.
func (e *Encoder) tooLarge(v any) bool {
	if e.lim.MaxBytes <= 0 {
		return false
	}
	n := 0
	switch v := v.(type) {
	case string:
		n = len(v)
	case []byte:
		n = base64.StdEncoding.EncodedLen(len(v))
	}
	return len(e.buf)+e.extra+n > e.lim.MaxBytes
}

// Finish closes the array, appends the suffix and returns the answer, or
// what of it was not spilled. It may be called more than once.
func (e *Encoder) Finish() []byte {
	return append(append(e.buf, ']'), e.suffix...)
}

// StringSize is len(b) written as a JSON string by the Lambda runtime
// (encoding/json without HTML escaping), without the quotes: what a body of b
// costs inside a Lambda function's response, whose 6 MB limit counts that
// form.
func StringSize(b []byte) int { return len(b) + stringExtra(b) }

// stringExtra is what encoding/json's escaping adds to b when HTML escaping
// is off, as aws-lambda-go has it: a backslash before " and \, \u00XX for
// control characters without a short form, \u2028 and \u2029 for those two
// separators, \ufffd for invalid UTF-8.
func stringExtra(b []byte) int {
	n := 0
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				n++
			case c < 0x20:
				switch c {
				case '\n', '\r', '\t', '\b', '\f':
					n++
				default:
					n += 5
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 5 // one byte becomes \ufffd
		case r == '\u2028' || r == '\u2029':
			n += 3
		}
		i += size
	}
	return n
}
