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

// A keyed write claims its key, runs its procedure and reads back in one
// statement, an EXECUTE BLOCK: the claim and the read-back on their own
// would cost two round trips more than the write without a key, which is
// most of what a write costs (README, "Measurements").

// signatureSQL lists the parameters of two procedures: each one's
// procedure, direction (0 input), domain (which holds its type) and name.
const signatureSQL = `SELECT TRIM(pp.RDB$PROCEDURE_NAME) || ' ' || pp.RDB$PARAMETER_TYPE || ' ' || TRIM(pp.RDB$FIELD_SOURCE) || ' ' || TRIM(pp.RDB$PARAMETER_NAME)
	FROM RDB$PROCEDURE_PARAMETERS pp
	WHERE pp.RDB$PROCEDURE_NAME IN (?, ?) AND pp.RDB$PACKAGE_NAME IS NULL
	ORDER BY pp.RDB$PARAMETER_TYPE, pp.RDB$PARAMETER_NUMBER`

// keyedCall is what a keyed write runs.
type keyedCall struct {
	procedure, readBack string
	args, readArgs      []any
}

// param is a procedure's parameter as a block declares it.
type param struct{ name, typ string }

// signature is a procedure's parameters.
type signature struct{ inputs, outputs []param }

// keyedWrite claims k and runs w, encoding the read-back's rows into out.
// The claim inserts the key's row; a row another transaction inserted and
// has not ended holds its lock, and the insert waits for that transaction,
// which either commits (the key is taken) or rolls back (the key is ours).
// The statement may take the call's time less a reserve, in which to find
// out what it was waiting for (Pools.probe).
func (s *session) keyedWrite(ctx context.Context, w keyedCall, k erp.Key, out *record.Encoder) error {
	wait, cancel := reserved(ctx)
	defer cancel()
	argv := append(append([]any{k.Scope, k.Key, k.Clave, k.Fingerprint, time.Now().UTC()}, w.args...), w.readArgs...)
	for fresh := false; ; fresh = true {
		block, cached, err := s.block(ctx, w)
		if err != nil {
			return err
		}
		err = s.query(wait, block, argv, out)
		switch {
		case err == nil || overLimit(err):
			return err
		case claimRefused(err, firebirdsql.ISCUniqueKeyViolation):
			return fmt.Errorf("%w: %w", errKeyTaken, err)
		case wait.Err() != nil && ctx.Err() == nil:
			return fmt.Errorf("%w: %w", errOutwaited, err)
		case phase(s.at.Load()) == preparing && cached && !fresh:
			// A procedure may have changed since it was described.
			delete(s.conn.blocks, w.procedure+" "+w.readBack)
			continue
		}
		return unblock(err)
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
func (s *session) block(ctx context.Context, w keyedCall) (block string, cached bool, err error) {
	id := w.procedure + " " + w.readBack
	if b, ok := s.conn.blocks[id]; ok {
		return b, true, nil
	}
	// Reading the signatures is part of preparing: a failure is not the
	// procedure's answer.
	s.at.Store(int32(preparing))
	st, err := s.conn.statement(ctx, s.fc, signatureSQL)
	if err != nil {
		return "", false, err
	}
	// Unquoted, as the gateway writes them into SQL: Firebird keeps such
	// names in upper case.
	name, readBack := strings.ToUpper(w.procedure), strings.ToUpper(w.readBack)
	rows, err := run(ctx, st, []any{name, readBack})
	if err != nil {
		return "", false, err
	}
	defer rows.Close()
	sigs := map[string]*signature{name: {}, readBack: {}}
	dest := make([]driver.Value, 1)
	for {
		if err := rows.Next(dest); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return "", false, err
		}
		f := strings.SplitN(fmt.Sprint(dest[0]), " ", 4)
		if len(f) < 4 || sigs[f[0]] == nil {
			continue
		}
		p := param{name: f[3], typ: "TYPE OF " + quoted(f[2])}
		if f[1] == "0" {
			sigs[f[0]].inputs = append(sigs[f[0]].inputs, p)
		} else {
			sigs[f[0]].outputs = append(sigs[f[0]].outputs, p)
		}
	}
	block = keyedBlock(w, *sigs[name], *sigs[readBack])
	if s.conn.blocks == nil {
		s.conn.blocks = make(map[string]string)
	}
	s.conn.blocks[id] = block
	return block, false, nil
}

// keyedBlock writes the block of w, given the procedures' signatures. An
// argument beyond a procedure's inputs is declared INTEGER: the block then
// fails to prepare with the server's own "Input parameter mismatch", as
// the plain call would. The block's own names start GATEWAY$, which no
// column of a read-back is expected to.
func keyedBlock(w keyedCall, proc, readBack signature) string {
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
	if len(cols) > 0 {
		b.WriteString("RETURNS (" + strings.Join(cols, ", ") + ")\n")
	}
	b.WriteString("AS\n")
	var dropped []string
	for i, o := range proc.outputs {
		fmt.Fprintf(&b, "DECLARE GATEWAY$O%d %s;\n", i, o.typ)
		dropped = append(dropped, fmt.Sprintf(":GATEWAY$O%d", i))
	}
	b.WriteString("BEGIN\n  INSERT INTO " + KeyTable + " (SCOPE, IDEM_KEY, CLAVE, REQUEST_HASH, CREATED_AT) VALUES (:GATEWAY$K0, :GATEWAY$K1, :GATEWAY$K2, :GATEWAY$K3, :GATEWAY$K4);\n")
	b.WriteString("  EXECUTE PROCEDURE " + w.procedure + arguments(args))
	if len(dropped) > 0 {
		b.WriteString(" RETURNING_VALUES " + strings.Join(dropped, ", "))
	}
	b.WriteString(";\n")
	if len(into) > 0 {
		b.WriteString("  FOR SELECT * FROM " + w.readBack + arguments(readArgs) + " INTO " + strings.Join(into, ", ") + " DO SUSPEND;\n")
	}
	b.WriteString("END")
	return b.String()
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
