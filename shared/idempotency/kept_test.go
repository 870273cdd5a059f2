package idempotency

import (
	"slices"
	"strings"
	"testing"

	"github.com/erp-gateway/gateway/shared/calls"
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/record"
)

// TestKeptCode: which columns a block keeps as text.
func TestKeptCode(t *testing.T) {
	text := func(typ, charset string, chars int) catalog.DBParam {
		return catalog.DBParam{Type: typ, Charset: charset, Chars: chars}
	}
	tests := []struct {
		name string
		p    catalog.DBParam
		want byte
	}{
		{"INTEGER", catalog.DBParam{Type: "INTEGER"}, keptInteger},
		{"NUMERIC(18,4)", catalog.DBParam{Type: "NUMERIC", Precision: 18, Scale: 4}, keptDecimal},
		{"DECIMAL(18,6)", catalog.DBParam{Type: "DECIMAL", Precision: 18, Scale: 6}, keptDecimal},
		{"NUMERIC(18,7): written out as the answer writes it", catalog.DBParam{Type: "NUMERIC", Precision: 18, Scale: 7}, keptDecimal},
		{"INT128", catalog.DBParam{Type: "INT128"}, 0},
		{"DOUBLE PRECISION", catalog.DBParam{Type: "DOUBLE PRECISION"}, 0},
		{"FLOAT", catalog.DBParam{Type: "FLOAT"}, 0},
		{"BLOB", catalog.DBParam{Type: "BLOB", SubType: 1, Charset: "UTF8"}, 0},
		{"TIMESTAMP WITH TIME ZONE", catalog.DBParam{Type: "TIMESTAMP WITH TIME ZONE"}, 0},
		{"DATE", catalog.DBParam{Type: "DATE"}, keptDate},
		{"TIME", catalog.DBParam{Type: "TIME"}, keptTime},
		{"TIMESTAMP", catalog.DBParam{Type: "TIMESTAMP"}, keptTimestamp},
		{"BOOLEAN", catalog.DBParam{Type: "BOOLEAN"}, keptBoolean},
		{"CHAR(10) UTF8", text("CHAR", "UTF8", 10), keptChar},
		{"VARCHAR(10) WIN1252", text("VARCHAR", "WIN1252", 10), keptText},
		{"VARCHAR(10) NONE", text("VARCHAR", "NONE", 10), 0},
		{"VARCHAR(10) OCTETS", text("VARCHAR", "OCTETS", 10), 0},
		{"VARCHAR(8185) UTF8", text("VARCHAR", "UTF8", textCharsMax), keptText},
		{"VARCHAR(8186) UTF8", text("VARCHAR", "UTF8", textCharsMax+1), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := keptCode(tt.p); got != tt.want {
				t.Fatalf("%q, want %q", got, tt.want)
			}
		})
	}
}

