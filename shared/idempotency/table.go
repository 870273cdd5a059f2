// Package idempotency runs writes under Idempotency-Keys (README.md#writes-that-are-safe-to-retry): it claims a key, runs the write, keeps its
// answer and replays it, in the instance's own database, over the
// transactions and statements of package calls. The key and the
// write commit together or not at all.
package idempotency

import (
	"strconv"
	"strings"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
)

// KeyTable is the table keys are kept in, in the instance's own database.
const KeyTable = "GATEWAY_IDEMPOTENCY"

// Table is KeyTable as the health check and the doctor hold it.
func Table() catalog.Table {
	return catalog.Table{
		Name:       KeyTable,
		Columns:    []string{"SCOPE", "IDEM_KEY", "CLAVE", "REQUEST_HASH", "ANSWER", "ANSWER_LONG", "CREATED_AT"},
		Privileges: []string{"SELECT", "INSERT", "UPDATE", "DELETE"},
		Install:    "a DBA installs it with what make idempotency-sql prints",
		Finding:    catalog.KeysFinding,
		Fatal:      true,
	}
}

// TableSQL is the DDL a DBA runs once to install the table, and the grants
// of user (the gateway's Firebird user, or its role). The gateway never
// runs DDL itself.
func TableSQL(user string) string {
	return strings.NewReplacer("{table}", KeyTable, "{user}", user,
		"{scope}", strconv.Itoa(erp.TokenIDLength), "{key}", strconv.Itoa(erp.MaxKeyLength),
		"{clave}", strconv.Itoa(catalog.MaxName), "{answer}", strconv.Itoa(inlineMax)).Replace(`-- The ERP gateway's idempotency keys (README.md#writes-that-are-safe-to-retry).
-- Run once with isql as the database's owner or SYSDBA, then set
-- "idempotency": true in the instance's document.
CREATE TABLE {table} (
  SCOPE        VARCHAR({scope}) CHARACTER SET ASCII NOT NULL,
  IDEM_KEY     VARCHAR({key}) CHARACTER SET ASCII NOT NULL,
  CLAVE        VARCHAR({clave}) CHARACTER SET UTF8 NOT NULL,
  REQUEST_HASH CHAR(64) CHARACTER SET ASCII NOT NULL,
  ANSWER       VARCHAR({answer}) CHARACTER SET OCTETS,
  ANSWER_LONG  BLOB SUB_TYPE BINARY,
  CREATED_AT   TIMESTAMP NOT NULL,
  CONSTRAINT PK_{table} PRIMARY KEY (SCOPE, IDEM_KEY)
);
GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {user};
COMMIT;
`)
}

// The statements of the protocol besides the write's block, prepared once
// per connection like the others.
const (
	// claimSQL claims a key on its own: the probe's.
	claimSQL = "INSERT INTO " + KeyTable + " (SCOPE, IDEM_KEY, CLAVE, REQUEST_HASH, CREATED_AT) VALUES (?, ?, ?, ?, ?)"
	// An answer the block cannot keep as values is kept as its JSON:
	// inline when it fits (a blob costs three more round trips and server
	// work), in a blob when it does not.
	keepSQL     = "UPDATE " + KeyTable + " SET ANSWER = ? WHERE SCOPE = ? AND IDEM_KEY = ?"
	keepLongSQL = "UPDATE " + KeyTable + " SET ANSWER_LONG = ? WHERE SCOPE = ? AND IDEM_KEY = ?"
	inlineMax   = 8000
	// KeptMax bounds a kept answer, checked before the commit: a key must
	// not let a write keep megabytes in the customer's database (a batch's
	// reads, say). Over it the write is refused and nothing is written.
	KeptMax = 1 << 20
	// keptSQL compares the claim's time with a cutoff in the database, as
	// expireSQL and the sweep do: both are UTC digits there, where the
	// driver would read CREATED_AT in the connection's time zone.
	keptSQL   = "SELECT REQUEST_HASH, COALESCE(ANSWER, ANSWER_LONG), IIF(CREATED_AT < ?, 1, 0) FROM " + KeyTable + " WHERE SCOPE = ? AND IDEM_KEY = ?"
	expireSQL = "DELETE FROM " + KeyTable + " WHERE SCOPE = ? AND IDEM_KEY = ? AND CREATED_AT < ?"
	// sweepSQL examines the next keys after a position, in the primary
	// key's order (the table has no index on time: one would cost every
	// keyed write a page written at its commit, a fifth of the write), and
	// removes the expired among them. Its work is bounded (sweepBatch
	// keys, a few milliseconds, never a long transaction) whatever the
	// table's size; it returns where it stopped, and how many it examined:
	// fewer than the batch, it reached the end. No BIGINT: a database in
	// SQL dialect 1 refuses the word.
	sweepSQL = `EXECUTE BLOCK (FROM_SCOPE TYPE OF COLUMN ` + KeyTable + `.SCOPE = ?, FROM_KEY TYPE OF COLUMN ` + KeyTable + `.IDEM_KEY = ?, CUTOFF TIMESTAMP = ?, BATCH INTEGER = ?)
RETURNS (LAST_SCOPE TYPE OF COLUMN ` + KeyTable + `.SCOPE, LAST_KEY TYPE OF COLUMN ` + KeyTable + `.IDEM_KEY, SEEN INTEGER)
AS
DECLARE CREATED TIMESTAMP;
BEGIN
  SEEN = 0;
  LAST_SCOPE = FROM_SCOPE;
  LAST_KEY = FROM_KEY;
  FOR SELECT SCOPE, IDEM_KEY, CREATED_AT FROM ` + KeyTable + ` WHERE SCOPE = :FROM_SCOPE AND IDEM_KEY > :FROM_KEY
      ORDER BY SCOPE, IDEM_KEY ROWS :BATCH INTO :LAST_SCOPE, :LAST_KEY, :CREATED DO
  BEGIN
    SEEN = SEEN + 1;
    IF (CREATED < CUTOFF) THEN DELETE FROM ` + KeyTable + ` WHERE SCOPE = :LAST_SCOPE AND IDEM_KEY = :LAST_KEY;
  END
  IF (SEEN < BATCH) THEN
    FOR SELECT SCOPE, IDEM_KEY, CREATED_AT FROM ` + KeyTable + ` WHERE SCOPE > :FROM_SCOPE
        ORDER BY SCOPE, IDEM_KEY ROWS :BATCH - :SEEN INTO :LAST_SCOPE, :LAST_KEY, :CREATED DO
    BEGIN
      SEEN = SEEN + 1;
      IF (CREATED < CUTOFF) THEN DELETE FROM ` + KeyTable + ` WHERE SCOPE = :LAST_SCOPE AND IDEM_KEY = :LAST_KEY;
    END
  SUSPEND;
END`
)
