package firebird

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nakagami/firebirdsql"

	"github.com/erp-gateway/gateway/shared/calls"
)

// A BLOB costs a round trip of its own for each row that carries one (its
// open, segments and close), and ERPs keep descriptions, notes and photos in
// BLOBs. So the first time a connection reads a procedure it prepares the
// plain SELECT, whose description says which columns are BLOBs (patch 0010
// of third_party: no round trip), and, when some can travel in the row,
// prepares instead a SELECT that casts each into the row when it fits and
// selects the BLOB itself only where it does not: a long BLOB stays exact
// and the answer is byte for byte the plain one (collect merges the two).
// A procedure without BLOBs costs nothing more.

// longColumn names the column that carries the BLOB of the column before it
// in the rows where that one could not (collect).
const longColumn = "GATEWAY$LONG"

const (
	// rowMessageMax is what the row's message may take; the inline BLOBs
	// share what the other columns leave of it. The server refuses a
	// message past 64 KB, and one near that costs it more per row: a
	// one-row read of Get_Referencias (two BLOBs) took Firebird 0.21 ms of
	// CPU with 64,000 bytes, 0.15 ms with 48,000, 32,000 or 16,000
	// (infra/docs/measurements.md).
	rowMessageMax = 48000
	// varcharMax is the longest VARCHAR, in bytes.
	varcharMax = 32765
	// inlineLeast: a BLOB column with less room in the row is read as a BLOB.
	inlineLeast = 256
)

// Firebird's character sets NONE and OCTETS, by their ids: a text BLOB in
// either reaches the client as its bytes are, never transliterated.
const (
	charsetNone   = 0
	charsetOctets = 1
)

// described is the driver's statement as patch 0010 describes it.
type described interface {
	ColumnTypes() []firebirdsql.ColumnType
}

// readQuery is the statement the session reads procedure with, settled on
// the connection's first read of it (see above).
func (s *Session) readQuery(ctx context.Context, procedure string, nargs int) (string, error) {
	plain := selectSQL(procedure, nargs)
	if text, ok := s.conn.reads[plain]; ok {
		return text, nil
	}
	st, err := s.prepare(ctx, plain)
	var fb *firebirdsql.FbError
	if errors.As(err, &fb) && hasCode(fb, []int{firebirdsql.ISCIllegalPrcType}) {
		// Not selectable (no SUSPEND): EXECUTE PROCEDURE answers its one
		// row of outputs, as a write's does.
		text := "EXECUTE PROCEDURE " + calls.QuoteProcedure(procedure) + placeholders(nargs)
		s.conn.reads[plain] = text
		return text, nil
	}
	if err != nil {
		return "", err
	}
	text := plain
	if d, ok := st.Stmt.(described); ok {
		if inline, ok := inlineSelect(procedure, nargs, d.ColumnTypes(), s.conn.utf8); ok {
			text = inline
			s.conn.forget(plain)
		}
	}
	s.conn.reads[plain] = text
	return text, nil
}

// plainAgain makes the connection read procedure plainly from now on: its
// inline statement failed to prepare (a cast the server refused, say).
func (s *Session) plainAgain(procedure string, nargs int) string {
	plain := selectSQL(procedure, nargs)
	s.conn.reads[plain] = plain
	return plain
}

// inlineSelect is the SELECT of procedure with its BLOB columns in the row
// when they fit; ok is false when it has none that can be. Text goes in the
// row only on a connection in UTF8 (utf8), where a VARCHAR and a text BLOB
// reach the driver alike (on others it decodes only some character sets'
// VARCHARs, and none of NONE's), cast to UTF8 as the server hands the BLOB.
func inlineSelect(procedure string, nargs int, cols []firebirdsql.ColumnType, utf8 bool) (text string, ok bool) {
	var inline []int
	used := 0
	for i, c := range cols {
		if inlinable(c, utf8) {
			inline = append(inline, i)
			used += 8 + 4 // the long column's BLOB id, and a NULL flag
			continue
		}
		used += columnBytes(c) + 4
	}
	if len(inline) == 0 {
		return "", false
	}
	room := min((rowMessageMax-used)/len(inline)-6, varcharMax)
	if room < inlineLeast {
		return "", false
	}
	list := make([]string, 0, len(cols)+len(inline))
	for _, c := range cols {
		name := calls.Quote(c.Name)
		if !inlinable(c, utf8) {
			list = append(list, name)
			continue
		}
		// A CAST of a longer BLOB would fail the whole statement: the
		// length decides first. UTF8 takes up to 4 bytes a character.
		as, n := "VARCHAR(%d) CHARACTER SET OCTETS", room
		if c.SubType == 1 {
			as, n = "VARCHAR(%d) CHARACTER SET UTF8", room/4
		}
		list = append(list,
			fmt.Sprintf("CASE WHEN OCTET_LENGTH(%s) <= %d THEN CAST(%s AS "+as+") END AS %s", name, n, name, n, name),
			fmt.Sprintf("CASE WHEN OCTET_LENGTH(%s) > %d THEN %s END AS %s", name, n, name, longColumn))
	}
	return "SELECT " + strings.Join(list, ", ") + " FROM " + calls.QuoteProcedure(procedure) + placeholders(nargs), true
}

// inlinable: a binary BLOB, or on a connection in UTF8 a text BLOB the
// server transliterates to it (Firebird then describes it in UTF8; one in
// NONE or OCTETS keeps its own, and its bytes reach the driver as they are).
func inlinable(c firebirdsql.ColumnType, utf8 bool) bool {
	if c.Type != firebirdsql.SQL_TYPE_BLOB {
		return false
	}
	switch c.SubType {
	case 0:
		return true
	case 1:
		cs := c.Scale & 0xFF
		return utf8 && cs != charsetNone && cs != charsetOctets
	}
	return false
}

// columnBytes is at most what a column takes in a row's message: its
// length, a VARCHAR's two bytes of length, and its alignment.
func columnBytes(c firebirdsql.ColumnType) int {
	return c.Length + 2 + 6
}
