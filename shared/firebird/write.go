package firebird

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nakagami/firebirdsql"

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
//
// The transaction's commit goes with the block, one round trip for the
// write (begin, block, fetch and commit), when the block is its
// transaction's last statement (w.Last), returns at most one row after all
// its work (WriteBlock's oneRow: an answer of more, a read-back's or a
// selectable procedure's, makes the pool write this write's block to
// return rows as they are read, and the call run again: errManyRows),
// needs nothing of its transaction after it (no BLOB in its answer;
// parts, when any, keep a one-row answer whole), its row surely fits out,
// and commitWith (its connection answered within freshFor, and the
// database has no trigger ON TRANSACTION COMMIT). Otherwise the commit waits
// for the block's answer: two round trips.
func (s *Session) Write(ctx context.Context, name string, w calls.Write, parts func(proc, rb catalog.Procedure) calls.Parts, extra []any, out *record.Encoder) ([]any, error) {
	procs := procedures(w)
	o := erp.OriginOf(ctx)
	argv := make([]any, 0, 2+len(extra)+len(w.Args)+len(w.ReadArgs))
	argv = append(append(append(append(argv, o.TokenID, o.RequestID), extra...), w.Args...), w.ReadArgs...)
	// Two CLAVEs may call one procedure with different numbers of
	// arguments (inputs with defaults left out): each has its own block.
	key := fmt.Sprintf("%s %s(%d) %s(%d)", name, w.Procedure, len(w.Args), w.ReadBack, len(w.ReadArgs))
	_, many := s.conn.many.Load(key)
	form := key
	if many {
		form += " rows"
	}
	var last []driver.Value
	err := s.block(ctx, form, procs, func(sigs map[string]catalog.Procedure) block {
		var p calls.Parts
		proc, rb := sigs[procs[0]], sigs[strings.ToUpper(w.ReadBack)]
		if parts != nil {
			p = parts(proc, rb)
		}
		text, hidden := WriteBlock(w.Procedure, len(w.Args), w.ReadBack, len(w.ReadArgs), proc, rb, p, !many)
		b := block{text: text, hidden: hidden}
		b.row, b.oneRow = rowBytes(calls.Answers(w.ReadBack, proc, rb))
		b.oneRow = b.oneRow && !many && (parts == nil || p.KeepsOneRow)
		return b
	}, func(b block) (err error) {
		last, err = s.Query(ctx, b.text, argv, out, b.hidden, w.Last && b.oneRow && out.Holds(b.row) && s.commitWith())
		return err
	})
	err = unblock(err)
	if isManyRows(err) {
		s.conn.many.Store(key, true)
		return nil, fmt.Errorf("%w: %w", errManyRows, err)
	}
	if err != nil {
		return nil, s.outcome(ctx, err)
	}
	hidden := make([]any, len(last))
	for i, v := range last {
		hidden[i] = v
	}
	return hidden, nil
}

// freshFor is how recently a connection must have answered for a write's
// commit to go with its block. Such a write's outcome is unknown when its
// connection fails before answering, where a write that waits for its
// block's answer before its commit is retried on a fresh connection: a
// connection that answered a moment ago is most likely alive (one that sat
// idle may have been cut, or its server restarted, unseen).
const freshFor = 5 * time.Second

// commitWith reports whether a write's commit may go with its last
// statement, sent before that statement's answer is known: on a fresh
// connection, and in a database without a trigger ON TRANSACTION COMMIT.
// Such a trigger runs after a statement that failed, and acts on what it
// left in the transaction's context variables, which its savepoint does not
// undo (an ERP's outbox written for a row that was refused), where the
// rollback that follows a failed statement's answer runs no commit trigger.
func (s *Session) commitWith() bool { return s.conn.blindCommit && s.fresh() }

// fresh reports whether the session's connection answered within freshFor
// and its socket has not been closed since: a server restarted a moment
// ago then costs the write its block's send, which fails before its commit
// was sent, and the write runs again on a fresh connection, where a commit
// sent with it would have left its outcome unknown.
func (s *Session) fresh() bool { return since(s.conn.used) < freshFor && s.conn.wire.quiet() }

// errManyRows: a one-row block's answer had a second row, and the block
// failed, everything undone (WriteBlock): the call runs again, its
// block written to return the rows as they are read.
var errManyRows = fmt.Errorf("firebird: the write's answer had more than one row: %w", calls.ErrRunAgain)

// isManyRows reports the failure of a one-row block whose answer had a
// second row.
func isManyRows(err error) bool {
	var fb *firebirdsql.FbError
	return errors.As(err, &fb) && strings.Contains(fb.Message, manyRows)
}

// rowBytes is the most bytes a row of cols takes as the database sends it,
// names included; ok is false when a column is a BLOB or an array, read
// after the row in its transaction.
func rowBytes(cols []catalog.DBParam) (n int, ok bool) {
	for _, c := range cols {
		if c.Type == "BLOB" || c.Type == "ARRAY" {
			return 0, false
		}
		n += len(c.Name) + messageBytes(c) + 8
	}
	return n, true
}

// messageBytes is at most what a parameter takes in a row's message.
func messageBytes(p catalog.DBParam) int {
	switch p.Type {
	case "CHAR", "VARCHAR":
		return p.Chars*4 + 2
	case "SMALLINT", "INTEGER", "DATE", "TIME", "BOOLEAN", "FLOAT":
		return 4
	}
	return 16
}

