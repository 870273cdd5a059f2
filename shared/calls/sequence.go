package calls

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/record"
)

// Sequence is one request's calls and how each went. A single call is a
// sequence of one, answered alone; a batch is answered by an array.
type Sequence struct {
	Steps []Step
	// Single: one call answered alone. A single read runs in the
	// connection's read transaction; a batch of reads in a snapshot.
	Single bool
	// Execute: sent to execute, where a call the database refuses ends the
	// sequence (rolled back); on executequery each read answers on its own.
	Execute bool
	// Dry: run everything, then roll back (Prefer: tx=rollback).
	Dry bool
	// MaxAnswer bounds a batch's whole answer, as Lambda counts it
	// (record.StringSize).
	MaxAnswer int
	// stepByStep: the store cannot run this batch's writes as one
	// statement (Tx.Document), so they run one by one.
	stepByStep bool
}

// Step is one call of a sequence and how it went.
type Step struct {
	Call catalog.Call
	// Out encodes the call's answer (a batch's keep their first row, for
	// references: record.Encoder.KeepFirst).
	Out *record.Encoder
	// Refused is the database's refusal of the call; Unresolved a
	// reference's: what it did not find (1503), or the value it found
	// refused for its parameter as a request's would be; Ran: it ran and
	// succeeded; Started: it was sent to the database.
	Refused      *erp.Exception
	Unresolved   *erp.Error
	Ran, Started bool
}

// Writes reports whether any of the sequence's calls writes.
func (q *Sequence) Writes() bool {
	for _, st := range q.Steps {
		if st.Call.Op.Endpoint == catalog.Execute {
			return true
		}
	}
	return false
}

// Mode is the transaction the sequence runs in: a single read the
// connection's read transaction, any write one of its own, and reads
// together a read-only snapshot, so a read procedure that writes is refused
// in a batch as alone (a rollback would not undo an autonomous
// transaction's write).
func (q *Sequence) Mode() Mode {
	switch {
	case q.Writes():
		return ReadWrite
	case q.Single:
		return ReadOnly
	}
	return Snapshot
}

// Keeper is what exactly-once (package idempotency) adds to a sequence that
// writes: a key claimed first and the answer kept last, inside the
// sequence's own transaction, so the key and the writes commit together or
// not at all.
type Keeper interface {
	// Block is what the key adds to a single write's block (Tx.Write): the
	// claim before the procedure, and the keeping when the block can.
	Block() (name string, parts func(proc, readBack catalog.Procedure) Parts, extra []any)
	// Claim claims the key by a statement of its own: a batch's, first.
	Claim(ctx context.Context, tx Tx) error
	// Claimed is Claim as a block's part, for a document's block
	// (Tx.Document), and the values of its inputs.
	Claimed() (Parts, []any)
	// Keep keeps the answer before the commit, unless the block did (its
	// hidden columns say; nil for a batch).
	Keep(ctx context.Context, tx Tx, hidden []any) error
	// Own reports err as the key's (its claim refused), not the call's.
	Own(err error) bool
}

// Run runs q's calls in one transaction of store's; keeper, when not nil,
// claims its key and keeps its answer in that transaction. It returns
// ErrRollback, the steps saying why, when a write was refused, a reference
// found nothing, the database refused the transaction (its start or its
// commit), or the sequence was a dry run; any other error is the store's, the key's, or a call's over its
// limits, and nothing was committed but for a commit whose outcome is
// unknown.
func Run(ctx context.Context, store Store, t erp.Target, q *Sequence, keeper Keeper) error {
	var out *record.Encoder
	if q.Single {
		out = q.Steps[0].Out // the store resets it before a retry
	}
	err := store.Transact(ctx, t, q.Mode(), out, func(ctx context.Context, tx Tx) error {
		return q.run(ctx, tx, keeper)
	})
	var exc *erp.Exception
	if errors.As(err, &exc) && (keeper == nil || !keeper.Own(err)) {
		// The database refused the transaction rather than a call: its
		// commit, every call run (answered in the last call's place, as
		// a single write's is in its own), or its start, a trigger ON
		// TRANSACTION START (in the place of the call that was to run,
		// the first when none had started).
		i := q.RunningStep()
		switch {
		case exc.Commit:
			i = len(q.Steps) - 1
		case i < 0:
			i = 0
		}
		q.Steps[i].Refused = exc
		return ErrRollback
	}
	return err
}

