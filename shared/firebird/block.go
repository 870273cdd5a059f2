package firebird

import (
	"context"
	"database/sql/driver"
	"errors"
	"regexp"

	"github.com/nakagami/firebirdsql"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/record"
)

// block runs an EXECUTE BLOCK that write writes from the signatures of
// procedures (upper case), as this connection's attachment sees them:
// Firebird keeps a procedure's definition per attachment, so the
// signatures are read once per connection (one round trip, the first time)
// and the block kept under name for the connection's life. A kept block
// that no longer prepares (its procedures changed) is written afresh once.
// Its rows are encoded into out as Query does, and the hidden columns of
// the last row returned; when commit says so of the block, the
// transaction's commit goes with it. A failure reads as the plain
// statements' would, without the position in the block the server adds.
func (s *Session) block(ctx context.Context, name string, procedures []string, write func(map[string]catalog.Procedure) block, args []any, out *record.Encoder, commit func(block) bool) (last []driver.Value, err error) {
	for fresh := false; ; fresh = true {
		b, cached := s.conn.blocks[name]
		if !cached {
			// Reading the signatures is part of preparing: a failure is
			// not the procedures' answer.
			s.at.Store(int32(preparing))
			sigs, err := signatures(ctx, s.each, procedures)
			if err != nil {
				s.at.Store(int32(preparing)) // whatever phase the reading left
				return nil, err
			}
			b = write(sigs)
			s.conn.blocks[name] = b
		}
		last, err = s.Query(ctx, b.text, args, out, b.hidden, commit != nil && commit(b))
		if err != nil && phase(s.at.Load()) == preparing && cached && !fresh {
			delete(s.conn.blocks, name)
			continue
		}
		return last, unblock(err)
	}
}

// block is a block's text, and what it answers.
type block struct {
	text   string
	hidden int // how many of its last columns are hidden
	// oneRow: it answers at most one row, after all its work, and nothing
	// of its answer needs its transaction open (no BLOB): a commit may go
	// with it. row is the most bytes that row takes, names included.
	oneRow bool
	row    int
}

// unblock removes from a failure of a block the position in the block
// that the server appends ("At block line: 4, col: 3"), so that a
// procedure's refusal reads exactly as the plain call's does.
func unblock(err error) error {
	var fb *firebirdsql.FbError
	if !errors.As(err, &fb) {
		return err
	}
	for i, c := range fb.GDSCodes {
		if c != firebirdsql.ISCStackTrace || i >= len(fb.Params) {
			continue
		}
		for j, p := range fb.Params[i] {
			fb.Params[i][j] = blockLine.ReplaceAllString(p, "")
		}
	}
	fb.Message = blockLine.ReplaceAllString(fb.Message, "")
	return err
}

var blockLine = regexp.MustCompile(`(?m)\n?^At block line: \d+, col: \d+$`)