// originInputs are every write block's first inputs: the origin's two
// values, which originContext sets.
func originInputs() []string {
	return []string{"GATEWAY$TOKEN_ID VARCHAR(255) = ?", "GATEWAY$REQUEST_ID VARCHAR(255) = ?"}
}

// typeOf declares a block's variable or input as p is declared.
func typeOf(p catalog.DBParam) string { return "TYPE OF " + calls.Quote(p.Domain) }

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
//
// A block returns its row only once all its work is done (parts.End
// included), so that a commit sent with it keeps the block whole or
// nothing of it: Firebird keeps what a selectable block did before each
// row it returned, and undoes what it did after the last when it fails.
// A read-back's rows are returned as they are read, and parts.End runs
// after them; with oneRow, the block reads the read-back whole before its
// row, and a second row fails it with manyRows, everything undone.
//
// A selectable procedure (one with SUSPEND) is run by FOR SELECT, its rows
// read to the last: EXECUTE PROCEDURE would end it at its first SUSPEND,
// and commit a write cut short (a procedure that writes a row and returns
// it, three times, would write one). Without a read-back its rows are the
// answer, read as a read-back's are, and parts.After runs before them, as
// the procedure runs while they are read; a procedure that never reaches
// SUSPEND then answers no row. One with SUSPEND and no outputs cannot be
// selected from: its block fails to prepare with the server's "procedure
// ... does not return any values", a refusal where EXECUTE PROCEDURE would
// have run it cut short (catalog's Diagnose says why).
func WriteBlock(procedure string, nargs int, readBack string, nreadArgs int, proc, rb catalog.Procedure, parts calls.Parts, oneRow bool) (text string, hidden int) {
	ins := append(originInputs(), parts.Inputs...)
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
		return list(names)
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
	// Where the answer's rows come from: the read-back, or a selectable
	// procedure's own rows.
	ownRows := readBack == "" && answersByItsRows(proc)
	rows := ""
	switch {
	case readBack != "":
		rows = "SELECT * FROM " + calls.QuoteProcedure(readBack) + readArgs
	case ownRows:
		rows = "SELECT * FROM " + calls.QuoteProcedure(procedure) + args
	}
	counted := rows != "" && len(into) > 0 && oneRow
	if counted {
		b.WriteString("DECLARE GATEWAY$ROWS INTEGER = 0;\n")
	}
	b.WriteString(parts.Declare)
	b.WriteString("BEGIN\n" + originContext + parts.Before)
	if !ownRows { // else it runs as its rows, the answer, are read below
		b.WriteString(runProcedure(calls.QuoteProcedure(procedure)+args, proc, dropped))
	}
	b.WriteString(parts.After)
	switch {
	case len(into) == 0:
		b.WriteString(parts.End)
	case rows == "":
		b.WriteString(parts.EachRow + parts.End + "  SUSPEND;\n")
	case counted:
		b.WriteString("  FOR " + rows + " INTO " + strings.Join(into, ", ") + " DO\n  BEGIN\n")
		b.WriteString("    GATEWAY$ROWS = GATEWAY$ROWS + 1;\n    IF (GATEWAY$ROWS > 1) THEN GATEWAY$SET = CAST('" + manyRows + "' AS INTEGER);\n")
		b.WriteString(parts.EachRow + "  END\n" + parts.End + "  IF (GATEWAY$ROWS = 1) THEN SUSPEND;\n")
	case parts.EachRow != "":
		b.WriteString("  FOR " + rows + " INTO " + strings.Join(into, ", ") + " DO\n  BEGIN\n")
		b.WriteString(parts.EachRow + "    SUSPEND;\n  END\n" + parts.End)
	default:
		b.WriteString("  FOR " + rows + " INTO " + strings.Join(into, ", ") + " DO SUSPEND;\n" + parts.End)
	}
	b.WriteString("END")
	return b.String(), len(parts.Hidden)
}

// answersByItsRows reports a procedure whose rows are a write's answer
// when it has no read-back: one with SUSPEND and outputs, run by FOR
// SELECT as its rows are read.
func answersByItsRows(proc catalog.Procedure) bool { return proc.Selectable && len(proc.Outputs) > 0 }

// runProcedure is the statement of a write's or a document's block that
// runs call (the procedure and its arguments) to its end, its outputs
// dropped into the variables dropped: EXECUTE PROCEDURE, or for one with
// SUSPEND, FOR SELECT over all its rows. One with SUSPEND and no outputs
// cannot be selected from, and fails the block's prepare (WriteBlock).
func runProcedure(call string, proc catalog.Procedure, dropped []string) string {
	switch {
	case proc.Selectable && len(dropped) == 0:
		return "  FOR SELECT * FROM " + call + " INTO :GATEWAY$SET DO BEGIN END\n"
	case proc.Selectable:
		return "  FOR SELECT * FROM " + call + " INTO " + strings.Join(dropped, ", ") + " DO BEGIN END\n"
	case len(dropped) == 0:
		return "  EXECUTE PROCEDURE " + call + ";\n"
	}
	return "  EXECUTE PROCEDURE " + call + " RETURNING_VALUES " + strings.Join(dropped, ", ") + ";\n"
}

// manyRows is the text of the conversion error a one-row block fails with
// when its answer has a second row (a read-back's, or a selectable
// procedure's own): a text no procedure's error holds, which Firebird
// quotes ("conversion error from string ...").
const manyRows = "GATEWAY$MANY_ROWS"