func (q *Sequence) run(ctx context.Context, tx Tx, keeper Keeper) error {
	for i := range q.Steps { // a retried transaction starts over
		st := &q.Steps[i]
		st.Out.Reset()
		st.Refused, st.Unresolved, st.Ran, st.Started = nil, nil, false, false
	}
	single := q.Single && q.Writes()
	if q.Execute && !q.Single && !q.stepByStep && q.allWrite() {
		err := q.document(ctx, tx, keeper)
		if !errors.Is(err, ErrStepByStep) {
			return err
		}
		q.stepByStep = true
		if errors.Is(err, ErrRunAgain) {
			return err
		}
	}
	if keeper != nil && !single {
		if err := keeper.Claim(ctx, tx); err != nil {
			return err
		}
	}
	var hidden []any
	size := 2 // a batch's brackets
	for i := range q.Steps {
		st := &q.Steps[i]
		call, unresolved := resolve(st.Call, q.Steps)
		if unresolved != nil {
			st.Unresolved = unresolved
			return ErrRollback
		}
		st.Started = true
		var blockKeeper Keeper // the key rides in a single write's block
		if single {
			blockKeeper = keeper
		}
		var err error
		hidden, err = step(ctx, tx, call, st.Out, blockKeeper, single && !q.Dry)
		var exc *erp.Exception
		switch {
		case err == nil:
			st.Ran = true
		case keeper != nil && keeper.Own(err):
			return err
		case !errors.As(err, &exc):
			// The database out of reach or of time, an answer over its
			// limits: the sequence's failure, not the call's answer.
			if q.Single {
				return err
			}
			return fmt.Errorf("call %d of the batch (%s): %w", i, call.Op.Clave, err)
		default:
			st.Refused = exc
			if q.Execute {
				return ErrRollback
			}
		}
		if !q.Single {
			if err := q.grow(&size, st.Out); err != nil {
				return err
			}
		}
	}
	return q.end(ctx, tx, keeper, hidden)
}

// end is what a sequence does once its calls ran: a dry run rolls back, a
// key keeps the answer (hidden: what the block said of it, nil for none).
func (q *Sequence) end(ctx context.Context, tx Tx, keeper Keeper, hidden []any) error {
	if q.Dry {
		return ErrRollback
	}
	if keeper != nil {
		return keeper.Keep(ctx, tx, hidden)
	}
	return nil
}

// allWrite reports whether every call of the sequence writes.
func (q *Sequence) allWrite() bool {
	for _, st := range q.Steps {
		if st.Call.Op.Endpoint != catalog.Execute {
			return false
		}
	}
	return true
}

// document runs a batch of writes as one statement (Tx.Document), the
// keeper's claim first in it, and records how each call went as the calls
// run one by one would; it returns ErrStepByStep when they must run so.
func (q *Sequence) document(ctx context.Context, tx Tx, keeper Keeper) error {
	cs := make([]catalog.Call, len(q.Steps))
	outs := make([]*record.Encoder, len(q.Steps))
	for i, st := range q.Steps {
		cs[i], outs[i] = st.Call, st.Out
	}
	var claim Parts
	var extra []any
	if keeper != nil {
		claim, extra = keeper.Claimed()
	}
	err := tx.Document(ctx, cs, claim, extra, outs)
	var ce *CallError
	switch {
	case errors.Is(err, ErrStepByStep):
		for _, st := range q.Steps {
			st.Out.Reset()
		}
		return err
	case errors.As(err, &ce):
		for i := range ce.Index {
			q.Steps[i].Started, q.Steps[i].Ran = true, true
		}
		st := &q.Steps[ce.Index]
		st.Started = true
		var exc *erp.Exception
		switch {
		case ce.NoRow != nil:
			st.Unresolved = missing(st.Call, *ce.NoRow, "no row")
			return ErrRollback
		case ce.Null != nil:
			// Refused as the reference is when the calls run one by one
			// (the block checks only required parameters).
			if _, refused := st.Call.Op.Params[ce.Null.Param].Referenced(st.Call.Op.Clave, nil, "", false); refused != nil {
				st.Unresolved = refusedReference(*ce.Null, refused)
			} else {
				st.Unresolved = missing(st.Call, *ce.Null, "null")
			}
			return ErrRollback
		case errors.As(ce.Err, &exc):
			st.Refused = exc
			return ErrRollback
		}
		return fmt.Errorf("call %d of the batch (%s): %w", ce.Index, st.Call.Op.Clave, ce.Err)
	case err != nil:
		// Out of reach or of time, no call to name: the batch's failure.
		return err
	}
	size := 2 // the brackets
	for i := range q.Steps {
		q.Steps[i].Started, q.Steps[i].Ran = true, true
		if err := q.grow(&size, q.Steps[i].Out); err != nil {
			return err
		}
	}
	return q.end(ctx, tx, keeper, nil)
}

