package firebird

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/nakagami/firebirdsql"

	"github.com/erp-gateway/gateway/shared/calls"
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/record"
)

// A document (a batch of writes: a header and its lines) runs as one
// EXECUTE BLOCK: each call's procedure and read-back in turn, as a single
// write's block runs them, a reference between calls a variable the block
// sets from the first row of the call it names, and every call's rows
// returned by one wide RETURNS, tagged with the call's index. Its round
// trips are a single write's (begin, block and rows in one) and the
// commit's, however many calls: each call run by a statement of its own
// costs a round trip (infra/docs/internals.md#round-trips).

// document is how a document's block lays out its calls.
type document struct {
	// starts is the block's line each call's statements begin at: the
	// server names the line a failure happened at ("At block line: N").
	starts []int
	// cols are each call's answer columns: their names, and their place
	// in the block's row.
	cols [][]docColumn
	// inputs say, per call, which of its arguments are the block's inputs
	// (the rest are references) and which of its read-back's.
	inputs, readInputs [][]int
}

type docColumn struct {
	name string
	at   int
}

// Document runs calls, each a write, as one block (Tx.Document).
func (s *Session) Document(ctx context.Context, cs []catalog.Call, claim calls.Parts, extra []any, outs []*record.Encoder) error {
	var procs []string
	name := "document"
	if len(claim.Inputs) > 0 {
		name = "keyed document"
	}
	for _, c := range cs {
		w := calls.WriteOf(c)
		for _, p := range procedures(w) {
			if !slices.Contains(procs, p) {
				procs = append(procs, p)
			}
		}
		// The CLAVE: its parameters decide which references pass inside
		// the block and which NULLs it refuses.
		name += fmt.Sprintf(" %s:%s(%d) %s(%d)", c.Op.Clave, w.Procedure, len(w.Args), w.ReadBack, len(w.ReadArgs))
		for _, r := range c.Refs {
			name += fmt.Sprintf(" %d:%d:%q", r.Param, r.From, r.Field)
		}
	}
	err := s.block(ctx, name, procs, func(sigs map[string]catalog.Procedure) block {
		text, doc := documentBlock(cs, sigs, claim)
		return block{text: text, doc: doc}
	}, func(b block) error {
		if b.doc == nil {
			return calls.ErrStepByStep
		}
		o := erp.OriginOf(ctx)
		argv := append([]any{o.TokenID, o.RequestID}, extra...)
		for i, c := range cs {
			for _, j := range b.doc.inputs[i] {
				argv = append(argv, c.Args[j])
			}
			rargs := c.ReadBackArgs()
			for _, j := range b.doc.readInputs[i] {
				argv = append(argv, rargs[j])
			}
		}
		return s.query(ctx, b.text, argv, false, func(_ *stmt, rows driver.Rows) error {
			return b.doc.collect(rows, outs)
		})
	})
	if err == nil || errors.Is(err, calls.ErrStepByStep) {
		return err
	}
	if phase(s.at.Load()) == preparing {
		// The block did not prepare (a procedure changed, a statement too
		// large for the server): one by one, each call names its own.
		if errors.Is(classify(ctx, preparing, err), erp.ErrCannotRun) {
			// The connection runs this document step by step from now on,
			// rather than fail to prepare its block again.
			s.conn.blocks[name] = block{}
			return fmt.Errorf("%w: %w", calls.ErrStepByStep, err)
		}
		return err
	}
	var ce *calls.CallError
	if errors.As(err, &ce) {
		return err // an answer over its limits
	}
	var fb *firebirdsql.FbError
	if !errors.As(err, &fb) {
		return err
	}
	b, ok := s.conn.blocks[name]
	if !ok || b.doc == nil {
		return err
	}
	at, line := b.doc.callAt(fb.Message)
	if line && at < 0 {
		// The claim's refusal (a key taken): the key's, not a call's.
		return s.outcome(ctx, unblock(err))
	}
	if !line {
		// Not the database's answer to one call (an argument it could
		// not convert): run again one by one, and each call names its own.
		if _, isExc := s.outcome(ctx, err).(*erp.Exception); isExc {
			return fmt.Errorf("%w (%w): %w", calls.ErrStepByStep, calls.ErrRunAgain, err)
		}
		return err
	}
	if m := nullRef.FindStringSubmatch(fb.Message); m != nil {
		r, _ := strconv.Atoi(m[1])
		return &calls.CallError{Index: at, Null: &cs[at].Refs[r]}
	}
	if m := noRow.FindStringSubmatch(fb.Message); m != nil {
		r, _ := strconv.Atoi(m[1])
		return &calls.CallError{Index: at, NoRow: &cs[at].Refs[r]}
	}
	return &calls.CallError{Index: at, Err: s.outcome(ctx, unblock(err))}
}

