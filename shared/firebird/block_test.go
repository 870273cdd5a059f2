package firebird

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/nakagami/firebirdsql"
)

// TestUnblock: the position the block adds to a status vector is removed,
// as the server sent the vectors (TestIdempotencyKeys compares whole
// answers).
func TestUnblock(t *testing.T) {
	tests := []struct {
		name       string
		codes      []int
		params     [][]string
		message    string
		wantParams [][]string
		wantMsg    string
	}{
		{"an exception of the procedure",
			[]int{firebirdsql.ISCExcept, 335544382, 335544382, firebirdsql.ISCStackTrace},
			[][]string{{"17"}, {"E_TEST_PAGO"}, {"valor negativo"}, {"At procedure 'REST_TEST_PAGAR' line: 2, col: 26\nAt block line: 4, col: 3"}},
			"exception 17\nE_TEST_PAGO\nvalor negativo\nAt procedure 'REST_TEST_PAGAR' line: 2, col: 26\nAt block line: 4, col: 3\n",
			[][]string{{"17"}, {"E_TEST_PAGO"}, {"valor negativo"}, {"At procedure 'REST_TEST_PAGAR' line: 2, col: 26"}},
			"exception 17\nE_TEST_PAGO\nvalor negativo\nAt procedure 'REST_TEST_PAGAR' line: 2, col: 26\n"},
		{"a constraint of the block itself",
			[]int{firebirdsql.ISCUniqueKeyViolation, 335545072, firebirdsql.ISCStackTrace},
			[][]string{{"PK_T", "T"}, {`("ID" = 1)`}, {"At block line: 3, col: 3"}},
			"violation of PRIMARY or UNIQUE KEY constraint PK_T on table T\nProblematic key value is (\"ID\" = 1)\nAt block line: 3, col: 3\n",
			[][]string{{"PK_T", "T"}, {`("ID" = 1)`}, {""}},
			"violation of PRIMARY or UNIQUE KEY constraint PK_T on table T\nProblematic key value is (\"ID\" = 1)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &firebirdsql.FbError{GDSCodes: tt.codes, Params: tt.params, Message: tt.message}
			err := unblock(fmt.Errorf("wrapped: %w", fb))
			if !errors.Is(err, fb) {
				t.Fatalf("the error changed: %v", err)
			}
			if fb.Message != tt.wantMsg || !slices.EqualFunc(fb.Params, tt.wantParams, slices.Equal) {
				t.Fatalf("%q %q, want %q %q", fb.Params, fb.Message, tt.wantParams, tt.wantMsg)
			}
		})
	}
}

