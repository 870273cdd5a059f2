package firebird

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nakagami/firebirdsql"

	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/record"
)

// A keyed write claims its key, runs its procedure, reads back and keeps the
// answer (kept.go) in one
// statement, an EXECUTE BLOCK: the claim and the read-back on their own
// would cost two round trips more than the write without a key, which is
// most of what a write costs (README, "Measurements").

// signatureSQL lists the parameters of two procedures: each one's
// procedure, direction (0 input), domain (which holds its type), name, and
// the domain's type, scale, character set and length in characters (which
// say whether the values can be kept as text: keptCode).
const signatureSQL = `SELECT TRIM(pp.RDB$PROCEDURE_NAME), pp.RDB$PARAMETER_TYPE, TRIM(pp.RDB$FIELD_SOURCE), TRIM(pp.RDB$PARAMETER_NAME),
		f.RDB$FIELD_TYPE, COALESCE(f.RDB$FIELD_SCALE, 0), COALESCE(f.RDB$CHARACTER_SET_ID, 0), COALESCE(f.RDB$CHARACTER_LENGTH, 0)
	FROM RDB$PROCEDURE_PARAMETERS pp JOIN RDB$FIELDS f ON f.RDB$FIELD_NAME = pp.RDB$FIELD_SOURCE
	WHERE pp.RDB$PROCEDURE_NAME IN (?, ?) AND pp.RDB$PACKAGE_NAME IS NULL
	ORDER BY pp.RDB$PARAMETER_TYPE, pp.RDB$PARAMETER_NUMBER`

// keyedCall is what a keyed write runs.
type keyedCall struct {
	procedure, readBack string
	args, readArgs      []any
	// keep: the block may keep the answer itself (kept.go): the
	// connection's character set is UTF8, in which the driver reads text
	// as the block writes it.
	keep bool
}

// param is a procedure's parameter as a block declares it, and its
// values' code when kept as text (keptCode).
type param struct {
	name, typ string
	kept      byte
	chars     int // a text's length in characters
}

// signature is a procedure's parameters.
type signature struct{ inputs, outputs []param }

// keyedWrite claims k and runs w, encoding the read-back's rows into out;
// kept says the block kept the answer in the key's row.
// The claim inserts the key's row; a row another transaction inserted and
// has not ended holds its lock, and the insert waits for that transaction,
// which either commits (the key is taken) or rolls back (the key is ours).
// The statement may take the call's time less a reserve, in which to find
// out what it was waiting for (Pools.probe).
func (s *session) keyedWrite(ctx context.Context, w keyedCall, k erp.Key, out *record.Encoder) (kept bool, err error) {
	wait, cancel := reserved(ctx)
	defer cancel()
	argv := append(append([]any{k.Scope, k.Key, k.Clave, k.Fingerprint, time.Now().UTC()}, w.args...), w.readArgs...)
	for fresh := false; ; fresh = true {
		block, cached, err := s.block(ctx, w)
		if err != nil {
			return false, err
		}
		hidden := 0
		if block.keeps {
			hidden = 1
		}
		var last []driver.Value
		last, err = s.queryHiding(wait, block.text, argv, out, hidden)
		switch {
		case err == nil:
			// The last row's GATEWAY$KEPT tells of the whole answer; an
			// answer without rows always fits.
			return block.keeps && (last == nil || last[0] == int64(1)), nil
		case overLimit(err):
			return false, err
		case claimRefused(err, firebirdsql.ISCUniqueKeyViolation):
			return false, fmt.Errorf("%w: %w", errKeyTaken, err)
		case wait.Err() != nil && ctx.Err() == nil:
			return false, fmt.Errorf("%w: %w", errOutwaited, err)
		case phase(s.at.Load()) == preparing && cached && !fresh:
			// A procedure may have changed since it was described.
			delete(s.conn.blocks, w.procedure+" "+w.readBack)
			continue
		}
		return false, unblock(err)
	}
}

// reserved is ctx less the reserve of a keyed write's block.
func reserved(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	reserve := min(max(time.Until(deadline)/10, reserveMin), reserveMax)
	return context.WithDeadline(ctx, deadline.Add(-reserve))
}