// callAt is the call whose statements a failure happened in, by the line
// of the block the server names (line: it names one), -1 for the lines
// before the first call's.
func (d *document) callAt(message string) (at int, line bool) {
	m := blockLineOf.FindAllStringSubmatch(message, -1)
	if m == nil {
		return -1, false
	}
	n, _ := strconv.Atoi(m[len(m)-1][1])
	at = -1
	for i, start := range d.starts {
		if start <= n {
			at = i
		}
	}
	return at, true
}

var blockLineOf = regexp.MustCompile(`At block line: (\d+), col: \d+`)

// noRowMarker is the text of the conversion error a document's block fails
// with when a reference finds no row, then the reference's index among the
// call's: a text no procedure's error holds, which Firebird quotes.
const noRowMarker = "GATEWAY$NO_ROW"

var noRow = regexp.MustCompile(regexp.QuoteMeta(noRowMarker) + ` (\d+)`)

// nullMarker is the text of the conversion error a document's block fails
// with when a reference finds NULL for a required parameter, then the
// reference's index among the call's: the reference is refused as a
// request's null would be (catalog.Param.Referenced), with no second run
// of the calls before it (which repeated what their failure does not
// undo: a generator's step, an autonomous transaction's write).
const nullMarker = "GATEWAY$NULL_FOR_A_REQUIRED_PARAMETER"

var nullRef = regexp.MustCompile(regexp.QuoteMeta(nullMarker) + ` (\d+)`)

// collect encodes each row into the answer of the call it is tagged with.
func (d *document) collect(rows driver.Rows, outs []*record.Encoder) error {
	digits := make([][]int, len(d.cols))
	for i, cols := range d.cols {
		rc := make([]record.Column, len(cols))
		digits[i] = make([]int, len(cols))
		for j, c := range cols {
			rc[j] = record.Column{Name: c.name, Kind: kindOf(rows, c.at)}
			digits[i][j] = scaleOf(rows, c.at)
		}
		outs[i].Columns(rc)
	}
	dest := make([]driver.Value, len(rows.Columns()))
	row := make([][]any, len(d.cols))
	for i, cols := range d.cols {
		row[i] = make([]any, len(cols))
	}
	for {
		if err := rows.Next(dest); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		var i int64
		switch v := dest[0].(type) {
		case int64:
			i = v
		case int32:
			i = int64(v)
		default:
			i = -1
		}
		if i < 0 || int(i) >= len(d.cols) {
			return fmt.Errorf("firebird: a document's row names call %v", dest[0])
		}
		for j, c := range d.cols[i] {
			row[i][j] = atScale(dest[c.at], digits[i][j])
		}
		if err := outs[i].Row(row[i]); err != nil {
			return &calls.CallError{Index: int(i), Err: err}
		}
	}
}

// documentTextMax and documentRowMax bound a document's block: Firebird 3
// takes a statement's text up to 64 KB, and a row's message, here every
// call's columns, up to what it can send.
const (
	documentTextMax = 65535
	documentRowMax  = 1 << 20
)

