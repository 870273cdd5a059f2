package firebird

import (
	"fmt"
	"strings"

	"github.com/erp-gateway/gateway/shared/catalog"
)

// A write runs its procedure and its read-back in one statement, an
// EXECUTE BLOCK (Session.Block): on its own each would cost a round trip,
// and every round trip crosses a WAN (README, "Round trips").

// WriteParts is what a layer adds to a write's block (the key protocol's
// claim and keeping). Its names must start GATEWAY$, which no procedure's
// column is expected to.
type WriteParts struct {
	// Inputs are declared before the procedure's arguments, each
	// "NAME TYPE = ?"; their values come first.
	Inputs []string
	// Declare holds declarations of variables.
	Declare string
	// Before runs before the procedure, After after it, EachRow for each
	// read-back row before it is returned, and End after the rows.
	Before, After, EachRow, End string
	// Hidden are columns returned after the read-back's, each "NAME TYPE";
	// they are not the answer's.
	Hidden []string
}

// WriteBlock writes the block of a write of procedure with nargs arguments
// and its read-back with nreadArgs, from their signatures, with parts. Its
// parameters and columns take the types of the procedures' own (TYPE OF
// their domains): the arguments are converted exactly as a plain EXECUTE
// PROCEDURE converts them, and the rows come back exactly as a plain SELECT
// returns them, names and types. An argument beyond a procedure's inputs is
// declared INTEGER: the block then fails to prepare with the server's own
// "Input parameter mismatch", as the plain call would. hidden is how many
// of its last columns are parts.Hidden.
func WriteBlock(procedure string, nargs int, readBack string, nreadArgs int, proc, rb catalog.Procedure, parts WriteParts) (text string, hidden int) {
	typeOf := func(p catalog.DBParam) string { return "TYPE OF " + Quote(p.Domain) }
	ins := append([]string(nil), parts.Inputs...)
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
	args, readArgs := declare("P", nargs, proc.Inputs), declare("R", nreadArgs, rb.Inputs)
	var b strings.Builder
	b.WriteString("EXECUTE BLOCK")
	if len(ins) > 0 {
		b.WriteString(" (" + strings.Join(ins, ", ") + ")")
	}
	b.WriteString("\n")
	var cols, into []string
	for _, c := range rb.Outputs {
		cols = append(cols, Quote(c.Name)+" "+typeOf(c))
		into = append(into, ":"+Quote(c.Name))
	}
	cols = append(cols, parts.Hidden...)
	if len(cols) > 0 {
		b.WriteString("RETURNS (" + strings.Join(cols, ", ") + ")\n")
	}
	b.WriteString("AS\n")
	var dropped []string
	for i, o := range proc.Outputs {
		fmt.Fprintf(&b, "DECLARE GATEWAY$O%d %s;\n", i, typeOf(o))
		dropped = append(dropped, fmt.Sprintf(":GATEWAY$O%d", i))
	}
	b.WriteString(parts.Declare)
	b.WriteString("BEGIN\n" + parts.Before)
	b.WriteString("  EXECUTE PROCEDURE " + procedure + args)
	if len(dropped) > 0 {
		b.WriteString(" RETURNING_VALUES " + strings.Join(dropped, ", "))
	}
	b.WriteString(";\n" + parts.After)
	switch {
	case len(into) > 0 && parts.EachRow != "":
		b.WriteString("  FOR SELECT * FROM " + readBack + readArgs + " INTO " + strings.Join(into, ", ") + " DO\n  BEGIN\n")
		b.WriteString(parts.EachRow + "    SUSPEND;\n  END\n")
	case len(into) > 0:
		b.WriteString("  FOR SELECT * FROM " + readBack + readArgs + " INTO " + strings.Join(into, ", ") + " DO SUSPEND;\n")
	}
	b.WriteString(parts.End + "END")
	return b.String(), len(parts.Hidden)
}
