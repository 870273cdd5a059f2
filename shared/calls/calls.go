// Package calls runs the calls of one request, a single call or a batch, in
// one transaction of an instance's database: references between calls, a
// dry run, the first refusal of a write ending the sequence, an answer's
// bound. It is domain logic over an interface it defines, Store (what the
// database adapter offers: transactions and, in them, statements: package
// firebird), and it knows nothing of HTTP or of the driver. Exactly-once
// (package idempotency) wraps it once, through a Keeper.
package calls

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/record"
)

// Mode is the transaction a body runs in.
type Mode int

const (
	// ReadOnly is a read's transaction, READ COMMITTED READ ONLY, ended
	// with the connection's next request: Firebird 3 starts it
	// pre-committed.
	ReadOnly Mode = iota
	// ReadWrite is READ COMMITTED WAIT, of its own: concurrent inserts of
	// one key wait for each other (a lock timeout long) and get the
	// database's answer.
	ReadWrite
	// NoWait is READ COMMITTED NO WAIT, of its own: a lock held is an
	// error, never a wait.
	NoWait
	// Snapshot is SNAPSHOT READ ONLY, of its own, always rolled back: every
	// statement sees the moment it began, and none writes, as a single read
	// cannot (a rollback would not undo an autonomous transaction's write).
	Snapshot
)

// ErrRollback, returned by a body (wrapped or not), rolls its transaction
// back and is returned as it is, never retried: the body's own verdict,
// which its caller reads from what the body recorded.
var ErrRollback = errors.New("calls: rolled back by its body")

// ErrStepByStep, from Tx.Document: run the calls one statement each.
var ErrStepByStep = errors.New("calls: the calls run one statement each")

// ErrRunAgain, returned by a body (wrapped), has the store roll its
// transaction back and run the body once more: a statement learnt that it
// must run otherwise, after running part of its work.
var ErrRunAgain = errors.New("calls: the transaction runs again")

// CallError is the failure of one call of a Document: Err, or a reference
// of the call's that found no row in the answer it names (NoRow), or NULL
// for a required parameter (Null).
type CallError struct {
	Index int
	NoRow *catalog.Ref
	Null  *catalog.Ref
	Err   error
}

func (e *CallError) Error() string {
	switch {
	case e.NoRow != nil:
		return fmt.Sprintf("call %d: a reference to call %d found no row", e.Index, e.NoRow.From)
	case e.Null != nil:
		return fmt.Sprintf("call %d: a reference to call %d found null for a required parameter", e.Index, e.Null.From)
	}
	return fmt.Sprintf("call %d: %v", e.Index, e.Err)
}

func (e *CallError) Unwrap() error { return e.Err }

// Store is an instance's database as the sequence uses it; *firebird.Pools
// is the real one.
type Store interface {
	// Transact runs body in a transaction of mode, committed when body
	// returns nil (a ReadOnly one is kept, a Snapshot one rolled back), and
	// returns what failed as erp's outcomes. out, when not nil, is the
	// answer body encodes, reset before a retry.
	Transact(ctx context.Context, t erp.Target, mode Mode, out *record.Encoder, body func(context.Context, Tx) error) error
	// Hunt cancels the orphans a cut link left of ours, and reports how
	// many the latest hunt of the instance cancelled.
	Hunt(ctx context.Context, t erp.Target) int
	// Ping makes one round trip to the database, connecting first when
	// it must: a breaker's probe, failed once the database has been
	// silent for silence while it waits.
	Ping(ctx context.Context, t erp.Target, silence time.Duration) error
	// Describe reads what the database says of the named procedures and
	// what keeps the gateway from using tables (and from what the store
	// itself needs: catalog.OrphansFinding), in one reading.
	Describe(ctx context.Context, t erp.Target, procedures []string, tables ...catalog.Table) (map[string]catalog.Procedure, []catalog.Finding, error)
}

