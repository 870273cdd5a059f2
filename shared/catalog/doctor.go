package catalog

import (
	"cmp"
	"fmt"
	"math/big"
	"slices"
	"strings"
)

// Procedure is what a database says of a stored procedure, as the gateway's
// user sees it: what the doctor compares with the catalog.
type Procedure struct {
	Name       string
	Exists     bool
	Selectable bool // has SUSPEND: SELECT * FROM it returns its rows; without, EXECUTE PROCEDURE its one row
	// Executable: the user may EXECUTE it (granted to the user, PUBLIC or
	// the user's role, or the user owns it).
	Executable bool
	Inputs     []DBParam
	Outputs    []DBParam
	// UngrantedExceptions are exceptions it raises without USAGE on them,
	// granted to it, the user or PUBLIC: Firebird 3 then refuses to prepare
	// the procedure, so every call fails, not only those that raise.
	UngrantedExceptions []string
}

// DBParam is one parameter of a procedure as the database declares it.
type DBParam struct {
	Name      string
	Type      string // SMALLINT, INTEGER, BIGINT, NUMERIC, DECIMAL, CHAR, VARCHAR, DATE, TIME, TIMESTAMP, FLOAT, DOUBLE PRECISION, BOOLEAN, BLOB, or another server type
	Chars     int    // CHAR, VARCHAR: length in characters
	Precision int    // NUMERIC, DECIMAL
	Scale     int    // NUMERIC, DECIMAL: digits after the point
	SubType   int    // BLOB: 0 binary, 1 text
	// Domain is the domain the parameter takes its type from (RDB$n for
	// one declared inline), so that a statement can declare a variable of
	// exactly its type: TYPE OF "domain".
	Domain string
	// Charset is a text's character set (UTF8, WIN1252, NONE, OCTETS).
	Charset string
	// Default: an input the procedure declares a default for (a DEFAULT
	// clause of its own; a domain's default does not count), which a call
	// may leave out with every input after it.
	Default bool
}

// Bits is the size of an integer type (SMALLINT 16, INTEGER 32, BIGINT
// 64); 0 for the others.
func (p DBParam) Bits() int {
	return map[string]int{"SMALLINT": 16, "INTEGER": 32, "BIGINT": 64}[p.Type]
}

// String writes the type as SQL declares it: VARCHAR(20), NUMERIC(18,4).
func (p DBParam) String() string {
	switch p.Type {
	case "CHAR", "VARCHAR":
		if p.Charset == "OCTETS" {
			return fmt.Sprintf("%s(%d) CHARACTER SET OCTETS", p.Type, p.Chars)
		}
		return fmt.Sprintf("%s(%d)", p.Type, p.Chars)
	case "NUMERIC", "DECIMAL":
		return fmt.Sprintf("%s(%d,%d)", p.Type, p.Precision, p.Scale)
	case "DOUBLE PRECISION":
		if p.Scale > 0 {
			// As it was declared: a NUMERIC of SQL dialect 1.
			return fmt.Sprintf("NUMERIC(%d,%d)", p.Precision, p.Scale)
		}
	case "BLOB":
		switch p.SubType {
		case 0:
			return "BLOB SUB_TYPE BINARY"
		case 1:
			return "BLOB SUB_TYPE TEXT"
		}
		return fmt.Sprintf("BLOB SUB_TYPE %d", p.SubType)
	}
	return p.Type
}

// Encodable reports whether the gateway has a JSON encoding for the type
// (infra/docs/answers.md#value-encoding).
func (p DBParam) Encodable() bool {
	switch p.Type {
	case "SMALLINT", "INTEGER", "BIGINT", "NUMERIC", "DECIMAL", "CHAR", "VARCHAR", "DATE", "TIME",
		"TIMESTAMP", "FLOAT", "DOUBLE PRECISION", "BOOLEAN",
		// Firebird 4 and later.
		"INT128", "DECFLOAT(16)", "DECFLOAT(34)", "TIME WITH TIME ZONE", "TIMESTAMP WITH TIME ZONE":
		return true
	case "BLOB":
		return p.SubType == 0 || p.SubType == 1
	}
	return false
}

