package firebird

import (
	"context"
	"fmt"
	"strings"

	"github.com/erp-gateway/gateway/shared/calls"
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/record"
)

// A write runs its procedure and its read-back in one statement, an
// EXECUTE BLOCK (Session.block): on its own each would cost a round trip,
// and every round trip crosses a WAN (infra/docs/internals.md#round-trips).

// procedures are the write's procedures, as signatures names them.
func procedures(w calls.Write) []string {
	procs := []string{strings.ToUpper(w.Procedure)}
	if w.ReadBack != "" {
		procs = append(procs, strings.ToUpper(w.ReadBack))
	}
	return procs
}

// Write runs w in the session's transaction as one block (WriteBlock), with
// what parts adds (nil: nothing), whose inputs' values are extra, and
// encodes its answer into out. It returns the hidden columns (parts.Hidden)
// of the last row. Every block first sets the transaction's origin
// (erp.OriginOf(ctx)) for the ERP's triggers, in the round trip it makes
// anyway. name tells blocks apart whose parts differ.
func (s *Session) Write(ctx context.Context, name string, w calls.Write, parts func(proc, rb catalog.Procedure) calls.Parts, extra []any, out *record.Encoder) ([]any, error) {
	procs := procedures(w)
	o := erp.OriginOf(ctx)
	argv := make([]any, 0, 2+len(extra)+len(w.Args)+len(w.ReadArgs))
	argv = append(append(append(append(argv, o.TokenID, o.RequestID), extra...), w.Args...), w.ReadArgs...)
	last, err := s.block(ctx, name+" "+w.Procedure+" "+w.ReadBack, procs, func(sigs map[string]catalog.Procedure) (string, int) {
		var p calls.Parts
		proc, rb := sigs[procs[0]], sigs[strings.ToUpper(w.ReadBack)]
		if parts != nil {
			p = parts(proc, rb)
		}
		return WriteBlock(w.Procedure, len(w.Args), w.ReadBack, len(w.ReadArgs), proc, rb, p)
	}, argv, out)
	if err != nil {
		return nil, s.outcome(ctx, err)
	}
	hidden := make([]any, len(last))
	for i, v := range last {
		hidden[i] = v
	}
	return hidden, nil
}

// originContext is what every write block runs first: the origin's two
// values, its first inputs, set in the transaction's context.
const originContext = `  GATEWAY$SET = RDB$SET_CONTEXT('USER_TRANSACTION', 'GATEWAY_TOKEN_ID', :GATEWAY$TOKEN_ID);
  GATEWAY$SET = RDB$SET_CONTEXT('USER_TRANSACTION', 'GATEWAY_REQUEST_ID', :GATEWAY$REQUEST_ID);
`

// WriteBlock writes the block of a write of procedure with nargs arguments
// and its read-back with nreadArgs ("": answered by the procedure's
// outputs), from their signatures, with parts. Its parameters and columns
// take the types of the procedures' own (TYPE OF their domains): the
// arguments are converted exactly as a plain EXECUTE PROCEDURE converts
// them, and the rows come back exactly as a plain SELECT returns them,
// names and types. An argument beyond a procedure's inputs is declared
// INTEGER: the block then fails to prepare with the server's own "Input
// parameter mismatch", as the plain call would. Its first inputs are the
// origin's (originContext), then parts'. hidden is how many of its last
// columns are parts.Hidden.
func WriteBlock(procedure string, nargs int, readBack string, nreadArgs int, proc, rb catalog.Procedure, parts calls.Parts) (text string, hidden int) {
	typeOf := func(p catalog.DBParam) string { return "TYPE OF " + calls.Quote(p.Domain) }
	ins := append([]string{"GATEWAY$TOKEN_ID VARCHAR(255) = ?", "GATEWAY$REQUEST_ID VARCHAR(255) = ?"}, parts.Inputs...)
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
	b.WriteString("EXECUTE BLOCK (" + strings.Join(ins, ", ") + ")\n")
	var cols, into []string
	for _, c := range calls.Answers(readBack, proc, rb) {
		cols = append(cols, calls.Quote(c.Name)+" "+typeOf(c))
		into = append(into, ":"+calls.Quote(c.Name))
	}
	cols = append(cols, parts.Hidden...)
	if len(cols) > 0 {
		b.WriteString("RETURNS (" + strings.Join(cols, ", ") + ")\n")
	}
	b.WriteString("AS\nDECLARE GATEWAY$SET INTEGER;\n")
	var dropped []string
	if readBack != "" {
		for i, o := range proc.Outputs {
			fmt.Fprintf(&b, "DECLARE GATEWAY$O%d %s;\n", i, typeOf(o))
			dropped = append(dropped, fmt.Sprintf(":GATEWAY$O%d", i))
		}
	} else {
		dropped = into
	}
	b.WriteString(parts.Declare)
	b.WriteString("BEGIN\n" + originContext + parts.Before)
	b.WriteString("  EXECUTE PROCEDURE " + procedure + args)
	if len(dropped) > 0 {
		b.WriteString(" RETURNING_VALUES " + strings.Join(dropped, ", "))
	}
	b.WriteString(";\n" + parts.After)
	switch {
	case len(into) > 0 && readBack == "":
		b.WriteString("  BEGIN\n" + parts.EachRow + "    SUSPEND;\n  END\n")
	case len(into) > 0 && parts.EachRow != "":
		b.WriteString("  FOR SELECT * FROM " + readBack + readArgs + " INTO " + strings.Join(into, ", ") + " DO\n  BEGIN\n")
		b.WriteString(parts.EachRow + "    SUSPEND;\n  END\n")
	case len(into) > 0:
		b.WriteString("  FOR SELECT * FROM " + readBack + readArgs + " INTO " + strings.Join(into, ", ") + " DO SUSPEND;\n")
	}
	b.WriteString(parts.End + "END")
	return b.String(), len(parts.Hidden)
}
