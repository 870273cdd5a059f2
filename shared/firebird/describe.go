package firebird

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/tally"
)

// Describe reads from the system tables what the database says of the named
// procedures, as the target's user sees them. It uses a connection of its
// own, closed before it returns: it runs rarely (the doctor, the health
// check, after a call the database could not run) and must not disturb the
// pools' connections and their prepared statements.
func Describe(ctx context.Context, cfg erp.Connection, names []string) (map[string]catalog.Procedure, error) {
	db, err := sql.Open("firebirdsql", DSN(cfg))
	if err != nil {
		return nil, fmt.Errorf("%w: the connection settings cannot be used", erp.ErrUnavailable)
	}
	// The driver's close waits on the server (up to its own 10 s): never
	// in the caller's time.
	defer func() { go db.Close() }()
	db.SetMaxOpenConns(1)
	var out map[string]catalog.Procedure
	err = guard(ctx, func() error {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted, ReadOnly: true})
		if err != nil {
			return err
		}
		tally.Add(ctx, tally.ConnectionOpens)
		defer tx.Rollback() //nolint:errcheck // read-only: nothing to keep
		out = make(map[string]catalog.Procedure, len(names))
		for _, name := range names {
			// Unquoted, as the gateway writes them into SQL: Firebird
			// keeps such names in upper case.
			p, err := describe(ctx, tx, strings.ToUpper(name))
			if err != nil {
				return fmt.Errorf("describing %s: %w", name, err)
			}
			out[name] = p
		}
		return nil
	})
	if err != nil {
		return nil, classify(ctx, connecting, err)
	}
	return out, nil
}

func describe(ctx context.Context, tx *sql.Tx, name string) (catalog.Procedure, error) {
	p := catalog.Procedure{Name: name}
	var typ int
	var owner string
	tally.Add(ctx, tally.StatementPrepares) // database/sql prepares each query
	err := tx.QueryRowContext(ctx, `
		SELECT COALESCE(p.RDB$PROCEDURE_TYPE, 0), TRIM(p.RDB$OWNER_NAME)
		FROM RDB$PROCEDURES p
		WHERE p.RDB$PROCEDURE_NAME = ? AND p.RDB$PACKAGE_NAME IS NULL`, name).Scan(&typ, &owner)
	if errors.Is(err, sql.ErrNoRows) {
		return p, nil
	}
	if err != nil {
		return p, err
	}
	p.Exists, p.Selectable = true, typ == 1
	var grants int
	tally.Add(ctx, tally.StatementPrepares) // database/sql prepares each query
	if err := tx.QueryRowContext(ctx, `
		SELECT COUNT(*) FROM RDB$USER_PRIVILEGES u
		WHERE u.RDB$RELATION_NAME = ? AND u.RDB$OBJECT_TYPE = 5 AND u.RDB$PRIVILEGE = 'X'
		  AND (u.RDB$USER = CURRENT_USER OR u.RDB$USER = 'PUBLIC' OR u.RDB$USER = CURRENT_ROLE)`, name).Scan(&grants); err != nil {
		return p, err
	}
	var user string
	tally.Add(ctx, tally.StatementPrepares) // database/sql prepares each query
	if err := tx.QueryRowContext(ctx, `SELECT TRIM(CURRENT_USER) FROM RDB$DATABASE`).Scan(&user); err != nil {
		return p, err
	}
	p.Executable = grants > 0 || user == owner || user == "SYSDBA"
	if p.Inputs, p.Outputs, err = parameters(ctx, tx, name); err != nil {
		return p, err
	}
	tally.Add(ctx, tally.StatementPrepares) // database/sql prepares each query
	rows, err := tx.QueryContext(ctx, `
		SELECT DISTINCT TRIM(d.RDB$DEPENDED_ON_NAME) FROM RDB$DEPENDENCIES d
		WHERE d.RDB$DEPENDENT_NAME = ? AND d.RDB$DEPENDENT_TYPE = 5 AND d.RDB$DEPENDED_ON_TYPE = 7
		  AND NOT EXISTS (SELECT 1 FROM RDB$USER_PRIVILEGES u
		    WHERE u.RDB$RELATION_NAME = d.RDB$DEPENDED_ON_NAME AND u.RDB$PRIVILEGE = 'G'
		      AND (u.RDB$USER = d.RDB$DEPENDENT_NAME OR u.RDB$USER = CURRENT_USER OR u.RDB$USER = 'PUBLIC'))
		ORDER BY 1`, name)
	if err != nil {
		return p, err
	}
	defer rows.Close()
	for rows.Next() {
		var exc string
		if err := rows.Scan(&exc); err != nil {
			return p, err
		}
		p.UngrantedExceptions = append(p.UngrantedExceptions, exc)
	}
	return p, rows.Err()
}