// Table is a table the gateway uses in an instance's database, of its own
// (a DBA installs it) or the server's: its columns, and the privileges the
// gateway's user needs on it.
type Table struct {
	Name       string
	Columns    []string
	Privileges []string // SELECT, INSERT, UPDATE, DELETE
	// Install says how a DBA installs it, for the problems found.
	Install string
	// Finding names its findings (KeysFinding, ...); Fatal: without it
	// calls fail. Cost, when not "", says what a missing privilege costs.
	Finding string
	Fatal   bool
	Cost    string
}

// Finding is one disagreement between the catalog and a database, in words
// an operator can act on. Fatal ones make the operation fail on every call.
// Clave is the operation's, or for the gateway's own needs one of the
// names below.
type Finding struct {
	Clave string `json:"clave"`
	Fatal bool   `json:"fatal"`
	Text  string `json:"finding"` // as the health check answers it
}

// The names of findings about what the gateway itself needs of a database:
// the idempotency keys' table (fatal for keyed writes), the grant that lets
// it cancel the attachments a cut link leaves behind, and a user of its own,
// whom a DBA's shutdown keeps out (nothing fails without either).
const (
	KeysFinding    = "Idempotency-Key"
	OrphansFinding = "MON$ATTACHMENTS"
	UserFinding    = "USER"
)

func (f Finding) String() string { return f.Text }

// Diagnose compares each operation with the database's procedures (keyed by
// name, as Describe returns them): missing procedures, parameters in another
// order, of another type or length, reads that return no rows, outputs
// without a JSON encoding, missing grants, the grants named for user (the
// gateway's Firebird user, who read db).
func (c *Catalog) Diagnose(db map[string]Procedure, user string) []Finding {
	var out []Finding
	for _, clave := range c.Claves() {
		out = append(out, c.ops[clave].Diagnose(db, user)...)
	}
	return out
}

// DiagnoseReader is Diagnose for a user that must only read (an instance
// document's "read_only", serving the reads alone): the reads as Diagnose
// holds them, and a warning for each write whose procedure the user may
// execute, which a reader's user should not.
func (c *Catalog) DiagnoseReader(db map[string]Procedure, user string) []Finding {
	var out []Finding
	for _, clave := range c.Claves() {
		op := c.ops[clave]
		if op.Endpoint == ExecuteQuery {
			out = append(out, op.Diagnose(db, user)...)
			continue
		}
		if p := db[op.Procedure]; p.Exists && p.Executable {
			out = append(out, Finding{Clave: op.Clave, Text: fmt.Sprintf("%s (%s): a write, and this read-only user may execute it (REVOKE EXECUTE ON PROCEDURE %s FROM %s)",
				p.Name, op.Clave, p.Name, cmp.Or(strings.ToUpper(user), "<user>"))})
		}
	}
	return out
}

// Claves lists the catalog's operations, sorted.
func (c *Catalog) Claves() []string {
	claves := make([]string, 0, len(c.ops))
	for clave := range c.ops {
		claves = append(claves, clave)
	}
	slices.Sort(claves)
	return claves
}

