package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/erp-gateway/gateway/shared/tenants"
)

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
	db, err := sql.Open("firebirdsql", inst.Config.DSN())
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
