package firebird

import (
	"context"
	"database/sql"
	"fmt"

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

var fieldTypes = map[int]string{
	typeSmallint: "SMALLINT", typeInteger: "INTEGER", typeBigint: "BIGINT", typeFloat: "FLOAT",
	typeDouble: "DOUBLE PRECISION", typeDate: "DATE", typeTime: "TIME", typeTimestamp: "TIMESTAMP",
	typeChar: "CHAR", typeVarchar: "VARCHAR", typeBlob: "BLOB", typeBoolean: "BOOLEAN",
	typeInt128: "INT128", typeDecfloat16: "DECFLOAT(16)", typeDecfloat34: "DECFLOAT(34)",
	typeTimeTZ: "TIME WITH TIME ZONE", typeTimestampTZ: "TIMESTAMP WITH TIME ZONE",
}

// integerDigits is the precision a NUMERIC stored in each integer type has
// when RDB$FIELD_PRECISION does not say (domains of older servers).
var integerDigits = map[int]int{typeSmallint: 4, typeInteger: 9, typeBigint: 18}

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
		_, integer := integerDigits[fieldType]
		if integer && (scale < 0 || p.SubType == 1 || p.SubType == 2) {
			// NUMERIC and DECIMAL are stored as scaled integers.
			p.Type, p.Scale = "NUMERIC", -scale
			if p.SubType == 2 {
				p.Type = "DECIMAL"
			}
			if p.Precision == 0 {
				p.Precision = integerDigits[fieldType]
			}
		}
		if fieldType != typeBlob && !integer {
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