// TestKeptHeader: an answer is kept as values only when every column's can
// be, and its names are ASCII.
func TestKeptHeader(t *testing.T) {
	vc := catalog.DBParam{Name: "CODIGO", Type: "VARCHAR", Charset: "UTF8", Chars: 15}
	tests := []struct {
		name string
		cols []catalog.DBParam
		want string
		ok   bool
	}{
		{"none", nil, keptMark, true},
		{"two", []catalog.DBParam{vc, {Name: "it's", Type: "INTEGER"}}, "K1;t6:CODIGOi4:it's", true},
		{"a DOUBLE", []catalog.DBParam{vc, {Name: "D", Type: "DOUBLE PRECISION"}}, "", false},
		{"a name not in ASCII", []catalog.DBParam{{Name: "AÑO", Type: "INTEGER"}}, "", false},
		{"too many", slices.Repeat([]catalog.DBParam{{Name: strings.Repeat("C", 63), Type: "INTEGER"}}, 40), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := form{cols: tt.cols}.header()
			if ok != tt.ok || (ok && got != tt.want) {
				t.Fatalf("%q %v, want %q %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestDecode: a kept answer encodes as the driver's values of its
// server text would; a damaged one is an error, never a panic or a partial
// answer.
func TestDecode(t *testing.T) {
	tests := []struct {
		name, kept, want string
		bad              bool
	}{
		{"no rows", "K1;t6:CODIGO", `[]`, false},
		{"every code", "K1;t1:Tc1:Ci1:In1:Nd1:Dh1:Hs1:Sb1:B" + "2:a\"4:x   2:-74:-0.510:2024-02-2913:13:14:15.123024:2024-02-29 13:14:15.12344:TRUE" + "--------",
			`[{"T":"a\"","C":"x","I":-7,"N":-0.5,"D":"2024-02-29","H":"13:14:15.123","S":"2024-02-29T13:14:15.1234","B":true},` +
				`{"T":null,"C":null,"I":null,"N":null,"D":null,"H":null,"S":null,"B":null}]`, false},
		{"empty text", "K1;t1:T0:", `[{"T":""}]`, false},
		{"a length past the end", "K1;t1:T9:ab", "", true},
		{"a row cut short", "K1;t1:Ti1:I1:a", "", true},
		{"not a number", "K1;i1:I1:x", "", true},
		{"an unknown code", "K1;z1:Z", "", true},
		{"a name missing", "K1;t", "", true},
		{"a negative length", "K1;t1:T-1:", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := record.NewEncoder("", "", record.Limits{})
			err := decode([]byte(tt.kept), out)
			if tt.bad {
				if err == nil {
					t.Fatalf("no error; answer %s", out.Finish())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(out.Finish()); got != tt.want {
				t.Fatalf("\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte("K1;t6:CODIGOi5:VECES3:abc1:1"))
	f.Add([]byte("K1;s1:S24:2024-02-29 13:14:15.1234-"))
	f.Fuzz(func(t *testing.T, kept []byte) {
		out := record.NewEncoder("", "", record.Limits{MaxBytes: 1 << 20})
		_ = decode(append([]byte(keptMark), kept...), out)
	})
}

// TestKeyedBlock: the block's text for procedures with and without
// arguments and values to return, with more arguments than inputs, and
// keeping the answer, its rows returned as read or its one row after all
// its work; a selectable procedure run to its last row, read back or
// answering by its own rows.
func TestKeyedBlock(t *testing.T) {
	head := "EXECUTE BLOCK (GATEWAY$TOKEN_ID VARCHAR(255) = ?, GATEWAY$REQUEST_ID VARCHAR(255) = ?, GATEWAY$K0 TYPE OF COLUMN GATEWAY_IDEMPOTENCY.SCOPE = ?, GATEWAY$K1 TYPE OF COLUMN GATEWAY_IDEMPOTENCY.IDEM_KEY = ?, " +
		"GATEWAY$K2 TYPE OF COLUMN GATEWAY_IDEMPOTENCY.CLAVE = ?, GATEWAY$K3 TYPE OF COLUMN GATEWAY_IDEMPOTENCY.REQUEST_HASH = ?, GATEWAY$K4 TYPE OF COLUMN GATEWAY_IDEMPOTENCY.CREATED_AT = ?"
	claim := "BEGIN\n" + "  GATEWAY$SET = RDB$SET_CONTEXT('USER_TRANSACTION', 'GATEWAY_TOKEN_ID', :GATEWAY$TOKEN_ID);\n  GATEWAY$SET = RDB$SET_CONTEXT('USER_TRANSACTION', 'GATEWAY_REQUEST_ID', :GATEWAY$REQUEST_ID);\n" + "  INSERT INTO GATEWAY_IDEMPOTENCY (SCOPE, IDEM_KEY, CLAVE, REQUEST_HASH, CREATED_AT) VALUES (:GATEWAY$K0, :GATEWAY$K1, :GATEWAY$K2, :GATEWAY$K3, :GATEWAY$K4);\n"
	// What a block that keeps its answer declares and claims first.
	keeping := "DECLARE GATEWAY$A VARCHAR(8000) CHARACTER SET OCTETS;\n" +
		"DECLARE GATEWAY$V VARCHAR(32765) CHARACTER SET OCTETS;\n" +
		"DECLARE GATEWAY$ROW CHAR(8) CHARACTER SET OCTETS;\n" +
		"BEGIN\n" + "  GATEWAY$SET = RDB$SET_CONTEXT('USER_TRANSACTION', 'GATEWAY_TOKEN_ID', :GATEWAY$TOKEN_ID);\n  GATEWAY$SET = RDB$SET_CONTEXT('USER_TRANSACTION', 'GATEWAY_REQUEST_ID', :GATEWAY$REQUEST_ID);\n" +
		"  INSERT INTO GATEWAY_IDEMPOTENCY (SCOPE, IDEM_KEY, CLAVE, REQUEST_HASH, CREATED_AT) VALUES (:GATEWAY$K0, :GATEWAY$K1, :GATEWAY$K2, :GATEWAY$K3, :GATEWAY$K4) RETURNING RDB$DB_KEY INTO :GATEWAY$ROW;\n"
	one := catalog.Procedure{Outputs: []catalog.DBParam{{Name: "CODIGO", Domain: "RDB$9", Type: "DOUBLE PRECISION"}}}
	tests := []struct {
		name           string
		w              write
		proc, readBack catalog.Procedure
		oneRow         bool
		want           string
	}{
		{"no arguments", write{Write: calls.Write{Procedure: "P", ReadBack: "R"}}, catalog.Procedure{}, one, false,
			head + ")\nRETURNS (\"CODIGO\" TYPE OF \"RDB$9\")\nAS\nDECLARE GATEWAY$SET INTEGER;\n" + claim + "  EXECUTE PROCEDURE \"P\";\n  FOR SELECT * FROM \"R\" INTO :\"CODIGO\" DO SUSPEND;\nEND"},
		{"arguments and values", write{Write: calls.Write{Procedure: "P", ReadBack: "R", Args: []any{1, 2}, ReadArgs: []any{1}}},
			catalog.Procedure{Inputs: []catalog.DBParam{{Name: "A", Domain: "RDB$1"}, {Name: "B", Domain: "d"}}, Outputs: []catalog.DBParam{{Name: "X", Domain: "RDB$3"}}},
			catalog.Procedure{Inputs: []catalog.DBParam{{Name: "A", Domain: "RDB$8"}}, Outputs: []catalog.DBParam{{Name: "CODIGO", Domain: "RDB$9"}, {Name: "name", Domain: "RDB$10"}}}, false,
			head + ", GATEWAY$P0 TYPE OF \"RDB$1\" = ?, GATEWAY$P1 TYPE OF \"d\" = ?, GATEWAY$R0 TYPE OF \"RDB$8\" = ?)\n" +
				"RETURNS (\"CODIGO\" TYPE OF \"RDB$9\", \"name\" TYPE OF \"RDB$10\")\nAS\nDECLARE GATEWAY$SET INTEGER;\nDECLARE GATEWAY$O0 TYPE OF \"RDB$3\";\n" + claim +
				"  EXECUTE PROCEDURE \"P\"(:GATEWAY$P0, :GATEWAY$P1) RETURNING_VALUES :GATEWAY$O0;\n" +
				"  FOR SELECT * FROM \"R\"(:GATEWAY$R0) INTO :\"CODIGO\", :\"name\" DO SUSPEND;\nEND"},
		{"a selectable procedure, read back", write{Write: calls.Write{Procedure: "P", ReadBack: "R", Args: []any{1}}},
			catalog.Procedure{Selectable: true, Inputs: []catalog.DBParam{{Name: "A", Domain: "RDB$1"}}, Outputs: []catalog.DBParam{{Name: "X", Domain: "RDB$3"}}}, one, false,
			head + ", GATEWAY$P0 TYPE OF \"RDB$1\" = ?)\nRETURNS (\"CODIGO\" TYPE OF \"RDB$9\")\nAS\nDECLARE GATEWAY$SET INTEGER;\nDECLARE GATEWAY$O0 TYPE OF \"RDB$3\";\n" + claim +
				"  FOR SELECT * FROM \"P\"(:GATEWAY$P0) INTO :GATEWAY$O0 DO BEGIN END\n  FOR SELECT * FROM \"R\" INTO :\"CODIGO\" DO SUSPEND;\nEND"},
		{"a selectable procedure's own rows", write{Write: calls.Write{Procedure: "P", Args: []any{1}}},
			catalog.Procedure{Selectable: true, Inputs: []catalog.DBParam{{Name: "A", Domain: "RDB$1"}}, Outputs: []catalog.DBParam{{Name: "X", Domain: "RDB$3"}}}, catalog.Procedure{}, false,
			head + ", GATEWAY$P0 TYPE OF \"RDB$1\" = ?)\nRETURNS (\"X\" TYPE OF \"RDB$3\")\nAS\nDECLARE GATEWAY$SET INTEGER;\n" + claim +
				"  FOR SELECT * FROM \"P\"(:GATEWAY$P0) INTO :\"X\" DO SUSPEND;\nEND"},
		{"a selectable procedure's one row", write{Write: calls.Write{Procedure: "P"}},
			catalog.Procedure{Selectable: true, Outputs: []catalog.DBParam{{Name: "X", Domain: "RDB$3"}}}, catalog.Procedure{}, true,
			head + ")\nRETURNS (\"X\" TYPE OF \"RDB$3\")\nAS\nDECLARE GATEWAY$SET INTEGER;\nDECLARE GATEWAY$ROWS INTEGER = 0;\n" + claim +
				"  FOR SELECT * FROM \"P\" INTO :\"X\" DO\n  BEGIN\n" +
				"    GATEWAY$ROWS = GATEWAY$ROWS + 1;\n    IF (GATEWAY$ROWS > 1) THEN GATEWAY$SET = CAST('GATEWAY$MANY_ROWS' AS INTEGER);\n" +
				"  END\n  IF (GATEWAY$ROWS = 1) THEN SUSPEND;\nEND"},
		{"a selectable procedure without outputs", write{Write: calls.Write{Procedure: "P"}},
			catalog.Procedure{Selectable: true}, catalog.Procedure{}, true,
			head + ")\nAS\nDECLARE GATEWAY$SET INTEGER;\n" + claim + "  FOR SELECT * FROM \"P\" INTO :GATEWAY$SET DO BEGIN END\nEND"},
		{"keeping a selectable procedure's own rows", write{Write: calls.Write{Procedure: "P"}, keep: true},
			catalog.Procedure{Selectable: true, Outputs: []catalog.DBParam{{Name: "N", Domain: "RDB$9", Type: "INTEGER"}}}, catalog.Procedure{}, false,
			head + ")\n" +
				"RETURNS (\"N\" TYPE OF \"RDB$9\", GATEWAY$KEPT SMALLINT)\n" +
				"AS\n" +
				"DECLARE GATEWAY$SET INTEGER;\n" +
				keeping +
				"  GATEWAY$A = 'K1;i1:N';\n" +
				"  GATEWAY$KEPT = 1;\n" +
				"  FOR SELECT * FROM \"P\" INTO :\"N\" DO\n" +
				"  BEGIN\n" +
				"    GATEWAY$V = COALESCE(OCTET_LENGTH(CAST(:\"N\" AS VARCHAR(32) CHARACTER SET UTF8)) || ':' || CAST(:\"N\" AS VARCHAR(32) CHARACTER SET UTF8), '-');\n" +
				"    IF (GATEWAY$KEPT = 1 AND OCTET_LENGTH(GATEWAY$A) + OCTET_LENGTH(GATEWAY$V) <= 8000) THEN GATEWAY$A = GATEWAY$A || GATEWAY$V;\n" +
				"    ELSE GATEWAY$KEPT = 0;\n" +
				"    SUSPEND;\n" +
				"  END\n" +
				"  IF (GATEWAY$KEPT = 1) THEN UPDATE GATEWAY_IDEMPOTENCY SET ANSWER = :GATEWAY$A WHERE RDB$DB_KEY = :GATEWAY$ROW;\n" +
				"END"},
		{"an argument too many", write{Write: calls.Write{Procedure: "P", ReadBack: "R", Args: []any{1}}}, catalog.Procedure{}, one, false,
			head + ", GATEWAY$P0 INTEGER = ?)\nRETURNS (\"CODIGO\" TYPE OF \"RDB$9\")\nAS\nDECLARE GATEWAY$SET INTEGER;\n" + claim + "  EXECUTE PROCEDURE \"P\"(:GATEWAY$P0);\n  FOR SELECT * FROM \"R\" INTO :\"CODIGO\" DO SUSPEND;\nEND"},
		{"keeping the answer", write{Write: calls.Write{Procedure: "P", ReadBack: "R", ReadArgs: []any{1}}, keep: true}, catalog.Procedure{},
			catalog.Procedure{Inputs: []catalog.DBParam{{Name: "A", Domain: "RDB$8"}}, Outputs: []catalog.DBParam{{Name: "CODIGO", Domain: "RDB$9", Type: "VARCHAR", Charset: "UTF8", Chars: 15}, {Name: "it's", Domain: "RDB$10", Type: "INTEGER"}}}, false,
			head + ", GATEWAY$R0 TYPE OF \"RDB$8\" = ?)\n" +
				"RETURNS (\"CODIGO\" TYPE OF \"RDB$9\", \"it's\" TYPE OF \"RDB$10\", GATEWAY$KEPT SMALLINT)\n" +
				"AS\n" +
				"DECLARE GATEWAY$SET INTEGER;\n" +
				keeping +
				"  EXECUTE PROCEDURE \"P\";\n" +
				"  GATEWAY$A = 'K1;t6:CODIGOi4:it''s';\n" +
				"  GATEWAY$KEPT = 1;\n" +
				"  FOR SELECT * FROM \"R\"(:GATEWAY$R0) INTO :\"CODIGO\", :\"it's\" DO\n" +
				"  BEGIN\n" +
				"    GATEWAY$V = COALESCE(OCTET_LENGTH(CAST(:\"CODIGO\" AS VARCHAR(15) CHARACTER SET UTF8)) || ':' || CAST(:\"CODIGO\" AS VARCHAR(15) CHARACTER SET UTF8), '-')\n" +
				"      || COALESCE(OCTET_LENGTH(CAST(:\"it's\" AS VARCHAR(32) CHARACTER SET UTF8)) || ':' || CAST(:\"it's\" AS VARCHAR(32) CHARACTER SET UTF8), '-');\n" +
				"    IF (GATEWAY$KEPT = 1 AND OCTET_LENGTH(GATEWAY$A) + OCTET_LENGTH(GATEWAY$V) <= 8000) THEN GATEWAY$A = GATEWAY$A || GATEWAY$V;\n" +
				"    ELSE GATEWAY$KEPT = 0;\n" +
				"    SUSPEND;\n" +
				"  END\n" +
				"  IF (GATEWAY$KEPT = 1) THEN UPDATE GATEWAY_IDEMPOTENCY SET ANSWER = :GATEWAY$A WHERE RDB$DB_KEY = :GATEWAY$ROW;\n" +
				"END"},
		{"keeping a one-row answer", write{Write: calls.Write{Procedure: "P", ReadBack: "R"}, keep: true}, catalog.Procedure{},
			catalog.Procedure{Outputs: []catalog.DBParam{{Name: "N", Domain: "RDB$9", Type: "INTEGER"}}}, true,
			head + ")\n" +
				"RETURNS (\"N\" TYPE OF \"RDB$9\", GATEWAY$KEPT SMALLINT)\n" +
				"AS\n" +
				"DECLARE GATEWAY$SET INTEGER;\n" +
				"DECLARE GATEWAY$ROWS INTEGER = 0;\n" +
				keeping +
				"  EXECUTE PROCEDURE \"P\";\n" +
				"  GATEWAY$A = 'K1;i1:N';\n" +
				"  GATEWAY$KEPT = 1;\n" +
				"  FOR SELECT * FROM \"R\" INTO :\"N\" DO\n" +
				"  BEGIN\n" +
				"    GATEWAY$ROWS = GATEWAY$ROWS + 1;\n" +
				"    IF (GATEWAY$ROWS > 1) THEN GATEWAY$SET = CAST('GATEWAY$MANY_ROWS' AS INTEGER);\n" +
				"    GATEWAY$V = COALESCE(OCTET_LENGTH(CAST(:\"N\" AS VARCHAR(32) CHARACTER SET UTF8)) || ':' || CAST(:\"N\" AS VARCHAR(32) CHARACTER SET UTF8), '-');\n" +
				"    IF (GATEWAY$KEPT = 1 AND OCTET_LENGTH(GATEWAY$A) + OCTET_LENGTH(GATEWAY$V) <= 8000) THEN GATEWAY$A = GATEWAY$A || GATEWAY$V;\n" +
				"    ELSE GATEWAY$KEPT = 0;\n" +
				"  END\n" +
				"  IF (GATEWAY$KEPT = 1) THEN UPDATE GATEWAY_IDEMPOTENCY SET ANSWER = :GATEWAY$A WHERE RDB$DB_KEY = :GATEWAY$ROW;\n" +
				"  IF (GATEWAY$ROWS = 1) THEN SUSPEND;\n" +
				"END"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, _ := firebird.WriteBlock(tt.w.Procedure, len(tt.w.Args), tt.w.ReadBack, len(tt.w.ReadArgs), tt.proc, tt.readBack, tt.w.parts(tt.proc, tt.readBack), tt.oneRow); got != tt.want {
				t.Fatalf("\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