// documentBlock writes the block of a document of calls, from the
// signatures of their procedures, with claim's inputs and statements
// first, and its layout; nil when the calls must
// run one by one: a procedure unknown or called with more arguments than
// it declares (its own statement names the error; fewer than it requires
// fail the block's prepare, and the calls run one by one too), a reference to a column
// the answer does not have, or whose type is not exactly the argument's
// (the value then passes through Go as it does between statements of
// their own, and converts as it does there), or a block too large.
func documentBlock(cs []catalog.Call, sigs map[string]catalog.Procedure, claim calls.Parts) (string, *document) {
	doc := &document{cols: make([][]docColumn, len(cs)), inputs: make([][]int, len(cs)), readInputs: make([][]int, len(cs))}
	ins := append(originInputs(), claim.Inputs...)
	rets := []string{"GATEWAY$CALL INTEGER"}
	declares := "DECLARE GATEWAY$SET INTEGER;\n" + claim.Declare
	var body strings.Builder
	rowBytes := 4
	// firsts[i][name]: the variable holding column name of call i's first
	// row, for a later call's reference.
	firsts := make([]map[string]string, len(cs))
	answers := make([][]catalog.DBParam, len(cs))
	procs, rbs := make([]catalog.Procedure, len(cs)), make([]catalog.Procedure, len(cs))
	for i, c := range cs {
		w := calls.WriteOf(c)
		proc, okP := sigs[strings.ToUpper(w.Procedure)]
		rb, okR := sigs[strings.ToUpper(w.ReadBack)]
		if !okP || len(proc.Inputs) < len(w.Args) || w.ReadBack != "" && (!okR || len(rb.Inputs) < len(w.ReadArgs)) {
			return "", nil
		}
		procs[i], rbs[i], answers[i] = proc, rb, calls.Answers(w.ReadBack, proc, rb)
		for _, ref := range c.Refs {
			src := columnOf(answers[ref.From], ref.Field)
			if src == nil || !sameType(*src, proc.Inputs[ref.Param]) || !holds(c.Op.Params[ref.Param], *src) {
				return "", nil
			}
			if firsts[ref.From] == nil {
				firsts[ref.From] = make(map[string]string)
				declares += fmt.Sprintf("DECLARE GATEWAY$%dN INTEGER = 0;\n", ref.From)
			}
			if _, ok := firsts[ref.From][ref.Field]; !ok {
				v := fmt.Sprintf("GATEWAY$%dF%d", ref.From, len(firsts[ref.From]))
				firsts[ref.From][ref.Field] = v
				declares += fmt.Sprintf("DECLARE %s %s;\n", v, typeOf(*src))
			}
		}
	}
	for i, c := range cs {
		w := calls.WriteOf(c)
		proc, rb := procs[i], rbs[i]
		// What each argument is: a reference's variable or an input.
		args := make([]string, len(w.Args))
		refs := make(map[int]catalog.Ref)
		for _, r := range c.Refs {
			refs[r.Param] = r
		}
		var checks strings.Builder
		for r, ref := range c.Refs {
			args[ref.Param] = ":" + firsts[ref.From][ref.Field]
			fmt.Fprintf(&checks, "  IF (GATEWAY$%dN = 0) THEN GATEWAY$SET = CAST('%s %d' AS INTEGER);\n", ref.From, noRowMarker, r)
			if c.Op.Params[ref.Param].Required {
				fmt.Fprintf(&checks, "  IF (%s IS NULL) THEN GATEWAY$SET = CAST('%s %d' AS INTEGER);\n", firsts[ref.From][ref.Field], nullMarker, r)
			}
		}
		for j := range w.Args {
			if args[j] == "" {
				args[j] = fmt.Sprintf(":GATEWAY$%dP%d", i, j)
				ins = append(ins, fmt.Sprintf("GATEWAY$%dP%d %s = ?", i, j, typeOf(proc.Inputs[j])))
				doc.inputs[i] = append(doc.inputs[i], j)
			}
		}
		readArgs := make([]string, len(w.ReadArgs))
		for k, j := range c.ReadBackFrom() {
			if r, ok := refs[j]; ok && j >= 0 {
				if !sameType(*columnOf(answers[r.From], r.Field), rb.Inputs[k]) {
					return "", nil
				}
				readArgs[k] = args[j]
				continue
			}
			readArgs[k] = fmt.Sprintf(":GATEWAY$%dR%d", i, k)
			ins = append(ins, fmt.Sprintf("GATEWAY$%dR%d %s = ?", i, k, typeOf(rb.Inputs[k])))
			doc.readInputs[i] = append(doc.readInputs[i], k)
		}
		// The call's columns, and where its procedure's outputs go.
		var into []string
		for _, a := range answers[i] {
			at := len(rets)
			col := fmt.Sprintf("GATEWAY$%dC%d", i, len(into))
			rets = append(rets, col+" "+typeOf(a))
			into = append(into, ":"+col)
			doc.cols[i] = append(doc.cols[i], docColumn{name: a.Name, at: at})
			rowBytes += messageBytes(a)
		}
		dropped := into
		if w.ReadBack != "" {
			dropped = nil
			for k, o := range proc.Outputs {
				declares += fmt.Sprintf("DECLARE GATEWAY$%dO%d %s;\n", i, k, typeOf(o))
				dropped = append(dropped, fmt.Sprintf(":GATEWAY$%dO%d", i, k))
			}
		}
		doc.starts = append(doc.starts, strings.Count(body.String(), "\n"))
		body.WriteString(checks.String())
		// One answering by its own rows runs as they are read below.
		ownRows := w.ReadBack == "" && answersByItsRows(proc)
		if !ownRows {
			body.WriteString(runProcedure(calls.QuoteProcedure(w.Procedure)+list(args), proc, dropped))
		}
		if len(into) == 0 {
			continue
		}
		first := ""
		if f := firsts[i]; f != nil {
			first = fmt.Sprintf("    IF (GATEWAY$%dN = 0) THEN BEGIN\n", i)
			for j, a := range answers[i] {
				if v, ok := f[a.Name]; ok {
					first += fmt.Sprintf("      %s = %s;\n", v, into[j][1:])
				}
			}
			first += fmt.Sprintf("    END\n    GATEWAY$%dN = GATEWAY$%dN + 1;\n", i, i)
		}
		fmt.Fprintf(&body, "  GATEWAY$CALL = %d;\n", i)
		switch {
		case ownRows:
			body.WriteString("  FOR SELECT * FROM " + calls.QuoteProcedure(w.Procedure) + list(args) + " INTO " + strings.Join(into, ", ") + " DO\n  BEGIN\n" + first + "    SUSPEND;\n  END\n")
		case w.ReadBack == "":
			body.WriteString("  BEGIN\n" + first + "    SUSPEND;\n  END\n")
		default:
			body.WriteString("  FOR SELECT * FROM " + calls.QuoteProcedure(w.ReadBack) + list(readArgs) + " INTO " + strings.Join(into, ", ") + " DO\n  BEGIN\n" + first + "    SUSPEND;\n  END\n")
		}
		// Later rows carry this call's columns NULL.
		for _, v := range into {
			body.WriteString("  " + v[1:] + " = NULL;\n")
		}
	}
	head := "EXECUTE BLOCK (" + strings.Join(ins, ", ") + ")\nRETURNS (" + strings.Join(rets, ", ") + ")\nAS\n" + declares + "BEGIN\n" + originContext + claim.Before
	offset := strings.Count(head, "\n") + 1
	for i := range doc.starts {
		doc.starts[i] += offset
	}
	text := head + body.String() + "END"
	if len(text) > documentTextMax || rowBytes > documentRowMax {
		return "", nil
	}
	return text, doc
}

