package idempotency

import (
	"fmt"
	"strings"

	"github.com/erp-gateway/gateway/shared/calls"
	"github.com/erp-gateway/gateway/shared/catalog"
)

// A keyed write claims its key, runs its procedure, reads back and keeps
// the answer (kept.go) in the write's own block (the store's write block): the
// claim and the keeping on their own would cost round trips the write
// without a key does not make (infra/docs/measurements.md).

// write is what a keyed write runs.
type write struct {
	calls.Write
	// keep: the block may keep the answer itself: the connection's
	// character set is UTF8, in which the driver reads text as the block
	// writes it.
	keep bool
}

// parts are what the key adds to w's block (the store's write block), from the
// procedures' signatures: the claim before the procedure and, when the
// block keeps the answer, the answer kept as it is read back; the block
// then returns after the answer's columns GATEWAY$KEPT, 1 while the values
// so far fit in the key's row. The claim's five values are its first
// inputs.
func (w write) parts(proc, readBack catalog.Procedure) calls.Parts {
	f := form{cols: calls.Answers(w.ReadBack, proc, readBack)}
	header, keeps := f.header()
	keeps = keeps && w.keep
	var parts calls.Parts
	for i, c := range []string{"SCOPE", "IDEM_KEY", "CLAVE", "REQUEST_HASH", "CREATED_AT"} {
		parts.Inputs = append(parts.Inputs, fmt.Sprintf("GATEWAY$K%d TYPE OF COLUMN %s.%s = ?", i, KeyTable, c))
	}
	claimed := ";\n"
	if keeps {
		parts.Declare = fmt.Sprintf("DECLARE GATEWAY$A VARCHAR(%d) CHARACTER SET OCTETS;\nDECLARE GATEWAY$V VARCHAR(%d) CHARACTER SET OCTETS;\nDECLARE GATEWAY$ROW CHAR(8) CHARACTER SET OCTETS;\n", inlineMax, keptPartMax)
		claimed = " RETURNING RDB$DB_KEY INTO :GATEWAY$ROW;\n"
		parts.After = "  GATEWAY$A = '" + strings.ReplaceAll(header, "'", "''") + "';\n  GATEWAY$KEPT = 1;\n"
		if len(f.cols) > 0 {
			parts.EachRow = f.values()
		}
		parts.End = "  IF (GATEWAY$KEPT = 1) THEN UPDATE " + KeyTable + " SET ANSWER = :GATEWAY$A WHERE RDB$DB_KEY = :GATEWAY$ROW;\n"
		parts.Hidden = []string{"GATEWAY$KEPT SMALLINT"}
		// A row that surely fits is always kept: the block then leaves
		// nothing to run after it.
		parts.KeepsOneRow = len(header)+f.rowMost() <= inlineMax
	}
	parts.Before = "  INSERT INTO " + KeyTable + " (SCOPE, IDEM_KEY, CLAVE, REQUEST_HASH, CREATED_AT) VALUES (:GATEWAY$K0, :GATEWAY$K1, :GATEWAY$K2, :GATEWAY$K3, :GATEWAY$K4)" + claimed
	return parts
}