// Firebird's RDB$FIELD_TYPE codes and the SQL names they declare.
var fieldTypes = map[int]string{
	7: "SMALLINT", 8: "INTEGER", 16: "BIGINT", 10: "FLOAT", 27: "DOUBLE PRECISION", 12: "DATE",
	13: "TIME", 35: "TIMESTAMP", 14: "CHAR", 37: "VARCHAR", 261: "BLOB", 23: "BOOLEAN",
	26: "INT128", 24: "DECFLOAT(16)", 25: "DECFLOAT(34)", 28: "TIME WITH TIME ZONE", 29: "TIMESTAMP WITH TIME ZONE",
}

func parameters(ctx context.Context, tx *sql.Tx, name string) (inputs, outputs []catalog.DBParam, err error) {
	tally.Add(ctx, tally.StatementPrepares) // database/sql prepares each query
	rows, err := tx.QueryContext(ctx, `
		SELECT TRIM(pp.RDB$PARAMETER_NAME), pp.RDB$PARAMETER_TYPE, f.RDB$FIELD_TYPE,
			COALESCE(f.RDB$FIELD_SUB_TYPE, 0), COALESCE(f.RDB$FIELD_SCALE, 0), COALESCE(f.RDB$FIELD_PRECISION, 0),
			COALESCE(f.RDB$CHARACTER_LENGTH, f.RDB$FIELD_LENGTH, 0)
		FROM RDB$PROCEDURE_PARAMETERS pp
		JOIN RDB$FIELDS f ON f.RDB$FIELD_NAME = pp.RDB$FIELD_SOURCE
		WHERE pp.RDB$PROCEDURE_NAME = ? AND pp.RDB$PACKAGE_NAME IS NULL
		ORDER BY pp.RDB$PARAMETER_TYPE, pp.RDB$PARAMETER_NUMBER`, name)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var p catalog.DBParam
		var direction, fieldType, scale int
		if err := rows.Scan(&p.Name, &direction, &fieldType, &p.SubType, &scale, &p.Precision, &p.Chars); err != nil {
			return nil, nil, err
		}
		p.Type = fieldTypes[fieldType]
		if p.Type == "" {
			p.Type = fmt.Sprintf("field type %d", fieldType)
		}
		switch fieldType {
		case 7, 8, 16:
			if scale < 0 || p.SubType == 1 || p.SubType == 2 {
				// NUMERIC and DECIMAL are stored as scaled integers.
				p.Type, p.Scale = "NUMERIC", -scale
				if p.SubType == 2 {
					p.Type = "DECIMAL"
				}
			}
		}
		if fieldType != 261 && fieldType != 7 && fieldType != 8 && fieldType != 16 {
			p.SubType = 0
		}
		if direction == 0 {
			inputs = append(inputs, p)
		} else {
			outputs = append(outputs, p)
		}
	}
	return inputs, outputs, rows.Err()
}

// Describe is the package's Describe for an instance the pools serve.
func (p *Pools) Describe(ctx context.Context, t erp.Target, names []string) (map[string]catalog.Procedure, error) {
	return Describe(ctx, t.Connection, names)
}
