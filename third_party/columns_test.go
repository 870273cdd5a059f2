package thirdparty

import (
	"context"
	"database/sql/driver"
	"slices"
	"testing"

	"github.com/nakagami/firebirdsql"

	"github.com/erp-gateway/gateway/shared/fbtest"
)

// describedStmt is the driver's prepared statement as patch 0010 leaves it.
type describedStmt interface {
	ColumnTypes() []firebirdsql.ColumnType
}

// TestColumnTypesAtPrepare holds patch 0010 against Firebird: a prepared
// statement describes its result columns without a round trip, a BLOB's
// subtype and a text BLOB's character set included. On a connection in
// UTF8 a text BLOB in another character set is described in UTF8 (the
// server transliterates it), one in NONE or OCTETS in its own; on a
// connection in NONE every text BLOB keeps its own.
func TestColumnTypesAtPrepare(t *testing.T) {
	const query = `SELECT
  CAST('a' AS BLOB SUB_TYPE TEXT CHARACTER SET WIN1252) AS W,
  CAST('a' AS BLOB SUB_TYPE TEXT CHARACTER SET UTF8) AS U,
  CAST('a' AS BLOB SUB_TYPE TEXT CHARACTER SET NONE) AS N,
  CAST('a' AS BLOB SUB_TYPE TEXT CHARACTER SET OCTETS) AS O,
  CAST('a' AS BLOB SUB_TYPE BINARY) AS B,
  CAST('a' AS VARCHAR(10) CHARACTER SET UTF8) AS V,
  CAST(1 AS NUMERIC(9, 2)) AS D
FROM RDB$DATABASE`
	const (
		blob, varying, long = firebirdsql.SQL_TYPE_BLOB, firebirdsql.SQL_TYPE_VARYING, firebirdsql.SQL_TYPE_LONG
		none, octets, utf8  = 0, 1, 4
		win1252             = 53
	)
	tests := []struct {
		charset string
		want    []firebirdsql.ColumnType
	}{
		{"UTF8", []firebirdsql.ColumnType{
			{Name: "W", Type: blob, SubType: 1, Scale: utf8, Length: 8},
			{Name: "U", Type: blob, SubType: 1, Scale: utf8, Length: 8},
			{Name: "N", Type: blob, SubType: 1, Scale: none, Length: 8},
			{Name: "O", Type: blob, SubType: 1, Scale: octets, Length: 8},
			{Name: "B", Type: blob, SubType: 0, Scale: 0, Length: 8},
			{Name: "V", Type: varying, SubType: utf8, Scale: 0, Length: 40},
			{Name: "D", Type: long, SubType: 1, Scale: -2, Length: 4},
		}},
		{"NONE", []firebirdsql.ColumnType{
			{Name: "W", Type: blob, SubType: 1, Scale: win1252, Length: 8},
			{Name: "U", Type: blob, SubType: 1, Scale: utf8, Length: 8},
			{Name: "N", Type: blob, SubType: 1, Scale: none, Length: 8},
			{Name: "O", Type: blob, SubType: 1, Scale: octets, Length: 8},
			{Name: "B", Type: blob, SubType: 0, Scale: 0, Length: 8},
			{Name: "V", Type: varying, SubType: utf8, Scale: 0, Length: 40},
			{Name: "D", Type: long, SubType: 1, Scale: -2, Length: 4},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.charset, func(t *testing.T) {
			cfg := fbtest.Demo(t)
			cfg.Charset = tt.charset
			db, c := countedDBOf(t, cfg, "")
			ctx := context.Background()
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			err = conn.Raw(func(dc any) error {
				fc := dc.(driverConn)
				tx, err := fc.BeginTx(ctx, driver.TxOptions{ReadOnly: true})
				if err != nil {
					return err
				}
				defer tx.Rollback() //nolint:errcheck // it only reads
				st, err := fc.PrepareContext(ctx, query)
				if err != nil {
					return err
				}
				defer st.Close()
				d, ok := st.(describedStmt)
				if !ok {
					t.Fatalf("%T has no ColumnTypes", st)
				}
				var got []firebirdsql.ColumnType
				if trips := c.during(func() { got = d.ColumnTypes() }); trips != 0 {
					t.Errorf("ColumnTypes made %d round trips, want none", trips)
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("described\n%+v\nwant\n%+v", got, tt.want)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
