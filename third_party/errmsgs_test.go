package thirdparty

import (
	"context"
	"strings"
	"testing"

	"github.com/erp-gateway/gateway/shared/fbtest"
)

// TestEngineErrorsInFirebird3sWords holds patch 0017 against Firebird: the
// errors an ERP's procedure meets read as Firebird 3's isql prints them,
// names quoted, where the driver as released (its texts from Firebird's
// master, which quotes names in the arguments instead) dropped the quotes.
func TestEngineErrorsInFirebird3sWords(t *testing.T) {
	cfg := fbtest.Demo(t)
	fbtest.Setup(t, cfg,
		`RECREATE TABLE TEST_MSG_HIJO (ID INTEGER)`,
		`RECREATE TABLE TEST_MSG_PADRE (ID INTEGER NOT NULL, CODIGO VARCHAR(10), CONSTRAINT PK_TEST_MSG_PADRE PRIMARY KEY (ID))`,
		`RECREATE TABLE TEST_MSG_HIJO (ID INTEGER, PADRE INTEGER, CONSTRAINT FK_TEST_MSG_HIJO FOREIGN KEY (PADRE) REFERENCES TEST_MSG_PADRE (ID))`,
		`CREATE UNIQUE INDEX UX_TEST_MSG_CODIGO ON TEST_MSG_PADRE (CODIGO)`,
		`CREATE OR ALTER PROCEDURE TEST_MSG_UNO (A INTEGER) AS BEGIN END`,
		`GRANT ALL ON TEST_MSG_PADRE TO GATEWAY`,
		`GRANT ALL ON TEST_MSG_HIJO TO GATEWAY`,
		`GRANT EXECUTE ON PROCEDURE TEST_MSG_UNO TO GATEWAY`,
		`INSERT INTO TEST_MSG_PADRE VALUES (1, 'A')`)
	db, _ := countedDB(t, "")
	ctx := context.Background()
	for _, c := range []struct{ sql, want string }{
		{`INSERT INTO TEST_MSG_PADRE VALUES (1, 'B')`, `violation of PRIMARY or UNIQUE KEY constraint "PK_TEST_MSG_PADRE" on table "TEST_MSG_PADRE"`},
		{`INSERT INTO TEST_MSG_HIJO VALUES (1, 2)`, `violation of FOREIGN KEY constraint "FK_TEST_MSG_HIJO" on table "TEST_MSG_HIJO"`},
		{`INSERT INTO TEST_MSG_PADRE VALUES (2, 'A')`, `attempt to store duplicate value (visible to active transactions) in unique index "UX_TEST_MSG_CODIGO"`},
		{`EXECUTE PROCEDURE TEST_MSG_UNO(1, 2)`, `Input parameter mismatch for procedure TEST_MSG_UNO`},
	} {
		_, err := db.ExecContext(ctx, c.sql)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %s", c.sql, err, c.want)
		}
	}
}
