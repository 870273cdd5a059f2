package idempotency

import (
	"fmt"
	"strings"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/firebird"
)

// A keyed write claims its key, runs its procedure, reads back and keeps
// the answer (kept.go) in one statement, an EXECUTE BLOCK
// (firebird.Session.Block): the claim and the read-back on their own would
// cost two round trips more than the write without a key, which is most of
// what a write costs (README, "Measurements").

// write is what a keyed write runs.
type write struct {
	procedure, readBack string
	args, readArgs      []any
	// keep: the block may keep the answer itself: the connection's
	// character set is UTF8, in which the driver reads text as the block
	// writes it.
	keep bool
}

// block writes the block of w from the procedures' signatures. Its
// parameters and columns take the types of the procedures' own (TYPE OF
// their domains): the arguments are converted exactly as a plain EXECUTE
// PROCEDURE converts them, and the rows come back exactly as a plain
// SELECT returns them, names and types. An argument beyond a procedure's
// inputs is declared INTEGER: the block then fails to prepare with the
// server's own "Input parameter mismatch", as the plain call would. The
// block's own names start GATEWAY$, which no column of a read-back is
// expected to. keeps says the block keeps the answer itself, and returns
// after the read-back's columns GATEWAY$KEPT, 1 while the values so far fit
// in the key's row.
func (w write) block(proc, readBack catalog.Procedure) (text string, keeps bool) {
	f := form{cols: readBack.Outputs}
	header, keeps := f.header()
	keeps = keeps && w.keep
	typeOf := func(p catalog.DBParam) string { return "TYPE OF " + firebird.Quote(p.Domain) }
	var b strings.Builder
	b.WriteString("EXECUTE BLOCK (")
	var ins []string
	for i, c := range []string{"SCOPE", "IDEM_KEY", "CLAVE", "REQUEST_HASH", "CREATED_AT"} {
		ins = append(ins, fmt.Sprintf("GATEWAY$K%d TYPE OF COLUMN %s.%s = ?", i, KeyTable, c))
	}
	declare := func(prefix string, n int, inputs []catalog.DBParam) string {
		if n == 0 {
			return ""
		}
		names := make([]string, n)
		for i := range n {
			typ := "INTEGER"
			if i < len(inputs) {
				typ = typeOf(inputs[i])
			}
			names[i] = fmt.Sprintf(":GATEWAY$%s%d", prefix, i)
			ins = append(ins, fmt.Sprintf("GATEWAY$%s%d %s = ?", prefix, i, typ))
		}
		return "(" + strings.Join(names, ", ") + ")"
	}
	args, readArgs := declare("P", len(w.args), proc.Inputs), declare("R", len(w.readArgs), readBack.Inputs)
	b.WriteString(strings.Join(ins, ", ") + ")\n")
	var cols, into []string
	for _, c := range readBack.Outputs {
		cols = append(cols, firebird.Quote(c.Name)+" "+typeOf(c))
		into = append(into, ":"+firebird.Quote(c.Name))
	}
	if keeps {
		cols = append(cols, "GATEWAY$KEPT SMALLINT")
	}
	if len(cols) > 0 {
		b.WriteString("RETURNS (" + strings.Join(cols, ", ") + ")\n")
	}
	b.WriteString("AS\n")
	var dropped []string
	for i, o := range proc.Outputs {
		fmt.Fprintf(&b, "DECLARE GATEWAY$O%d %s;\n", i, typeOf(o))
		dropped = append(dropped, fmt.Sprintf(":GATEWAY$O%d", i))
	}
	claimed := ";\n"
	if keeps {
		fmt.Fprintf(&b, "DECLARE GATEWAY$A VARCHAR(%d) CHARACTER SET OCTETS;\nDECLARE GATEWAY$V VARCHAR(%d) CHARACTER SET OCTETS;\nDECLARE GATEWAY$ROW CHAR(8) CHARACTER SET OCTETS;\n", inlineMax, keptPartMax)
		claimed = " RETURNING RDB$DB_KEY INTO :GATEWAY$ROW;\n"
	}
	b.WriteString("BEGIN\n  INSERT INTO " + KeyTable + " (SCOPE, IDEM_KEY, CLAVE, REQUEST_HASH, CREATED_AT) VALUES (:GATEWAY$K0, :GATEWAY$K1, :GATEWAY$K2, :GATEWAY$K3, :GATEWAY$K4)" + claimed)
	b.WriteString("  EXECUTE PROCEDURE " + w.procedure + args)
	if len(dropped) > 0 {
		b.WriteString(" RETURNING_VALUES " + strings.Join(dropped, ", "))
	}
	b.WriteString(";\n")
	if keeps {
		b.WriteString("  GATEWAY$A = '" + strings.ReplaceAll(header, "'", "''") + "';\n  GATEWAY$KEPT = 1;\n")
	}
	switch {
	case len(into) > 0 && keeps:
		b.WriteString("  FOR SELECT * FROM " + w.readBack + readArgs + " INTO " + strings.Join(into, ", ") + " DO\n  BEGIN\n")
		b.WriteString(f.values() + "    SUSPEND;\n  END\n")
	case len(into) > 0:
		b.WriteString("  FOR SELECT * FROM " + w.readBack + readArgs + " INTO " + strings.Join(into, ", ") + " DO SUSPEND;\n")
	}
	if keeps {
		b.WriteString("  IF (GATEWAY$KEPT = 1) THEN UPDATE " + KeyTable + " SET ANSWER = :GATEWAY$A WHERE RDB$DB_KEY = :GATEWAY$ROW;\n")
	}
	b.WriteString("END")
	return b.String(), keeps
}
