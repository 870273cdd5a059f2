// Package catalog is the gateway's domain: which operations (CLAVE values)
// exist, which stored procedure each runs with which parameters, and the
// validation every request passes before it reaches a database.
//
// It imports nothing of the project and no driver, so it can be read and
// tested alone.
package catalog

import (
	"fmt"
	"regexp"
)

// Endpoint is the last path segment an operation is served on.
type Endpoint string

// The two endpoints of the original service: reads and writes.
const (
	ExecuteQuery Endpoint = "executequery"
	Execute      Endpoint = "execute"
)

// Param is one argument of a stored procedure, in the procedure's order.
type Param struct {
	Name     string // request field name, upper case
	MaxLen   int    // in characters, as declared in the procedure
	Required bool
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
	// ReadBack is set on writes: after the procedure ran, in the same
	// transaction, this read supplies the response's data.
	ReadBack *ReadBack
}

// Catalog holds the operations a deployment serves.
type Catalog struct {
	ops map[string]*Operation
}

var identifier = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_$]{0,62}$`)

// New checks the operations and indexes them by CLAVE. Procedure and
// parameter names are checked because procedure names are written into SQL
// text (Firebird cannot bind an identifier).
func New(ops []Operation) (*Catalog, error) {
	c := &Catalog{ops: make(map[string]*Operation, len(ops))}
	for i := range ops {
		op := &ops[i]
		if _, dup := c.ops[op.Clave]; dup {
			return nil, fmt.Errorf("catalog: CLAVE %q defined twice", op.Clave)
		}
		if op.Endpoint != ExecuteQuery && op.Endpoint != Execute {
			return nil, fmt.Errorf("catalog: %s: unknown endpoint %q", op.Clave, op.Endpoint)
		}
		if !identifier.MatchString(op.Procedure) {
			return nil, fmt.Errorf("catalog: %s: procedure name %q is not a plain identifier", op.Clave, op.Procedure)
		}
		seen := make(map[string]bool, len(op.Params))
		for _, p := range op.Params {
			if p.Name == "CLAVE" || seen[p.Name] || !identifier.MatchString(p.Name) || p.MaxLen <= 0 {
				return nil, fmt.Errorf("catalog: %s: bad parameter %+v", op.Clave, p)
			}
			seen[p.Name] = true
		}
		if rb := op.ReadBack; rb != nil {
			if !identifier.MatchString(rb.Procedure) {
				return nil, fmt.Errorf("catalog: %s: read-back procedure name %q is not a plain identifier", op.Clave, rb.Procedure)
			}
			for _, name := range rb.Params {
				if !seen[name] {
					return nil, fmt.Errorf("catalog: %s: read-back parameter %q is not a parameter of the operation", op.Clave, name)
				}
			}
		}
		c.ops[op.Clave] = op
	}
	return c, nil
}

// Lookup returns the operation for a CLAVE.
func (c *Catalog) Lookup(clave string) (*Operation, bool) {
	op, ok := c.ops[clave]
	return op, ok
}
