package firebird

import (
	"context"
	"errors"
	"regexp"

	"github.com/nakagami/firebirdsql"

	"github.com/erp-gateway/gateway/shared/catalog"
)

// block runs, by run, an EXECUTE BLOCK that write writes from the
// signatures of procedures (upper case), as this connection's attachment
// sees them: Firebird keeps a procedure's definition per attachment, so the
// signatures are read once per connection (one round trip, the first time)
// and the block kept under name for the connection's life. A kept block
// that no longer prepares (its procedures changed) is written afresh once.
// A failure keeps the position in the block the server adds (unblock).
func (s *Session) block(ctx context.Context, name string, procedures []string, write func(map[string]catalog.Procedure) block, run func(block) error) error {
	for fresh := false; ; fresh = true {
		b, cached := s.conn.blocks[name]
		if !cached {
			// Reading the signatures is part of preparing: a failure is
			// not the procedures' answer.
			s.at.Store(int32(preparing))
			sigs, commitTrigger, err := signatures(ctx, s.each, procedures)
			if err != nil {
				s.at.Store(int32(preparing)) // whatever phase the reading left
				return err
			}
			if len(sigs) > 0 {
				// As the database has its triggers now; the attachment runs
				// them as they were when it attached, and the version check
				// (versionQuery counts RDB$TRIGGERS) retires it within
				// StmtMaxAge of a change.
				s.conn.blindCommit = !commitTrigger
			}
			b = write(sigs)
			if len(s.conn.blocks) >= s.conn.max {
				// As many blocks as statements are kept (documents come in
				// as many shapes as their clients send): any one goes, and
				// is written again when it is needed.
				for k := range s.conn.blocks {
					delete(s.conn.blocks, k)
					break
				}
			}
			s.conn.blocks[name] = b
		}
		err := run(b)
		if err != nil && phase(s.at.Load()) == preparing && cached && !fresh {
			delete(s.conn.blocks, name)
			continue
		}
		return err
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
	// doc lays out a document's block (Session.Document); nil when the
	// document's calls run one by one.
	doc *document
}

// unblock removes from a failure of a block the position in the block
// that the server appends ("At block line: 4, col: 3"), so that a
// procedure's refusal reads exactly as the plain call's does. The block is
// the outermost frame, named last: a position before it is the
// procedure's own (a block it ran by EXECUTE STATEMENT), which the plain
// call names too.
func unblock(err error) error {
	var fb *firebirdsql.FbError
	if !errors.As(err, &fb) {
		return err
	}
	for i := len(fb.GDSCodes) - 1; i >= 0; i-- {
		if fb.GDSCodes[i] == firebirdsql.ISCStackTrace && i < len(fb.Params) && len(fb.Params[i]) > 0 {
			last := len(fb.Params[i]) - 1
			fb.Params[i][last] = dropLastBlockLine(fb.Params[i][last])
			break
		}
	}
	fb.Message = dropLastBlockLine(fb.Message)
	return err
}

// dropLastBlockLine is s without its last "At block line" line.
func dropLastBlockLine(s string) string {
	m := blockLine.FindAllStringIndex(s, -1)
	if m == nil {
		return s
	}
	last := m[len(m)-1]
	return s[:last[0]] + s[last[1]:]
}

var blockLine = regexp.MustCompile(`(?m)\n?^At block line: \d+, col: \d+$`)