// columnOf is the column of cols named name, nil when none is.
func columnOf(cols []catalog.DBParam, name string) *catalog.DBParam {
	for i := range cols {
		if cols[i].Name == name {
			return &cols[i]
		}
	}
	return nil
}

// sameType reports whether a value of column a passes to parameter b
// unchanged, of a type whose value Go passes between statements as it is:
// an integer, a date, a boolean, a text of a length b holds in the same
// character set (a decimal, a time or a CHAR's padding may pass otherwise
// through Go).
func sameType(a, b catalog.DBParam) bool {
	if a.Type != b.Type || a.Scale != b.Scale {
		return false
	}
	switch a.Type {
	case "SMALLINT", "INTEGER", "BIGINT", "DATE", "BOOLEAN":
		return true
	case "VARCHAR":
		return a.Charset == b.Charset && a.Charset != "NONE" && a.Charset != "OCTETS" && a.Chars <= b.Chars
	}
	return false
}

// holds reports whether p, the catalog's parameter, takes every value of
// column a (of a type sameType passes inside the block) as it is: then the
// block answers what the calls one statement each do, where Go checks the
// value as p checks a request's (catalog.Param.Referenced). A catalog
// narrower than the database (a 16-bit integer for an INTEGER, fewer
// characters than the column's) sends the batch step by step.
func holds(p catalog.Param, a catalog.DBParam) bool {
	switch a.Type {
	case "SMALLINT", "INTEGER", "BIGINT":
		return p.Kind == catalog.Integer && p.Bits >= a.Bits()
	case "DATE":
		return p.Kind == catalog.Date
	case "BOOLEAN":
		return p.Kind == catalog.Text && p.MaxLen >= len("false")
	case "VARCHAR":
		return p.Kind == catalog.Text && p.MaxLen >= a.Chars
	}
	return false
}

func list(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return "(" + strings.Join(args, ", ") + ")"
}