// Procedures lists the procedures the catalog runs, reads-back included.
func (c *Catalog) Procedures() []string {
	var names []string
	for _, op := range c.ops {
		names = append(names, op.Procedures()...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// Procedures lists what the operation runs: its procedure and its read-back.
func (op *Operation) Procedures() []string {
	if op.ReadBack != nil {
		return []string{op.Procedure, op.ReadBack.Procedure}
	}
	return []string{op.Procedure}
}

// Diagnose is Catalog.Diagnose for one operation.
func (op *Operation) Diagnose(db map[string]Procedure, user string) []Finding {
	var out []Finding
	add := func(fatal bool, format string, args ...any) {
		out = append(out, Finding{Clave: op.Clave, Fatal: fatal, Text: fmt.Sprintf(format, args...)})
	}
	p, ok := db[op.Procedure]
	if !ok || !p.Exists {
		add(true, "%s (%s): the procedure does not exist in the database", op.Procedure, op.Clave)
		return out
	}
	if !p.Executable {
		add(true, "%s (%s): the gateway's user may not execute it (GRANT EXECUTE ON PROCEDURE %s TO %s)", p.Name, op.Clave, p.Name, cmp.Or(strings.ToUpper(user), "<user>"))
	}
	if op.Endpoint == ExecuteQuery && len(p.Outputs) == 0 {
		// One without SUSPEND is read by EXECUTE PROCEDURE: its one row.
		add(true, "%s (%s): a read, but the procedure returns no values", p.Name, op.Clave)
	}
	if op.Endpoint == Execute && p.Selectable && len(p.Outputs) == 0 {
		add(true, "%s (%s): it has SUSPEND but returns no values, so nothing can SELECT it, and EXECUTE PROCEDURE would end it at its first SUSPEND, a write cut short: the gateway refuses to run it (declare an output, or drop the SUSPEND)", p.Name, op.Clave)
	}
	if len(p.UngrantedExceptions) > 0 {
		add(true, "%s (%s): %s", p.Name, op.Clave, ungranted(p))
	}
	if named, differs := mismatched(len(op.Params), p.Inputs); differs {
		fields := make([]string, len(op.Params))
		for i, cp := range op.Params {
			fields[i] = cp.Name
		}
		add(true, "%s (%s): the database declares %s, the catalog %d%s", p.Name, op.Clave, declared(p.Inputs), len(op.Params), unmatched(fields, named))
	}
	for i := range min(len(op.Params), len(p.Inputs)) {
		if text, fatal := compareParam(op.Params[i], p.Inputs[i]); text != "" {
			add(fatal, "%s (%s): input %s %s", p.Name, op.Clave, p.Inputs[i].Name, text)
		}
	}
	outputs, answerer := p.Outputs, p.Name
	if rb := op.ReadBack; rb != nil {
		q, ok := db[rb.Procedure]
		named, differs := mismatched(len(rb.Params), q.Inputs)
		switch {
		case !ok || !q.Exists:
			add(true, "%s (read-back of %s): the procedure does not exist in the database", rb.Procedure, op.Clave)
			return out
		case !q.Executable:
			add(true, "%s (read-back of %s): the gateway's user may not execute it", q.Name, op.Clave)
		case !q.Selectable:
			add(true, "%s (read-back of %s): the procedure has no SUSPEND and returns no rows to SELECT", q.Name, op.Clave)
		case differs:
			add(true, "%s (read-back of %s): the database declares %s, the catalog passes %d%s", q.Name, op.Clave, declared(q.Inputs), len(rb.Params), unmatched(rb.Params, named))
		}
		if len(q.UngrantedExceptions) > 0 {
			add(true, "%s (read-back of %s): %s", q.Name, op.Clave, ungranted(q))
		}
		outputs, answerer = q.Outputs, q.Name
	}
	for _, o := range outputs {
		if !o.Encodable() {
			add(true, "%s (%s): output %s is %s, which the gateway has no JSON encoding for", p.Name, op.Clave, o.Name, o)
		}
		if op.Endpoint == Execute && strings.HasPrefix(o.Name, BlockNames) {
			// A warning: only the names the block declares collide, and
			// which those are is the block's to say.
			add(false, "%s (%s): output %s takes a name like those the gateway's block keeps for its own variables (%s…): if it is one of them, the block a write runs in does not prepare and every call fails; rename the output", answerer, op.Clave, o.Name, BlockNames)
		}
	}
	return out
}

// BlockNames begins the names the blocks a write runs in declare for their
// own variables (shared/firebird): an answer's column named so collides with
// one of them.
const BlockNames = "GATEWAY$"

// ungranted says which exceptions p lacks USAGE on, and the grants that fix
// it.
func ungranted(p Procedure) string {
	grants := make([]string, len(p.UngrantedExceptions))
	for i, e := range p.UngrantedExceptions {
		grants[i] = fmt.Sprintf("GRANT USAGE ON EXCEPTION %s TO PROCEDURE %s", e, p.Name)
	}
	return fmt.Sprintf("it raises %s without USAGE, so Firebird refuses to prepare it and every call fails (%s)",
		strings.Join(p.UngrantedExceptions, ", "), strings.Join(grants, "; "))
}

// required is how many of inputs a call must pass: Firebird gives those a
// call leaves out, always the last ones, their defaults (it refuses a
// default before an input without one).
func required(inputs []DBParam) int {
	n := len(inputs)
	for n > 0 && inputs[n-1].Default {
		n--
	}
	return n
}

// mismatched reports whether a call passing n arguments does not fit
// inputs, and the inputs the call is then held to: those it must pass when
// it passes fewer, all of them (none, for a procedure that takes none) when
// it passes more.
func mismatched(n int, inputs []DBParam) (held []DBParam, differs bool) {
	switch {
	case n < required(inputs):
		return inputs[:required(inputs)], true
	case n > len(inputs):
		return inputs, true
	}
	return nil, false
}

// declared says how many inputs a procedure declares, and how many of them
// a call may leave out.
func declared(inputs []DBParam) string {
	s := fmt.Sprintf("%d input parameters", len(inputs))
	if n := len(inputs) - required(inputs); n > 0 {
		s += fmt.Sprintf(" (the last %d with a default)", n)
	}
	return s
}

// unmatched names the parameters a difference in count is about. The
// catalog's are request fields (CODIGO, FECHA_CORTE_), the database's the
// procedure's (P_CODIGO, P_FECHA_CORTE), and calls pass them in order. When
// the names line up but for the ERP's P_ prefix and a trailing _, and only
// one side has more, those are named wherever they stand (a parameter added
// in the middle); otherwise the ones past the shorter list.
func unmatched(fields []string, inputs []DBParam) string {
	key := func(s string) string { return strings.TrimSuffix(strings.TrimPrefix(strings.ToUpper(s), "P_"), "_") }
	inCatalog, inDB := map[string]bool{}, map[string]bool{}
	for _, f := range fields {
		inCatalog[key(f)] = true
	}
	for _, in := range inputs {
		inDB[key(in.Name)] = true
	}
	var missing, extra []string // the database's inputs the catalog lacks; the catalog's the database lacks
	for _, in := range inputs {
		if !inCatalog[key(in.Name)] {
			missing = append(missing, in.Name)
		}
	}
	for _, f := range fields {
		if !inDB[key(f)] {
			extra = append(extra, f)
		}
	}
	inOrder := ""
	if (len(missing) == 0) == (len(extra) == 0) {
		inOrder, missing, extra = "in order, ", nil, nil
		n := min(len(fields), len(inputs))
		for _, in := range inputs[n:] {
			missing = append(missing, in.Name)
		}
		extra = fields[n:]
	}
	if len(missing) > 0 {
		return fmt.Sprintf(": %sthe catalog has no parameter for %s", inOrder, strings.Join(missing, ", "))
	}
	return fmt.Sprintf(": %sthe procedure has no input for the catalog's %s", inOrder, strings.Join(extra, ", "))
}

// compareParam says how a catalog parameter disagrees with the database's,
// and whether calls fail because of it.
func compareParam(c Param, d DBParam) (text string, fatal bool) {
	switch c.Kind {
	case Text:
		switch d.Type {
		case "CHAR", "VARCHAR":
			switch {
			case d.Chars > c.MaxLen:
				return fmt.Sprintf("is %s in the database, the catalog allows %d characters", d, c.MaxLen), false
			case d.Chars < c.MaxLen:
				return fmt.Sprintf("is %s in the database, the catalog allows %d characters: longer values fail in the database", d, c.MaxLen), true
			}
			return "", false
		case "BLOB":
			return "", false
		}
		// Firebird converts text to other types, and refuses what it cannot.
		return fmt.Sprintf("is %s in the database, text in the catalog: Firebird converts the text, and refuses what does not convert", d), false
	case Date:
		if d.Type != "DATE" && d.Type != "TIMESTAMP" {
			return fmt.Sprintf("is %s in the database, a date in the catalog", d), true
		}
	case Integer:
		bits := d.Bits()
		switch {
		case d.Dialect1Numeric():
			if c.Bits > 32 {
				return fmt.Sprintf("is %s in the database, a double of SQL dialect 1, the catalog allows %d-bit integers: a double keeps %d digits, and rounds the rest", d, c.Bits, DoubleDigits), false
			}
		case bits == 0 && d.Type != "NUMERIC" && d.Type != "DECIMAL":
			return fmt.Sprintf("is %s in the database, an integer in the catalog", d), true
		case bits != 0 && bits < c.Bits:
			return fmt.Sprintf("is %s in the database, the catalog allows %d-bit integers: larger values fail in the database", d, c.Bits), true
		}
	case Decimal:
		switch d.Type {
		case "NUMERIC", "DECIMAL":
			if d.Scale < c.Scale || holdsLess(d, c) {
				return fmt.Sprintf("is %s in the database, the catalog allows NUMERIC(%d,%d): values the database cannot hold exactly would be rounded or refused", d, c.Precision, c.Scale), true
			}
		case "SMALLINT", "INTEGER", "BIGINT":
			if c.Scale > 0 {
				return fmt.Sprintf("is %s in the database, the catalog allows %d decimals: they would be rounded away", d, c.Scale), true
			}
		case "DOUBLE PRECISION":
			// A double keeps what it is given, unrounded to its scale,
			// and answers at its scale: calls work either way.
			switch {
			case d.Scale == 0:
				return fmt.Sprintf("is %s in the database, a decimal in the catalog", d), true
			case d.Scale < c.Scale:
				return fmt.Sprintf("is %s in the database, a double of SQL dialect 1, the catalog allows %d decimals: the database keeps them and answers %d", d, c.Scale, d.Scale), false
			case c.Precision > DoubleDigits:
				return fmt.Sprintf("is %s in the database, a double of SQL dialect 1, the catalog allows %d digits: a double keeps %d, and rounds the rest", d, c.Precision, DoubleDigits), false
			}
		default:
			return fmt.Sprintf("is %s in the database, a decimal in the catalog", d), true
		}
	}
	return "", false
}

// DoubleDigits is how many significant digits a DOUBLE PRECISION keeps
// whatever their value: the precision of a NUMERIC of SQL dialect 1.
const DoubleDigits = 15

// Dialect1Numeric reports a NUMERIC or DECIMAL of more than 9 digits of a
// SQL dialect 1 database, which Firebird keeps as a double with its scale.
func (p DBParam) Dialect1Numeric() bool { return p.Type == "DOUBLE PRECISION" && p.Scale > 0 }

// holdsLess reports whether the database's NUMERIC or DECIMAL d holds a
// smaller greatest value than the catalog's decimal c takes. Firebird
// stores a DECIMAL of 1 to 4 digits in 32 bits, a NUMERIC in 16.
func holdsLess(d DBParam, c Param) bool {
	precision := d.Precision
	if d.Type == "DECIMAL" && precision <= 4 {
		precision = 9
	}
	_, db := numericRange(precision, d.Scale)
	_, catalog := c.Range()
	a, _ := new(big.Rat).SetString(db)
	b, _ := new(big.Rat).SetString(catalog)
	return a.Cmp(b) < 0
}
