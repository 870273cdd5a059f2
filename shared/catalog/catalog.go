// Package catalog is the gateway's domain: which operations (CLAVE values)
// exist, which stored procedure each runs with which parameters, and the
// validation every request passes before it reaches a database.
//
// Of the project it imports only erp (the codes its refusals carry) and no
// driver, so it can be read and tested alone.
package catalog

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Endpoint is the last path segment an operation is served on.
type Endpoint string

// The two endpoints of the original service: reads and writes.
const (
	ExecuteQuery Endpoint = "executequery"
	Execute      Endpoint = "execute"
)

// Kind is how a parameter's value is written in a request and passed to its
// procedure.
type Kind string

// The kinds of parameter (infra/docs/catalog.md#the-catalog).
const (
	Text    Kind = "text"    // a JSON string, passed as it is
	Date    Kind = "date"    // a JSON string in the parameter's Format, passed as a DATE
	Integer Kind = "integer" // a JSON string or number holding an integer of Bits bits
	Decimal Kind = "decimal" // a JSON string or number, NUMERIC(Precision, Scale), passed exactly
)

// DefaultDateFormat is how the original service's clients write dates.
const DefaultDateFormat = "DD.MM.YYYY"

// Param is one argument of a stored procedure, in the procedure's order.
type Param struct {
	Name     string // request field name
	Kind     Kind   // Text when empty
	MaxLen   int    // Text: in characters, as declared in the procedure
	Required bool
	// Format is a Date's layout: DD, MM and YYYY once each, between
	// separators; DefaultDateFormat when empty.
	Format string
	// Bits is an Integer's size: 16 (SMALLINT), 32 (INTEGER) or 64 (BIGINT).
	Bits int
	// Precision and Scale are a Decimal's NUMERIC(Precision, Scale).
	Precision, Scale int
}

// ReadBack names the read whose result a write answers with, and which of the
// write's parameters are that read's arguments.
type ReadBack struct {
	Procedure string
	Params    []string
}

// Operation is one CLAVE.
type Operation struct {
	Clave     string
	Endpoint  Endpoint
	Procedure string
	Params    []Param
	// ReadBack may be set on writes: after the procedure ran, in the same
	// transaction, this read supplies the response's data. A write without
	// one is answered by the procedure's outputs (its RETURNS), as one row,
	// or by its rows when it has SUSPEND.
	ReadBack *ReadBack
	// MaxRows is the most rows an answer may carry; more are refused.
	// DefaultMaxRows when zero.
	MaxRows int
}

// DefaultMaxRows bounds an operation's answer when its entry does not. Reads
// stream, so it guards the customer's database against a runaway read, not
// our memory: a nightly price list of any real length passes it.
const DefaultMaxRows = 1_000_000

// Catalog holds the operations a deployment serves.
type Catalog struct {
	ops map[string]*Operation
}

// MaxName is the longest name of a request's a catalog holds (a CLAVE, a
// parameter's, a column a reference names), as long as Firebird 4's
// identifiers.
const MaxName = 63

// MaxProcedureName is the longest procedure name: Firebird 3 keeps names of
// at most 31 bytes (RDB$PROCEDURE_NAME is a CHAR(31)), so a longer one
// names no procedure, and a description asking for it fails whole (the
// doctor's, the health check's: "string right truncation").
const MaxProcedureName = 31

var (
	identifier    = regexp.MustCompile(fmt.Sprintf(`^[A-Za-z][A-Za-z0-9_$]{0,%d}$`, MaxName-1))
	procedureName = regexp.MustCompile(fmt.Sprintf(`^[A-Za-z][A-Za-z0-9_$]{0,%d}$`, MaxProcedureName-1))
)

// ValidIdentifier reports whether name is a plain identifier, one SQL text
// may hold unquoted: letters, digits, _ and $, at most MaxName.
func ValidIdentifier(name string) bool { return identifier.MatchString(name) }

// ValidProcedureName reports whether a catalog may name a procedure so: a
// plain identifier of at most MaxProcedureName characters.
func ValidProcedureName(name string) bool { return procedureName.MatchString(name) }

// procedureRule says what ValidProcedureName wants, for the refusals.
var procedureRule = fmt.Sprintf("a plain identifier of at most %d characters (letters, digits, _ and $)", MaxProcedureName)

// New checks the operations, fills in their defaults and indexes them by
// CLAVE. Procedure and parameter names are checked because procedure names
// are written into SQL text (Firebird cannot bind an identifier). Errors name
// the entry and the field as the catalog file spells them.
func New(ops []Operation) (*Catalog, error) {
	c := &Catalog{ops: make(map[string]*Operation, len(ops))}
	for i := range ops {
		op := &ops[i]
		if err := op.check(); err != nil {
			return nil, fmt.Errorf("operations[%d] %q: %w", i, op.Clave, err)
		}
		if _, dup := c.ops[op.Clave]; dup {
			return nil, fmt.Errorf("operations[%d] %q: clave: defined twice", i, op.Clave)
		}
		c.ops[op.Clave] = op
	}
	return c, nil
}