// block is the EXECUTE BLOCK of w. Its parameters and columns take the
// types of the procedures' own (TYPE OF their domains), read from the
// system tables once per connection: the arguments are converted exactly as
// a plain EXECUTE PROCEDURE converts them, and the rows come back exactly as
// a plain SELECT returns them, names and types.
func (s *session) block(ctx context.Context, w keyedCall) (block keyedBlock, cached bool, err error) {
	id := w.procedure + " " + w.readBack
	if b, ok := s.conn.blocks[id]; ok {
		return b, true, nil
	}
	// Reading the signatures is part of preparing: a failure is not the
	// procedure's answer.
	s.at.Store(int32(preparing))
	st, err := s.conn.statement(ctx, s.fc, signatureSQL)
	if err != nil {
		return keyedBlock{}, false, err
	}
	// Unquoted, as the gateway writes them into SQL: Firebird keeps such
	// names in upper case.
	name, readBack := strings.ToUpper(w.procedure), strings.ToUpper(w.readBack)
	rows, err := run(ctx, st, []any{name, readBack})
	if err != nil {
		return keyedBlock{}, false, err
	}
	defer rows.Close()
	sigs := map[string]*signature{name: {}, readBack: {}}
	dest := make([]driver.Value, 8)
	for {
		if err := rows.Next(dest); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return keyedBlock{}, false, err
		}
		proc, _ := dest[0].(string)
		domain, _ := dest[2].(string)
		pname, _ := dest[3].(string)
		sig := sigs[proc]
		if sig == nil {
			continue
		}
		var n [5]int64
		for i, v := range []driver.Value{dest[1], dest[4], dest[5], dest[6], dest[7]} {
			n[i], _ = v.(int64)
		}
		p := param{name: pname, typ: "TYPE OF " + quoted(domain), kept: keptCode(n[1], n[2], n[3], n[4]), chars: int(n[4])}
		if n[0] == 0 {
			sig.inputs = append(sig.inputs, p)
		} else {
			sig.outputs = append(sig.outputs, p)
		}
	}
	block = writeBlock(w, *sigs[name], *sigs[readBack])
	if s.conn.blocks == nil {
		s.conn.blocks = make(map[string]keyedBlock)
	}
	s.conn.blocks[id] = block
	return block, false, nil
}

// keyedBlock is the EXECUTE BLOCK of a keyed write.
type keyedBlock struct {
	text string
	// keeps: the block keeps the answer itself, as values (kept.go), and
	// returns after the read-back's columns GATEWAY$KEPT, 1 while the
	// values so far fit in the key's row. A block that does not keep the
	// answer (keep false, or columns that cannot be kept as text) leaves it
	// to a statement of its own.
	keeps bool
}

