package firebird

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/erp-gateway/gateway/shared/calls"
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/record"
)

// A BLOB costs a round trip of its own for each row that carries one (its
// open, segments and close), and ERPs keep descriptions, notes and photos in
// BLOBs. So a connection reads a procedure plainly the first time, as the
// raw driver would; when its answer had BLOB columns, it learns their types
// (the signatures' query, once per connection) and from then on selects
// each BLOB in the row when it fits, and the BLOB itself only where it does
// not: a long BLOB stays exact and the answer is byte for byte the plain
// one (collect merges the two). A procedure without BLOBs costs nothing
// more.

// longColumn names the column that carries the BLOB of the column before it
// in the rows where that one could not (collect).
const longColumn = "GATEWAY$LONG"

const (
	// rowMessageMax is what the row's message may take: the server refuses
	// a message past 64 KB, so the inline BLOBs share what the other
	// columns leave of it.
	rowMessageMax = 64000
	// varcharMax is the longest VARCHAR, in bytes.
	varcharMax = 32765
	// inlineLeast: a BLOB column with less room in the row is read as a BLOB.
	inlineLeast = 256
)

// readPlan is how a connection reads one procedure.
type readPlan struct {
	text string
	// blobs: its answer had BLOB columns; described: the plan is settled.
	blobs, described bool
}

// readQuery is the statement the session reads procedure with.
func (s *Session) readQuery(ctx context.Context, procedure string, nargs int) string {
	plain := selectSQL(procedure, nargs)
	plan := s.conn.reads[plain]
	if plan == nil {
		return plain
	}
	if !plan.described {
		plan.described = true
		name := strings.ToUpper(procedure)
		if sigs, err := signatures(ctx, s.each, []string{name}); err == nil {
			if text, ok := inlineSelect(procedure, nargs, sigs[name].Outputs); ok {
				plan.text = text
				s.conn.forget(plain)
			}
		}
	}
	return plan.text
}

// learn notes what a plain read of procedure answered with, cols: whether
// it has BLOBs to describe.
func (s *Session) learn(procedure string, nargs int, cols []record.Column) {
	plain := selectSQL(procedure, nargs)
	if s.conn.reads[plain] != nil {
		return
	}
	blobs := slices.ContainsFunc(cols, func(c record.Column) bool { return c.Kind == record.Binary })
	s.conn.reads[plain] = &readPlan{text: plain, blobs: blobs, described: !blobs}
}

// plainAgain makes the connection read procedure plainly from now on: its
// inline statement failed to prepare (the procedure changed, say).
func (s *Session) plainAgain(procedure string, nargs int) string {
	plain := selectSQL(procedure, nargs)
	s.conn.reads[plain] = &readPlan{text: plain, described: true}
	return plain
}

// inlineSelect is the SELECT of procedure with its BLOB columns in the row
// when they fit; ok is false when it has none that can be.
func inlineSelect(procedure string, nargs int, outs []catalog.DBParam) (text string, ok bool) {
	var inline []int
	used := 0
	for i, o := range outs {
		if inlinable(o) {
			inline = append(inline, i)
			used += 8 + 4 // the long column's BLOB id, and a NULL flag
			continue
		}
		used += messageBytes(o) + 4
	}
	if len(inline) == 0 {
		return "", false
	}
	room := min((rowMessageMax-used)/len(inline)-6, varcharMax)
	if room < inlineLeast {
		return "", false
	}
	cols := make([]string, 0, len(outs)+len(inline))
	for _, o := range outs {
		name := calls.Quote(o.Name)
		if !inlinable(o) {
			cols = append(cols, name)
			continue
		}
		// A CAST of a longer BLOB would fail the whole statement: the
		// length decides first. UTF8 takes up to 4 bytes a character.
		as, n := "VARCHAR(%d) CHARACTER SET OCTETS", room
		if o.SubType == 1 {
			as, n = "VARCHAR(%d) CHARACTER SET "+o.Charset, room/4
		}
		cols = append(cols,
			fmt.Sprintf("CASE WHEN OCTET_LENGTH(%s) <= %d THEN CAST(%s AS "+as+") END AS %s", name, n, name, n, name),
			fmt.Sprintf("CASE WHEN OCTET_LENGTH(%s) > %d THEN %s END AS %s", name, n, name, longColumn))
	}
	return "SELECT " + strings.Join(cols, ", ") + " FROM " + procedure + placeholders(nargs), true
}

// inlinable: a binary BLOB, or a text BLOB in a character set the server
// transliterates (NONE's bytes reach the driver as they are).
func inlinable(p catalog.DBParam) bool {
	if p.Type != "BLOB" {
		return false
	}
	switch p.SubType {
	case 0:
		return true
	case 1:
		return p.Charset != "" && p.Charset != "NONE" && p.Charset != "OCTETS"
	}
	return false
}

// messageBytes is at most what a column takes in a row's message.
func messageBytes(p catalog.DBParam) int {
	switch p.Type {
	case "CHAR", "VARCHAR":
		return p.Chars*4 + 2
	case "SMALLINT", "INTEGER", "DATE", "TIME", "BOOLEAN", "FLOAT":
		return 4
	}
	return 16
}
