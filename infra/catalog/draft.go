package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/erp-gateway/gateway/shared/catalog"
)

// Draft entries, in the catalog file's shape.
type (
	draftCatalog struct {
		Comment    string           `json:"$comment"`
		Operations []draftOperation `json:"operations"`
	}
	draftOperation struct {
		Comment   string           `json:"$comment,omitempty"`
		Clave     string           `json:"clave"`
		Endpoint  catalog.Endpoint `json:"endpoint"`
		Procedure string           `json:"procedure"`
		Params    []draftParam     `json:"params"`
		ReadBack  *draftReadBack   `json:"read_back,omitempty"`
	}
	draftParam struct {
		Comment   string       `json:"$comment,omitempty"`
		Name      string       `json:"name"`
		Kind      catalog.Kind `json:"kind,omitempty"`
		MaxChars  int          `json:"max_chars,omitempty"`
		Required  bool         `json:"required"`
		Bits      int          `json:"bits,omitempty"`
		Precision int          `json:"precision,omitempty"`
		Scale     int          `json:"scale,omitempty"`
	}
	draftReadBack struct {
		Procedure string   `json:"procedure"`
		Params    []string `json:"params"`
	}
)

// Firebird's RDB$FIELD_TYPE codes.
const (
	typeSmallint  = 7
	typeInteger   = 8
	typeBigint    = 16
	typeDate      = 12
	typeChar      = 14
	typeVarchar   = 37
	typeTime      = 13
	typeTimestamp = 35
	typeFloat     = 10
	typeDouble    = 27
	typeBoolean   = 23
	typeBlob      = 261
)

// draft turns procedures into catalog entries, and says what an operator must
// look at: the guesses (CLAVE names, reads against writes, required) and what
// no kind fits.
func draft(procs []*procedure) (draftCatalog, []string) {
	byName := map[string]*procedure{}
	for _, p := range procs {
		byName[p.name] = p
	}
	doc := draftCatalog{Comment: "Drafted by make catalog-from-db from RDB$PROCEDURE_PARAMETERS: review every entry (README, 'The catalog')."}
	notes := []string{"CLAVE names are guessed from the procedures' names; use the ones the clients send"}
	seen := map[string]bool{}
	for _, p := range procs {
		op := draftOperation{Clave: clave(p), Endpoint: catalog.ExecuteQuery, Procedure: p.name, Params: []draftParam{}}
		if seen[op.Clave] {
			// REST_INSERT_X and REST_UPDATE_X both read as Set_X.
			first := op.Clave
			op.Clave += "_" + strings.ToLower(p.name)
			notes = append(notes, fmt.Sprintf("%s: named %s, as %s was taken", p.name, op.Clave, first))
		}
		seen[op.Clave] = true
		if !p.selectable {
			op.Endpoint = catalog.Execute
		}
		for _, in := range p.inputs {
			dp, note := param(in)
			op.Params = append(op.Params, dp)
			if note != "" {
				notes = append(notes, fmt.Sprintf("%s: %s", op.Clave, note))
			}
		}
		if !p.selectable {
			op.ReadBack = readBack(p, op.Params, byName)
			if op.ReadBack == nil {
				notes = append(notes, fmt.Sprintf("%s: a write needs read_back (the selectable procedure that answers it); none found", op.Clave))
			}
		}
		doc.Operations = append(doc.Operations, op)
	}
	notes = append(notes, "every parameter is drafted as required; make optional those the procedure accepts as NULL")
	return doc, notes
}

// clave guesses a CLAVE in the original service's style from a procedure's
// name: REST_SELECT_INVENTARIO_PRECIO becomes Get_Inventario_Precio.
func clave(p *procedure) string {
	name := strings.TrimPrefix(p.name, "REST_")
	verb := "Get"
	if !p.selectable {
		verb = "Set"
	}
	for _, prefix := range []string{"SELECT_", "GET_", "INSERT_", "UPDATE_", "SET_", "DELETE_"} {
		if rest, ok := strings.CutPrefix(name, prefix); ok {
			name = rest
			break
		}
	}
	words := strings.Split(strings.ToLower(name), "_")
	for i, w := range words {
		if w != "" {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return verb + "_" + strings.Join(words, "_")
}

// param drafts one input parameter; the request field is its name without
// the P_ prefix the ERP's procedures use.
func param(c column) (draftParam, string) {
	p := draftParam{Name: strings.TrimPrefix(c.name, "P_"), Required: true}
	switch {
	case (c.fieldType == typeSmallint || c.fieldType == typeInteger || c.fieldType == typeBigint) && c.scale < 0:
		p.Kind, p.Scale, p.Precision = catalog.Decimal, -c.scale, c.precision
		if p.Precision == 0 {
			p.Precision = map[int]int{typeSmallint: 4, typeInteger: 9, typeBigint: 18}[c.fieldType]
		}
	case c.fieldType == typeSmallint:
		p.Kind, p.Bits = catalog.Integer, 16
	case c.fieldType == typeInteger:
		p.Kind, p.Bits = catalog.Integer, 32
	case c.fieldType == typeBigint:
		p.Kind, p.Bits = catalog.Integer, 64
	case c.fieldType == typeDate:
		p.Kind = catalog.Date
	case c.fieldType == typeChar || c.fieldType == typeVarchar:
		p.MaxChars = c.chars
	default:
		p.MaxChars = 32765
		what := map[int]string{typeTime: "TIME", typeTimestamp: "TIMESTAMP", typeFloat: "FLOAT", typeDouble: "DOUBLE PRECISION", typeBoolean: "BOOLEAN", typeBlob: "BLOB"}[c.fieldType]
		p.Comment = fmt.Sprintf("%s in the database: no kind fits; passed as text for Firebird to convert", cmpOr(what, fmt.Sprintf("field type %d", c.fieldType)))
		return p, fmt.Sprintf("input %s: %s", c.name, p.Comment)
	}
	return p, ""
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// readBack guesses a write's read-back: the selectable procedure named like
// the write with SELECT for its verb, taking parameters the write also has.
func readBack(p *procedure, params []draftParam, byName map[string]*procedure) *draftReadBack {
	have := map[string]bool{}
	for _, dp := range params {
		have[dp.Name] = true
	}
	var candidates []string
	for _, verb := range []string{"INSERT_", "UPDATE_", "SET_"} {
		if i := strings.Index(p.name, verb); i >= 0 {
			candidates = append(candidates, p.name[:i]+"SELECT_"+p.name[i+len(verb):])
		}
	}
	sort.Strings(candidates)
	for _, name := range candidates {
		sel, ok := byName[name]
		if !ok || !sel.selectable {
			continue
		}
		rb := &draftReadBack{Procedure: name, Params: []string{}}
		for _, in := range sel.inputs {
			field := strings.TrimPrefix(in.name, "P_")
			if !have[field] {
				rb = nil
				break
			}
			rb.Params = append(rb.Params, field)
		}
		if rb != nil {
			return rb
		}
	}
	return nil
}
