package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/erp-gateway/gateway/shared/catalog"
)

// draft turns procedures of a database of SQL dialect dialect into catalog
// entries, and says what an operator must look at: the guesses (CLAVE
// names, reads against writes, required) and what no kind fits.
func draft(dialect int, procs []catalog.Procedure) (catalog.File, []string) {
	notes := []string{"CLAVE names are guessed from the procedures' names; use the ones the clients send"}
	byName := map[string]catalog.Procedure{}
	procs = slices.DeleteFunc(slices.Clone(procs), func(p catalog.Procedure) bool {
		if catalog.ValidProcedureName(p.Name) {
			byName[p.Name] = p
			return false
		}
		// Such a name ("REST_SELECT_AÑO", one with a space) only a quoted
		// identifier reaches, which a catalog does not hold.
		notes = append(notes, fmt.Sprintf("%q: left out: a catalog names a procedure by a plain identifier (letters, digits, _ and $); call it from a procedure named so", p.Name))
		return true
	})
	doc := catalog.File{Comment: "Drafted by make catalog-from-db from RDB$PROCEDURE_PARAMETERS: review every entry (infra/docs/catalog.md#the-catalog)."}
	seen := map[string]bool{}
	for _, p := range procs {
		op := catalog.FileOperation{Clave: clave(p), Endpoint: catalog.ExecuteQuery, Procedure: p.Name, Params: []catalog.FileParam{}}
		if seen[op.Clave] {
			// REST_INSERT_X and REST_UPDATE_X both read as Set_X.
			first := op.Clave
			op.Clave += "_" + strings.ToLower(p.Name)
			notes = append(notes, fmt.Sprintf("%s: named %s, as %s was taken", p.Name, op.Clave, first))
		}
		seen[op.Clave] = true
		if writes(p) {
			op.Endpoint = catalog.Execute
			if p.Selectable {
				notes = append(notes, fmt.Sprintf("%s: selectable, but named for a write: drafted as a write on execute, answered by the rows it returns", op.Clave))
			}
		} else if !p.Selectable {
			notes = append(notes, fmt.Sprintf("%s: not selectable, but named for a read: drafted as a read on executequery, answered by its one row of outputs (if it writes, its read-only transaction refuses it: draft it on execute)", op.Clave))
		}
		fields := fieldNames(p.Inputs)
		for i, in := range p.Inputs {
			fp, note := param(in, dialect)
			fp.Name = fields[i]
			if !catalog.ValidParamName(fp.Name) || slices.Index(fields, fp.Name) != i {
				notes = append(notes, fmt.Sprintf("%s: input %s: no request field may be named so; name it (a plain identifier other than CLAVE, once)", op.Clave, in.Name))
			} else if fp.Name == in.Name && strings.HasPrefix(in.Name, "P_") {
				notes = append(notes, fmt.Sprintf("%s: input %s: request field %s, its whole name, as %s would not be a field of its own", op.Clave, in.Name, fp.Name, strings.TrimPrefix(in.Name, "P_")))
			}
			op.Params = append(op.Params, fp)
			if in.Default {
				notes = append(notes, fmt.Sprintf("%s: input %s has a default: calls get it only if the entry lists neither it nor any input after it (arguments go by position); listed, a client sets it, and as an optional parameter a field left out passes NULL, not the default", op.Clave, in.Name))
			}
			if note != "" {
				notes = append(notes, fmt.Sprintf("%s: %s", op.Clave, note))
			}
		}
		// A write that returns values is answered by them; one that
		// returns nothing, by the read that reads it back.
		if !p.Selectable && len(p.Outputs) == 0 {
			op.ReadBack = readBack(p, op.Params, byName)
			if op.ReadBack == nil {
				notes = append(notes, fmt.Sprintf("%s: answered by one empty row ({}): it returns nothing, and no selectable procedure to read it back (read_back) was found", op.Clave))
			}
		}
		doc.Operations = append(doc.Operations, op)
	}
	notes = append(notes, "every parameter is drafted as required; make optional those the procedure accepts as NULL")
	return doc, notes
}

// The verbs of procedures' names (after REST_): those that write, and those
// that read.
var (
	writeVerbs = []string{"INSERT_", "UPDATE_", "SET_", "DELETE_"}
	readVerbs  = []string{"SELECT_", "GET_"}
)

// writes guesses whether p writes: its name's verb says so, or it cannot
// be read from: not selectable, and not named for a read that returns its
// one row of outputs (EXECUTE PROCEDURE). A procedure that writes may still
// return its rows by SUSPEND; on executequery its read-only transaction
// would refuse its writes, so a wrong guess is refused, never written.
func writes(p catalog.Procedure) bool {
	switch name := strings.TrimPrefix(p.Name, "REST_"); {
	case named(name, writeVerbs):
		return true
	case named(name, readVerbs) && len(p.Outputs) > 0:
		return false
	}
	return !p.Selectable
}

func named(name string, verbs []string) bool {
	return slices.ContainsFunc(verbs, func(v string) bool { return strings.HasPrefix(name, v) })
}