// grow adds a call's answer (and its comma) to size, a batch's answer so
// far as Lambda counts it (record.StringSize), and refuses a batch whose
// answer passes MaxAnswer.
func (q *Sequence) grow(size *int, out *record.Encoder) error {
	if *size += record.StringSize(out.Finish()) + 1; *size > q.MaxAnswer {
		return fmt.Errorf("the batch's answer: %w", erp.ErrAnswerTooLarge)
	}
	return nil
}

// step runs one call in tx; keeper adds its key to a single write's block,
// and last says the write is its transaction's last statement.
func step(ctx context.Context, tx Tx, call catalog.Call, out *record.Encoder, keeper Keeper, last bool) ([]any, error) {
	op := call.Op
	if op.Endpoint == catalog.ExecuteQuery {
		return nil, tx.Read(ctx, op.Procedure, call.Args, out)
	}
	w := WriteOf(call)
	w.Last = last
	if keeper == nil {
		return tx.Write(ctx, "write", w, nil, nil, out)
	}
	name, parts, extra := keeper.Block()
	return tx.Write(ctx, name, w, parts, extra, out)
}

// resolve is call with its references filled in from the first rows of the
// earlier steps' answers, each checked as its parameter checks a request's
// value (catalog.Param.Referenced), or why one cannot be.
func resolve(call catalog.Call, steps []Step) (catalog.Call, *erp.Error) {
	if len(call.Refs) == 0 {
		return call, nil
	}
	args := append([]any(nil), call.Args...)
	for _, ref := range call.Refs {
		from := steps[ref.From]
		v, kind, ok := from.Out.First(ref.Field)
		if !ok || !from.Ran {
			what := "no column " + ref.Field
			if from.Out.Rows() == 0 || !from.Ran {
				what = "no row"
			}
			return call, missing(call, ref, what)
		}
		answered, notNull := record.Answered(kind, v)
		arg, refused := call.Op.Params[ref.Param].Referenced(call.Op.Clave, v, answered, notNull)
		if refused != nil {
			return call, refusedReference(ref, refused)
		}
		args[ref.Param] = arg
	}
	call.Args = args
	return call, nil
}

// refusedReference is the refusal of a value ref takes, refused by its
// parameter as a request's would be.
func refusedReference(ref catalog.Ref, refused *erp.Error) *erp.Error {
	return erp.Refuse(refused.Code, "%s (it takes %s of the first row of call %d's answer)", refused.Message, ref.Field, ref.From)
}

// missing says what a reference of call's did not find.
func missing(call catalog.Call, ref catalog.Ref, what string) *erp.Error {
	return erp.Refuse(erp.CodeReferenceMissing, "%s takes %s of the first row of call %d's answer, which has %s", call.Op.Params[ref.Param].Name, ref.Field, ref.From, what)
}

// Fingerprint identifies the sequence's request: its single call's, or a
// batch's calls' in order.
func (q *Sequence) Fingerprint() string {
	if q.Single {
		return q.Steps[0].Call.Fingerprint()
	}
	h := sha256.New()
	for _, st := range q.Steps {
		fmt.Fprintf(h, "%s\n", st.Call.Fingerprint())
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Failed is the step a batch failed at (a reference that found nothing, or
// on execute the first refused call), -1 when none did.
func (q *Sequence) Failed() int {
	for i, st := range q.Steps {
		if st.Unresolved != nil || q.Execute && st.Refused != nil {
			return i
		}
	}
	return -1
}

// Running names the call that was running when the sequence failed (started,
// neither run nor refused); "" when none was.
func (q *Sequence) Running() string {
	i := q.RunningStep()
	switch {
	case i < 0:
		return ""
	case q.Single:
		return "CLAVE " + q.Steps[i].Call.Op.Clave
	}
	return fmt.Sprintf("call %d, CLAVE %s", i, q.Steps[i].Call.Op.Clave)
}

// RunningStep is the index of the step Running names, -1 when none.
func (q *Sequence) RunningStep() int {
	for i := len(q.Steps) - 1; i >= 0; i-- {
		if st := q.Steps[i]; st.Started && !st.Ran && st.Refused == nil {
			return i
		}
	}
	return -1
}