func (op *Operation) check() error {
	if op.Clave == "" || utf8.RuneCountInString(op.Clave) > MaxName {
		return fmt.Errorf("clave: must be 1 to %d characters", MaxName)
	}
	if op.Endpoint != ExecuteQuery && op.Endpoint != Execute {
		return fmt.Errorf("endpoint: %q is neither %q nor %q", op.Endpoint, ExecuteQuery, Execute)
	}
	if !ValidProcedureName(op.Procedure) {
		return fmt.Errorf("procedure: %q is not %s%s", op.Procedure, procedureRule, packaged(op.Procedure))
	}
	if op.MaxRows < 0 {
		return fmt.Errorf("max_rows: %d is negative", op.MaxRows)
	}
	if op.MaxRows == 0 {
		op.MaxRows = DefaultMaxRows
	}
	seen := make(map[string]bool, len(op.Params))
	for j := range op.Params {
		p := &op.Params[j]
		if err := p.check(); err != nil {
			return fmt.Errorf("params[%d] %q: %w", j, p.Name, err)
		}
		if seen[p.Name] {
			return fmt.Errorf("params[%d] %q: name: defined twice", j, p.Name)
		}
		seen[p.Name] = true
	}
	switch rb := op.ReadBack; {
	case rb == nil:
	case op.Endpoint == ExecuteQuery:
		return errors.New("read_back: only a write (endpoint execute) has one")
	case !ValidProcedureName(rb.Procedure):
		return fmt.Errorf("read_back.procedure: %q is not %s%s", rb.Procedure, procedureRule, packaged(rb.Procedure))
	default:
		for k, name := range rb.Params {
			if !seen[name] {
				return fmt.Errorf("read_back.params[%d]: %q is not a parameter of the operation", k, name)
			}
		}
	}
	return nil
}

// ValidParamName reports whether name may name a parameter (a request
// field): a plain identifier other than CLAVE, which names the operation.
func ValidParamName(name string) bool { return identifier.MatchString(name) && name != "CLAVE" }

func (p *Param) check() error {
	if !ValidParamName(p.Name) {
		return errors.New("name: must be a plain identifier other than CLAVE")
	}
	if p.Kind == "" {
		p.Kind = Text
	}
	switch p.Kind {
	case Text:
		if p.MaxLen <= 0 {
			return errors.New("max_chars: a text parameter needs its length in characters, as the procedure declares it")
		}
	case Date:
		if p.Format == "" {
			p.Format = DefaultDateFormat
		}
		if _, err := dateLayout(p.Format); err != nil {
			return fmt.Errorf("format: %w", err)
		}
	case Integer:
		if p.Bits == 0 {
			p.Bits = 32
		}
		if p.Bits != 16 && p.Bits != 32 && p.Bits != 64 {
			return fmt.Errorf("bits: %d is not 16 (SMALLINT), 32 (INTEGER) or 64 (BIGINT)", p.Bits)
		}
	case Decimal:
		if p.Precision < 1 || p.Precision > 18 {
			return fmt.Errorf("precision: %d is not between 1 and 18", p.Precision)
		}
		if p.Scale < 0 || p.Scale > p.Precision {
			return fmt.Errorf("scale: %d is not between 0 and the precision, %d", p.Scale, p.Precision)
		}
	default:
		return fmt.Errorf("kind: %q is not one of text, date, integer, decimal", p.Kind)
	}
	if p.Kind != Text && p.MaxLen != 0 {
		return fmt.Errorf("max_chars: only a text parameter has one, not a %s", p.Kind)
	}
	if p.Kind != Date && p.Format != "" {
		return fmt.Errorf("format: only a date parameter has one, not a %s", p.Kind)
	}
	if p.Kind != Integer && p.Bits != 0 {
		return fmt.Errorf("bits: only an integer parameter has them, not a %s", p.Kind)
	}
	if p.Kind != Decimal && (p.Precision != 0 || p.Scale != 0) {
		return fmt.Errorf("precision, scale: only a decimal parameter has them, not a %s", p.Kind)
	}
	return nil
}

// Lookup returns the operation for a CLAVE.
func (c *Catalog) Lookup(clave string) (*Operation, bool) {
	op, ok := c.ops[clave]
	return op, ok
}

// packaged says what to do with a procedure named as a package's
// (PKG.PROC): the gateway calls procedures outside packages only.
func packaged(name string) string {
	if !strings.Contains(name, ".") {
		return ""
	}
	return ": a procedure of a package cannot be called; a procedure outside it that calls it can"
}
