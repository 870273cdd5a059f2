package thirdparty

import (
	"context"
	"testing"

	"github.com/erp-gateway/gateway/shared/fbtest"
)

// TestProcedureTextBlobIsAString holds patch 0014 against Firebird: the
// text BLOB an EXECUTE PROCEDURE returns is a string, as a SELECT's is,
// where the driver as released returned its bytes; a binary one stays
// bytes.
func TestProcedureTextBlobIsAString(t *testing.T) {
	cfg := fbtest.Demo(t)
	fbtest.Setup(t, cfg,
		`CREATE OR ALTER PROCEDURE TEST_BLOB_SALIDA RETURNS (T BLOB SUB_TYPE TEXT, B BLOB SUB_TYPE BINARY) AS BEGIN T = 'línea ñ'; B = x'00FF'; END`,
		`GRANT EXECUTE ON PROCEDURE TEST_BLOB_SALIDA TO GATEWAY`)
	db, _ := countedDB(t, "")
	var text, binary any
	if err := db.QueryRowContext(context.Background(), "EXECUTE PROCEDURE TEST_BLOB_SALIDA").Scan(&text, &binary); err != nil {
		t.Fatal(err)
	}
	if s, ok := text.(string); !ok || s != "línea ñ" {
		t.Fatalf("the text BLOB: %T %v, want the string", text, text)
	}
	if b, ok := binary.([]byte); !ok || string(b) != "\x00\xff" {
		t.Fatalf("the binary BLOB: %T %v, want its bytes", binary, binary)
	}
}