// TestKeyedBlock: the block's text for procedures with and without
// arguments and values to return, with more arguments than inputs, and
// keeping the answer.
func TestKeyedBlock(t *testing.T) {
	head := "EXECUTE BLOCK (GATEWAY$K0 TYPE OF COLUMN GATEWAY_IDEMPOTENCY.SCOPE = ?, GATEWAY$K1 TYPE OF COLUMN GATEWAY_IDEMPOTENCY.IDEM_KEY = ?, " +
		"GATEWAY$K2 TYPE OF COLUMN GATEWAY_IDEMPOTENCY.CLAVE = ?, GATEWAY$K3 TYPE OF COLUMN GATEWAY_IDEMPOTENCY.REQUEST_HASH = ?, GATEWAY$K4 TYPE OF COLUMN GATEWAY_IDEMPOTENCY.CREATED_AT = ?"
	claim := "BEGIN\n  INSERT INTO GATEWAY_IDEMPOTENCY (SCOPE, IDEM_KEY, CLAVE, REQUEST_HASH, CREATED_AT) VALUES (:GATEWAY$K0, :GATEWAY$K1, :GATEWAY$K2, :GATEWAY$K3, :GATEWAY$K4);\n"
	one := signature{outputs: []param{{"CODIGO", "TYPE OF RDB$9", 0, 0}}}
	tests := []struct {
		name           string
		w              keyedCall
		proc, readBack signature
		want           string
	}{
		{"no arguments", keyedCall{procedure: "P", readBack: "R"}, signature{}, one,
			head + ")\nRETURNS (CODIGO TYPE OF RDB$9)\nAS\n" + claim + "  EXECUTE PROCEDURE P;\n  FOR SELECT * FROM R INTO :CODIGO DO SUSPEND;\nEND"},
		{"arguments and values", keyedCall{procedure: "P", readBack: "R", args: []any{1, 2}, readArgs: []any{1}},
			signature{inputs: []param{{"A", "TYPE OF RDB$1", 0, 0}, {"B", `TYPE OF "d"`, 0, 0}}, outputs: []param{{"X", "TYPE OF RDB$3", 0, 0}}},
			signature{inputs: []param{{"A", "TYPE OF RDB$8", 0, 0}}, outputs: []param{{"CODIGO", "TYPE OF RDB$9", 0, 0}, {"name", "TYPE OF RDB$10", 0, 0}}},
			head + ", GATEWAY$P0 TYPE OF RDB$1 = ?, GATEWAY$P1 TYPE OF \"d\" = ?, GATEWAY$R0 TYPE OF RDB$8 = ?)\n" +
				"RETURNS (CODIGO TYPE OF RDB$9, \"name\" TYPE OF RDB$10)\nAS\nDECLARE GATEWAY$O0 TYPE OF RDB$3;\n" + claim +
				"  EXECUTE PROCEDURE P(:GATEWAY$P0, :GATEWAY$P1) RETURNING_VALUES :GATEWAY$O0;\n" +
				"  FOR SELECT * FROM R(:GATEWAY$R0) INTO :CODIGO, :\"name\" DO SUSPEND;\nEND"},
		{"an argument too many", keyedCall{procedure: "P", readBack: "R", args: []any{1}}, signature{}, one,
			head + ", GATEWAY$P0 INTEGER = ?)\nRETURNS (CODIGO TYPE OF RDB$9)\nAS\n" + claim + "  EXECUTE PROCEDURE P(:GATEWAY$P0);\n  FOR SELECT * FROM R INTO :CODIGO DO SUSPEND;\nEND"},
		{"keeping the answer", keyedCall{procedure: "P", readBack: "R", readArgs: []any{1}, keep: true}, signature{},
			signature{inputs: []param{{"A", "TYPE OF RDB$8", 0, 0}}, outputs: []param{{"CODIGO", "TYPE OF RDB$9", keptText, 15}, {"it's", "TYPE OF RDB$10", keptInteger, 0}}},
			head + ", GATEWAY$R0 TYPE OF RDB$8 = ?)\n" +
				"RETURNS (CODIGO TYPE OF RDB$9, \"it's\" TYPE OF RDB$10, GATEWAY$KEPT SMALLINT)\n" +
				"AS\n" +
				"DECLARE GATEWAY$A VARCHAR(8000) CHARACTER SET OCTETS;\n" +
				"DECLARE GATEWAY$V VARCHAR(32765) CHARACTER SET OCTETS;\n" +
				"DECLARE GATEWAY$ROW CHAR(8) CHARACTER SET OCTETS;\n" +
				"BEGIN\n" +
				"  INSERT INTO GATEWAY_IDEMPOTENCY (SCOPE, IDEM_KEY, CLAVE, REQUEST_HASH, CREATED_AT) VALUES (:GATEWAY$K0, :GATEWAY$K1, :GATEWAY$K2, :GATEWAY$K3, :GATEWAY$K4) RETURNING RDB$DB_KEY INTO :GATEWAY$ROW;\n" +
				"  EXECUTE PROCEDURE P;\n" +
				"  GATEWAY$A = 'K1;t6:CODIGOi4:it''s';\n" +
				"  GATEWAY$KEPT = 1;\n" +
				"  FOR SELECT * FROM R(:GATEWAY$R0) INTO :CODIGO, :\"it's\" DO\n" +
				"  BEGIN\n" +
				"    GATEWAY$V = COALESCE(OCTET_LENGTH(CAST(:CODIGO AS VARCHAR(15) CHARACTER SET UTF8)) || ':' || CAST(:CODIGO AS VARCHAR(15) CHARACTER SET UTF8), '-')\n" +
				"      || COALESCE(OCTET_LENGTH(CAST(:\"it's\" AS VARCHAR(32) CHARACTER SET UTF8)) || ':' || CAST(:\"it's\" AS VARCHAR(32) CHARACTER SET UTF8), '-');\n" +
				"    IF (GATEWAY$KEPT = 1 AND OCTET_LENGTH(GATEWAY$A) + OCTET_LENGTH(GATEWAY$V) <= 8000) THEN GATEWAY$A = GATEWAY$A || GATEWAY$V;\n" +
				"    ELSE GATEWAY$KEPT = 0;\n" +
				"    SUSPEND;\n" +
				"  END\n" +
				"  IF (GATEWAY$KEPT = 1) THEN UPDATE GATEWAY_IDEMPOTENCY SET ANSWER = :GATEWAY$A WHERE RDB$DB_KEY = :GATEWAY$ROW;\n" +
				"END"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := writeBlock(tt.w, tt.proc, tt.readBack).text; got != tt.want {
				t.Fatalf("\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
	if quoted("RDB$12") != "RDB$12" || quoted(`a"b`) != `"a""b"` {
		t.Fatal("quoted")
	}
}