// writeBlock writes the block of w, given the procedures' signatures. An
// argument beyond a procedure's inputs is declared INTEGER: the block then
// fails to prepare with the server's own "Input parameter mismatch", as
// the plain call would. The block's own names start GATEWAY$, which no
// column of a read-back is expected to.
func writeBlock(w keyedCall, proc, readBack signature) keyedBlock {
	header, keeps := keptHeader(readBack.outputs)
	keeps = keeps && w.keep
	var b strings.Builder
	b.WriteString("EXECUTE BLOCK (")
	var ins []string
	for i, c := range []string{"SCOPE", "IDEM_KEY", "CLAVE", "REQUEST_HASH", "CREATED_AT"} {
		ins = append(ins, fmt.Sprintf("GATEWAY$K%d TYPE OF COLUMN %s.%s = ?", i, KeyTable, c))
	}
	declare := func(prefix string, n int, inputs []param) []string {
		names := make([]string, n)
		for i := range n {
			typ := "INTEGER"
			if i < len(inputs) {
				typ = inputs[i].typ
			}
			names[i] = fmt.Sprintf(":GATEWAY$%s%d", prefix, i)
			ins = append(ins, fmt.Sprintf("GATEWAY$%s%d %s = ?", prefix, i, typ))
		}
		return names
	}
	args, readArgs := declare("P", len(w.args), proc.inputs), declare("R", len(w.readArgs), readBack.inputs)
	b.WriteString(strings.Join(ins, ", ") + ")\n")
	var cols, into []string
	for _, c := range readBack.outputs {
		cols = append(cols, quoted(c.name)+" "+c.typ)
		into = append(into, ":"+quoted(c.name))
	}
	if keeps {
		cols = append(cols, "GATEWAY$KEPT SMALLINT")
	}
	if len(cols) > 0 {
		b.WriteString("RETURNS (" + strings.Join(cols, ", ") + ")\n")
	}
	b.WriteString("AS\n")
	var dropped []string
	for i, o := range proc.outputs {
		fmt.Fprintf(&b, "DECLARE GATEWAY$O%d %s;\n", i, o.typ)
		dropped = append(dropped, fmt.Sprintf(":GATEWAY$O%d", i))
	}
	claimed := ";\n"
	if keeps {
		fmt.Fprintf(&b, "DECLARE GATEWAY$A VARCHAR(%d) CHARACTER SET OCTETS;\nDECLARE GATEWAY$V VARCHAR(%d) CHARACTER SET OCTETS;\nDECLARE GATEWAY$ROW CHAR(8) CHARACTER SET OCTETS;\n", inlineMax, keptPartMax)
		claimed = " RETURNING RDB$DB_KEY INTO :GATEWAY$ROW;\n"
	}
	b.WriteString("BEGIN\n  INSERT INTO " + KeyTable + " (SCOPE, IDEM_KEY, CLAVE, REQUEST_HASH, CREATED_AT) VALUES (:GATEWAY$K0, :GATEWAY$K1, :GATEWAY$K2, :GATEWAY$K3, :GATEWAY$K4)" + claimed)
	b.WriteString("  EXECUTE PROCEDURE " + w.procedure + arguments(args))
	if len(dropped) > 0 {
		b.WriteString(" RETURNING_VALUES " + strings.Join(dropped, ", "))
	}
	b.WriteString(";\n")
	if keeps {
		b.WriteString("  GATEWAY$A = '" + strings.ReplaceAll(header, "'", "''") + "';\n  GATEWAY$KEPT = 1;\n")
	}
	switch {
	case len(into) > 0 && keeps:
		b.WriteString("  FOR SELECT * FROM " + w.readBack + arguments(readArgs) + " INTO " + strings.Join(into, ", ") + " DO\n  BEGIN\n")
		b.WriteString(keptValues(readBack.outputs) + "    SUSPEND;\n  END\n")
	case len(into) > 0:
		b.WriteString("  FOR SELECT * FROM " + w.readBack + arguments(readArgs) + " INTO " + strings.Join(into, ", ") + " DO SUSPEND;\n")
	}
	if keeps {
		b.WriteString("  IF (GATEWAY$KEPT = 1) THEN UPDATE " + KeyTable + " SET ANSWER = :GATEWAY$A WHERE RDB$DB_KEY = :GATEWAY$ROW;\n")
	}
	b.WriteString("END")
	return keyedBlock{text: b.String(), keeps: keeps}
}

func arguments(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return "(" + strings.Join(names, ", ") + ")"
}

// quoted writes a name as SQL reaches it: as it is when plain, between
// double quotes otherwise.
func quoted(name string) string {
	if plainName.MatchString(name) {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

var plainName = regexp.MustCompile(`^[A-Z][A-Z0-9_$]*$`)

// claimRefused reports err as the claim's insert refused with code: a
// status vector whose code entry names the key table (the procedures'
// own refusals name the ERP's tables).
func claimRefused(err error, code int) bool {
	var fb *firebirdsql.FbError
	if !errors.As(err, &fb) {
		return false
	}
	for i, c := range fb.GDSCodes {
		if c == code && i < len(fb.Params) && slices.Contains(fb.Params[i], KeyTable) {
			return true
		}
	}
	return false
}

// unblock removes from a failure of the block the position in the block
// that the server appends ("At block line: 4, col: 3"), so that the
// procedure's refusal reads exactly as the plain call's does.
func unblock(err error) error {
	var fb *firebirdsql.FbError
	if !errors.As(err, &fb) {
		return err
	}
	for i, c := range fb.GDSCodes {
		if c != firebirdsql.ISCStackTrace || i >= len(fb.Params) {
			continue
		}
		for j, p := range fb.Params[i] {
			fb.Params[i][j] = blockLine.ReplaceAllString(p, "")
		}
	}
	fb.Message = blockLine.ReplaceAllString(fb.Message, "")
	return err
}

var blockLine = regexp.MustCompile(`(?m)\n?^At block line: \d+, col: \d+$`)