// Tx is what a transaction offers its body. A statement the database
// refuses (a procedure's exception, a constraint, a lock conflict) fails
// with an *erp.Exception; one that gave up waiting for a lock with
// erp.ErrLocked; anything else with what the store's Transact classifies.
type Tx interface {
	// Read runs a selectable procedure and encodes its rows into out.
	Read(ctx context.Context, procedure string, args []any, out *record.Encoder) error
	// Write runs w as one block, with what parts adds (nil: nothing), the
	// values of parts' inputs first (extra), and encodes its answer into
	// out. It returns the hidden columns (Parts.Hidden) of the last row.
	// name tells blocks apart whose parts differ. When w.Last (and parts
	// keep a one-row answer: Parts.KeepsOneRow), the store may send the
	// transaction's commit with the block: its commit then reports that.
	Write(ctx context.Context, name string, w Write, parts func(proc, readBack catalog.Procedure) Parts, extra []any, out *record.Encoder) (hidden []any, err error)
	// Document runs calls, every one a write, as one statement in which
	// the database passes the references between them, with what claim
	// adds before the first (its inputs' values extra), and encodes each
	// call's answer into its out. It returns ErrStepByStep when it cannot
	// run them so: alone, having run nothing; with ErrRunAgain, after a
	// failure it cannot lay on one call. A failure of one call is a
	// *CallError; claim's, or anything else, fails as the other
	// statements do.
	Document(ctx context.Context, calls []catalog.Call, claim Parts, extra []any, outs []*record.Encoder) error
	// Exec runs a statement that returns no rows. last: nothing runs
	// after it in its transaction but the commit, which the store may send
	// with it (its commit then reports that).
	Exec(ctx context.Context, query string, args []any, last bool) error
	// Row runs query and returns its first row, nil when there is none.
	Row(ctx context.Context, query string, args []any) ([]any, error)
	// Each hands each row of query to each, which may keep none of it.
	Each(ctx context.Context, query string, args []any, each func([]any) error) error
}

// Write is one write: a procedure and its arguments, answered by the rows
// of ReadBack with ReadArgs or, without a ReadBack, by the procedure's own
// outputs as one row.
type Write struct {
	Procedure string
	Args      []any
	ReadBack  string
	ReadArgs  []any
	// Last: nothing runs after it in its transaction but the commit.
	Last bool
}

// WriteOf is the write of a call to a write operation.
func WriteOf(call catalog.Call) Write {
	w := Write{Procedure: call.Op.Procedure, Args: call.Args}
	if rb := call.Op.ReadBack; rb != nil {
		w.ReadBack, w.ReadArgs = rb.Procedure, call.ReadBackArgs()
	}
	return w
}

// Parts is what a layer adds to a write's block (the key's claim and
// keeping). Its names must start GATEWAY$, which no procedure's column is
// expected to.
type Parts struct {
	// Inputs are declared before the procedure's arguments, each
	// "NAME TYPE = ?"; their values come first.
	Inputs []string
	// Declare holds declarations of variables.
	Declare string
	// Before runs before the procedure, After after it (before the rows
	// of a selectable procedure that answers by its own: it runs as they
	// are read), EachRow for each row of the answer before it is
	// returned, and End after the rows.
	Before, After, EachRow, End string
	// Hidden are columns returned after the answer's, each "NAME TYPE";
	// they are not the answer's.
	Hidden []string
	// KeepsOneRow: with an answer of at most one row, the block does all
	// the layer adds, and nothing of the layer runs after it (the
	// Keeper's Keep runs no statement).
	KeepsOneRow bool
}

// Answers are the columns a write answers with: its read-back's, or
// without one the procedure's outputs.
func Answers(readBack string, proc, rb catalog.Procedure) []catalog.DBParam {
	if readBack == "" {
		return proc.Outputs
	}
	return rb.Outputs
}

// Quote writes a name as SQL reaches it: always between double quotes,
// which keep its case and let it be a reserved word (a column a procedure
// declared as "DATE" or "VALUE" is stored as DATE, which SQL would read
// as the keyword); an upper-case name quoted is the name unquoted.
func Quote(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// QuoteProcedure writes a catalog's procedure name as SQL reaches it: the
// catalog holds plain identifiers, which Firebird keeps in upper case, and
// quoted a reserved word names a procedure too (one the ERP created as
// "VALUE": unquoted, SQL reads it as the keyword and cannot prepare).
func QuoteProcedure(name string) string { return Quote(strings.ToUpper(name)) }
