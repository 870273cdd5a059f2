package idempotency

import (
	"fmt"
	"strings"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/firebird"
)

// A keyed write claims its key, runs its procedure, reads back and keeps
// the answer (kept.go) in the write's own block (firebird.WriteBlock): the
// claim and the keeping on their own would cost round trips the write
// without a key does not make (README, "Measurements").

// write is what a keyed write runs.
type write struct {
	procedure, readBack string
	args, readArgs      []any
	// keep: the block may keep the answer itself: the connection's
	// character set is UTF8, in which the driver reads text as the block
	// writes it.
	keep bool
}

// block writes the block of w from the procedures' signatures: the write's,
// with the claim before the procedure and, when keeps, the answer kept as
// it is read back; the block then returns after the read-back's columns
// GATEWAY$KEPT, 1 while the values so far fit in the key's row.
func (w write) block(proc, readBack catalog.Procedure) (text string, keeps bool) {
	f := form{cols: readBack.Outputs}
	header, keeps := f.header()
	keeps = keeps && w.keep
	var parts firebird.WriteParts
	for i, c := range []string{"SCOPE", "IDEM_KEY", "CLAVE", "REQUEST_HASH", "CREATED_AT"} {
		parts.Inputs = append(parts.Inputs, fmt.Sprintf("GATEWAY$K%d TYPE OF COLUMN %s.%s = ?", i, KeyTable, c))
	}
	claimed := ";\n"
	if keeps {
		parts.Declare = fmt.Sprintf("DECLARE GATEWAY$A VARCHAR(%d) CHARACTER SET OCTETS;\nDECLARE GATEWAY$V VARCHAR(%d) CHARACTER SET OCTETS;\nDECLARE GATEWAY$ROW CHAR(8) CHARACTER SET OCTETS;\n", inlineMax, keptPartMax)
		claimed = " RETURNING RDB$DB_KEY INTO :GATEWAY$ROW;\n"
		parts.After = "  GATEWAY$A = '" + strings.ReplaceAll(header, "'", "''") + "';\n  GATEWAY$KEPT = 1;\n"
		if len(readBack.Outputs) > 0 {
			parts.EachRow = f.values()
		}
		parts.End = "  IF (GATEWAY$KEPT = 1) THEN UPDATE " + KeyTable + " SET ANSWER = :GATEWAY$A WHERE RDB$DB_KEY = :GATEWAY$ROW;\n"
		parts.Hidden = []string{"GATEWAY$KEPT SMALLINT"}
	}
	parts.Before = "  INSERT INTO " + KeyTable + " (SCOPE, IDEM_KEY, CLAVE, REQUEST_HASH, CREATED_AT) VALUES (:GATEWAY$K0, :GATEWAY$K1, :GATEWAY$K2, :GATEWAY$K3, :GATEWAY$K4)" + claimed
	text, _ = firebird.WriteBlock(w.procedure, len(w.args), w.readBack, len(w.readArgs), proc, readBack, parts)
	return text, keeps
}
