package firebird

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/tally"
)

// Firebird's RDB$FIELD_TYPE codes: written here only, and turned into the
// SQL names catalog.DBParam speaks in.
const (
	typeSmallint    = 7
	typeInteger     = 8
	typeFloat       = 10
	typeDate        = 12
	typeTime        = 13
	typeChar        = 14
	typeBigint      = 16
	typeBoolean     = 23
	typeDecfloat16  = 24
	typeDecfloat34  = 25
	typeInt128      = 26
	typeDouble      = 27
	typeTimeTZ      = 28
	typeTimestampTZ = 29
	typeTimestamp   = 35
	typeVarchar     = 37
	typeBlob        = 261
)

var fieldTypes = map[int64]string{
	typeSmallint: "SMALLINT", typeInteger: "INTEGER", typeBigint: "BIGINT", typeFloat: "FLOAT",
	typeDouble: "DOUBLE PRECISION", typeDate: "DATE", typeTime: "TIME", typeTimestamp: "TIMESTAMP",
	typeChar: "CHAR", typeVarchar: "VARCHAR", typeBlob: "BLOB", typeBoolean: "BOOLEAN",
	typeInt128: "INT128", typeDecfloat16: "DECFLOAT(16)", typeDecfloat34: "DECFLOAT(34)",
	typeTimeTZ: "TIME WITH TIME ZONE", typeTimestampTZ: "TIMESTAMP WITH TIME ZONE",
}

// integerDigits is the precision a NUMERIC stored in each integer type has
// when RDB$FIELD_PRECISION does not say (domains of older servers).
var integerDigits = map[int64]int{typeSmallint: 4, typeInteger: 9, typeBigint: 18}

// querier runs a query and hands each row's values to each: a pool's
// Session and a database/sql transaction of the description's own
// attachment both serve, so a signature is read by one piece of code.
type querier func(ctx context.Context, query string, args []any, each func([]driver.Value) error) error

// Each runs query and hands each row's values to each, which may keep
// none of them.
func (s *Session) Each(ctx context.Context, query string, args []any, each func([]any) error) error {
	var vals []any
	return s.outcome(ctx, s.each(ctx, query, args, func(row []driver.Value) error {
		vals = vals[:0]
		for _, v := range row {
			vals = append(vals, v)
		}
		return each(vals)
	}))
}

// each is Each in the driver's values.
func (s *Session) each(ctx context.Context, query string, args []any, each func([]driver.Value) error) error {
	rows, err := s.open(ctx, query, args)
	if err != nil {
		return err
	}
	defer rows.Close()
	dest := make([]driver.Value, len(rows.Columns()))
	for {
		if err := rows.Next(dest); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return s.failed(ctx, query, err)
		}
		if err := each(dest); err != nil {
			return err
		}
	}
}

func txQuerier(tx *sql.Tx) querier {
	return func(ctx context.Context, query string, args []any, each func([]driver.Value) error) error {
		tally.Add(ctx, tally.StatementPrepares) // database/sql prepares each query
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		cols, err := rows.Columns()
		if err != nil {
			return err
		}
		vals, ptrs := make([]driver.Value, len(cols)), make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				return err
			}
			if err := each(vals); err != nil {
				return err
			}
		}
		return rows.Err()
	}
}