// clave guesses a CLAVE in the original service's style from a procedure's
// name: REST_SELECT_INVENTARIO_PRECIO becomes Get_Inventario_Precio,
// REST_INSERT_TERCEROS Set_Terceros.
func clave(p catalog.Procedure) string {
	name := strings.TrimPrefix(p.Name, "REST_")
	verb := "Get"
	if writes(p) {
		verb = "Set"
	}
	for _, prefix := range slices.Concat(readVerbs, writeVerbs) {
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

// fieldNames names the request field of each input: its name without the
// P_ prefix the ERP's procedures use, unless that is no field of its own
// (P_CLAVE would be CLAVE, P_1 no name, P_CODIGO beside CODIGO the same
// field twice); then its whole name.
func fieldNames(inputs []catalog.DBParam) []string {
	names := make([]string, len(inputs))
	for i, in := range inputs {
		short := strings.TrimPrefix(in.Name, "P_")
		clash := func(o catalog.DBParam) bool {
			return o.Name != in.Name && (o.Name == short || strings.TrimPrefix(o.Name, "P_") == short)
		}
		names[i] = short
		if !catalog.ValidParamName(short) || slices.ContainsFunc(inputs, clash) {
			names[i] = in.Name
		}
	}
	return names
}

// fieldOf is the request field of the write's input that a read-back's
// input named name takes: the input of that name, else the one input
// whose name is the same without P_; "" when none or several are. params
// are the write's drafted parameters, one per input in order.
func fieldOf(inputs []catalog.DBParam, params []catalog.FileParam, name string) string {
	if i := slices.IndexFunc(inputs, func(in catalog.DBParam) bool { return in.Name == name }); i >= 0 {
		return params[i].Name
	}
	found := ""
	for i, in := range inputs {
		if strings.TrimPrefix(in.Name, "P_") == strings.TrimPrefix(name, "P_") {
			if found != "" {
				return ""
			}
			found = params[i].Name
		}
	}
	return found
}

// param drafts one input parameter, but for its request field's name
// (fieldNames).
func param(d catalog.DBParam, dialect int) (catalog.FileParam, string) {
	p := catalog.FileParam{Name: d.Name, Required: true}
	switch d.Type {
	case "NUMERIC", "DECIMAL":
		precision, scale := d.Precision, d.Scale
		p.Kind, p.Precision, p.Scale = catalog.Decimal, &precision, &scale
	case "SMALLINT":
		p.Kind, p.Bits = catalog.Integer, 16
	case "INTEGER":
		p.Kind, p.Bits = catalog.Integer, 32
	case "BIGINT":
		p.Kind, p.Bits = catalog.Integer, 64
	case "DOUBLE PRECISION":
		if !d.Dialect1Numeric() {
			return textParam(p, d)
		}
		precision, scale := max(d.Precision, d.Scale), d.Scale
		p.Kind, p.Precision, p.Scale = catalog.Decimal, &precision, &scale
	case "DATE":
		p.Kind = catalog.Date
	case "TIMESTAMP":
		if dialect != 1 {
			return textParam(p, d)
		}
		// Every DATE of SQL dialect 1 is a TIMESTAMP; the clients' dates
		// are days (DD.MM.YYYY, or NA for none).
		p.Kind = catalog.Date
		p.Comment = fmt.Sprintf("%s in the database (SQL dialect 1's DATE): drafted as a date, passed at midnight; make it text if its callers send a time of day", d)
		return p, fmt.Sprintf("input %s: %s", d.Name, p.Comment)
	case "CHAR", "VARCHAR":
		p.MaxChars = d.Chars
		if d.Charset == "OCTETS" {
			p.Comment = fmt.Sprintf("%s in the database: a request's text is passed as its UTF-8 bytes, counted in characters (answers give such values in base64)", d)
			return p, fmt.Sprintf("input %s: %s", d.Name, p.Comment)
		}
	default:
		return textParam(p, d)
	}
	return p, ""
}

// textParam drafts p, of d, as text for Firebird to convert: no kind fits.
func textParam(p catalog.FileParam, d catalog.DBParam) (catalog.FileParam, string) {
	p.MaxChars = 32765
	p.Comment = fmt.Sprintf("%s in the database: no kind fits; passed as text for Firebird to convert", d)
	return p, fmt.Sprintf("input %s: %s", d.Name, p.Comment)
}

// readBack guesses a write's read-back: the selectable procedure named like
// the write with SELECT for its verb, taking parameters the write also has.
func readBack(p catalog.Procedure, params []catalog.FileParam, byName map[string]catalog.Procedure) *catalog.FileReadBack {
	have := map[string]bool{}
	for _, fp := range params {
		have[fp.Name] = true
	}
	var candidates []string
	// Not DELETE_: what a delete removed is not there to read back.
	for _, verb := range []string{"INSERT_", "UPDATE_", "SET_"} {
		if i := strings.Index(p.Name, verb); i >= 0 {
			candidates = append(candidates, p.Name[:i]+"SELECT_"+p.Name[i+len(verb):])
		}
	}
	sort.Strings(candidates)
	for _, name := range candidates {
		sel, ok := byName[name]
		if !ok || !sel.Selectable {
			continue
		}
		rb := &catalog.FileReadBack{Procedure: name, Params: []string{}}
		for _, in := range sel.Inputs {
			field := fieldOf(p.Inputs, params, in.Name)
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
