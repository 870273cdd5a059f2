// Command catalog checks catalog files and drafts catalog entries from a
// database's procedures:
//
//	catalog check FILE...                      exit 1 naming the entry and field of the first error
//	catalog from-db -instances F [-instance N] [-procedures 'REST_%']
//	catalog doctor -instances F [-catalog FILE]  compare a catalog with each instance's database
//
// `make build` runs check, `make catalog-from-db` from-db, `make doctor` doctor.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"time"

	_ "github.com/nakagami/firebirdsql"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/tenants"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	switch os.Args[1] {
	case "check":
		err = check(os.Args[2:])
	case "from-db":
		err = fromDB(ctx, os.Args[2:], os.Stdout, os.Stderr)
	case "doctor":
		err = doctor(ctx, os.Args[2:], os.Stdout)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "catalog:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: catalog check FILE... | catalog from-db -instances FILE [-instance NAME] [-procedures 'REST_%'] | catalog doctor -instances FILE [-catalog FILE]")
	os.Exit(2)
}

func check(files []string) error {
	if len(files) == 0 {
		return errors.New("check: name at least one catalog file")
	}
	for _, f := range files {
		if _, err := catalog.LoadFile(f); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "catalog %s: valid\n", f)
	}
	return nil
}

// errFindings makes the doctor's exit status 1 when a finding is fatal.
var errFindings = errors.New("the catalog and a database disagree (fatal findings above)")

func doctor(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	instancesPath := fs.String("instances", "infra/instances.demo.json", "instances file")
	catalogPath := fs.String("catalog", "", "catalog file (default: the specification's operations)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	instances, err := tenants.LoadFile(*instancesPath)
	if err != nil {
		return err
	}
	cat := catalog.Default()
	if *catalogPath != "" {
		if cat, err = catalog.LoadFile(*catalogPath); err != nil {
			return err
		}
	}
	fatal := false
	for _, name := range instances.Names() {
		inst, err := instances.Lookup(ctx, name)
		if err != nil {
			return err
		}
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		procs, err := firebird.Describe(dctx, inst.Connection, cat.Procedures())
		cancel()
		if err != nil {
			fmt.Fprintf(stdout, "%s: cannot read the database: %v\n", name, err)
			fatal = true
			continue
		}
		findings := cat.Diagnose(procs)
		if len(findings) == 0 {
			fmt.Fprintf(stdout, "%s: ok (%d operations, %d procedures)\n", name, len(cat.Claves()), len(cat.Procedures()))
		}
		for _, f := range findings {
			level := "warning"
			if f.Fatal {
				level, fatal = "FATAL", true
			}
			fmt.Fprintf(stdout, "%s: %s: %s\n", name, level, f.Text)
		}
	}
	if fatal {
		return errFindings
	}
	return nil
}

func fromDB(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("from-db", flag.ContinueOnError)
	instancesPath := fs.String("instances", "infra/instances.demo.json", "instances file")
	name := fs.String("instance", "", "instance to read (may be left out when the file has one)")
	like := fs.String("procedures", "REST_%", "procedure names, as a SQL LIKE pattern")
	if err := fs.Parse(args); err != nil {
		return err
	}
	instances, err := tenants.LoadFile(*instancesPath)
	if err != nil {
		return err
	}
	if *name == "" {
		names := instances.Names()
		if len(names) != 1 {
			return fmt.Errorf("%s has %d instances (%s): choose one with INSTANCE=", *instancesPath, len(names), strings.Join(names, ", "))
		}
		*name = names[0]
	}
	inst, err := instances.Lookup(ctx, *name)
	if err != nil {
		return fmt.Errorf("instance %s: %w", *name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	db, err := sql.Open("firebirdsql", firebird.DSN(inst.Connection))
	if err != nil {
		return errors.New("cannot open the instance's database") // the error would quote the DSN
	}
	defer db.Close()
	procs, err := readProcedures(ctx, db, *like)
	if err != nil {
		return err
	}
	if len(procs) == 0 {
		return fmt.Errorf("no procedure of instance %s matches %q", *name, *like)
	}
	doc, notes := draft(procs)
	for _, n := range notes {
		fmt.Fprintln(stderr, "review:", n)
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(doc)
}

// procedure is what RDB$PROCEDURES and RDB$PROCEDURE_PARAMETERS say of one
// procedure.
type procedure struct {
	name       string
	selectable bool
	inputs     []column
	outputs    []column
}

type column struct {
	name                    string
	fieldType, subType      int
	scale, precision, chars int
	notNull                 bool
}

func readProcedures(ctx context.Context, db *sql.DB, like string) ([]*procedure, error) {
	rows, err := db.QueryContext(ctx, `
		SELECT TRIM(p.RDB$PROCEDURE_NAME), COALESCE(p.RDB$PROCEDURE_TYPE, 0)
		FROM RDB$PROCEDURES p
		WHERE p.RDB$PROCEDURE_NAME LIKE ? AND COALESCE(p.RDB$SYSTEM_FLAG, 0) = 0 AND p.RDB$PACKAGE_NAME IS NULL
		ORDER BY 1`, like)
	if err != nil {
		return nil, fmt.Errorf("reading RDB$PROCEDURES: %w", err)
	}
	var procs []*procedure
	for rows.Next() {
		var p procedure
		var typ int
		if err := rows.Scan(&p.name, &typ); err != nil {
			rows.Close()
			return nil, err
		}
		p.selectable = typ == 1
		procs = append(procs, &p)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	for _, p := range procs {
		if err := readParameters(ctx, db, p); err != nil {
			return nil, fmt.Errorf("parameters of %s: %w", p.name, err)
		}
	}
	return procs, nil
}

func readParameters(ctx context.Context, db *sql.DB, p *procedure) error {
	rows, err := db.QueryContext(ctx, `
		SELECT TRIM(pp.RDB$PARAMETER_NAME), pp.RDB$PARAMETER_TYPE,
			f.RDB$FIELD_TYPE, COALESCE(f.RDB$FIELD_SUB_TYPE, 0), COALESCE(f.RDB$FIELD_SCALE, 0),
			COALESCE(f.RDB$FIELD_PRECISION, 0), COALESCE(f.RDB$CHARACTER_LENGTH, f.RDB$FIELD_LENGTH, 0),
			COALESCE(pp.RDB$NULL_FLAG, 0)
		FROM RDB$PROCEDURE_PARAMETERS pp
		JOIN RDB$FIELDS f ON f.RDB$FIELD_NAME = pp.RDB$FIELD_SOURCE
		WHERE pp.RDB$PROCEDURE_NAME = ? AND pp.RDB$PACKAGE_NAME IS NULL
		ORDER BY pp.RDB$PARAMETER_TYPE, pp.RDB$PARAMETER_NUMBER`, p.name)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var c column
		var direction, notNull int
		if err := rows.Scan(&c.name, &direction, &c.fieldType, &c.subType, &c.scale, &c.precision, &c.chars, &notNull); err != nil {
			return err
		}
		c.notNull = notNull == 1
		if direction == 0 {
			p.inputs = append(p.inputs, c)
		} else {
			p.outputs = append(p.outputs, c)
		}
	}
	return rows.Err()
}

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