// signatures reads the parameters of the named procedures (upper case, as
// Firebird keeps unquoted names), and whether each is selectable, in one
// round trip. A procedure that does not exist, or has no parameters, has
// no entry. commitTrigger: the database has an active trigger ON
// TRANSACTION COMMIT, or no entry told.
func signatures(ctx context.Context, q querier, names []string) (sigs map[string]catalog.Procedure, commitTrigger bool, err error) {
	if len(names) == 1 {
		// As a write's two: one statement serves both.
		names = append(names, names[0])
	}
	query := `SELECT TRIM(pp.RDB$PROCEDURE_NAME), TRIM(pp.RDB$PARAMETER_NAME), pp.RDB$PARAMETER_TYPE, TRIM(pp.RDB$FIELD_SOURCE),
			f.RDB$FIELD_TYPE, COALESCE(f.RDB$FIELD_SUB_TYPE, 0), COALESCE(f.RDB$FIELD_SCALE, 0), COALESCE(f.RDB$FIELD_PRECISION, 0),
			COALESCE(f.RDB$CHARACTER_LENGTH, f.RDB$FIELD_LENGTH, 0), COALESCE(TRIM(cs.RDB$CHARACTER_SET_NAME), ''),
			COALESCE(pr.RDB$PROCEDURE_TYPE, 0), pp.RDB$DEFAULT_VALUE IS NOT NULL, ct.N
		FROM RDB$PROCEDURE_PARAMETERS pp
		CROSS JOIN (SELECT COUNT(*) AS N FROM RDB$TRIGGERS WHERE RDB$TRIGGER_TYPE = 8195 AND COALESCE(RDB$TRIGGER_INACTIVE, 0) = 0) ct
		JOIN RDB$PROCEDURES pr ON pr.RDB$PROCEDURE_NAME = pp.RDB$PROCEDURE_NAME AND pr.RDB$PACKAGE_NAME IS NULL
		JOIN RDB$FIELDS f ON f.RDB$FIELD_NAME = pp.RDB$FIELD_SOURCE
		LEFT JOIN RDB$CHARACTER_SETS cs ON cs.RDB$CHARACTER_SET_ID = f.RDB$CHARACTER_SET_ID
		WHERE pp.RDB$PROCEDURE_NAME IN ` + placeholders(len(names)) + ` AND pp.RDB$PACKAGE_NAME IS NULL
		ORDER BY pp.RDB$PARAMETER_TYPE, pp.RDB$PARAMETER_NUMBER`
	out := make(map[string]catalog.Procedure, len(names))
	commitTrigger = true
	err = q(ctx, query, anys(names), func(v []driver.Value) error {
		var n [6]int64
		for i, x := range []driver.Value{v[2], v[4], v[5], v[6], v[7], v[12]} {
			n[i], _ = x.(int64)
		}
		commitTrigger = n[5] > 0
		direction, fieldType, scale := n[0], n[1], n[3]
		p := catalog.DBParam{SubType: int(n[2]), Precision: int(n[4])}
		p.Name, _ = v[1].(string)
		p.Domain, _ = v[3].(string)
		p.Charset, _ = v[9].(string)
		p.Default, _ = v[11].(bool)
		chars, _ := v[8].(int64)
		p.Chars = int(chars)
		p.Type = fieldTypes[fieldType]
		if p.Type == "" {
			p.Type = fmt.Sprintf("field type %d", fieldType)
		}
		_, integer := integerDigits[fieldType]
		if integer && (scale < 0 || p.SubType == 1 || p.SubType == 2) {
			// NUMERIC and DECIMAL are stored as scaled integers.
			p.Type, p.Scale = "NUMERIC", int(-scale)
			if p.SubType == 2 {
				p.Type = "DECIMAL"
			}
			if p.Precision == 0 {
				p.Precision = integerDigits[fieldType]
			}
		}
		if fieldType == typeDouble && scale < 0 {
			// A NUMERIC or DECIMAL of SQL dialect 1, kept as a double,
			// whose declared precision Firebird does not keep.
			p.Scale, p.Precision = int(-scale), catalog.DoubleDigits
		}
		if fieldType != typeBlob && !integer {
			p.SubType = 0
		}
		name, _ := v[0].(string)
		proc := out[name]
		typ, _ := v[10].(int64)
		proc.Selectable = typ == 1
		if direction == 0 {
			proc.Inputs = append(proc.Inputs, p)
		} else {
			proc.Outputs = append(proc.Outputs, p)
		}
		out[name] = proc
		return nil
	})
	return out, commitTrigger, err
}
