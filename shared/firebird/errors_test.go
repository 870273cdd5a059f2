package firebird

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"testing"

	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/nakagami/firebirdsql"
)

func TestClassifyByHowFarTheCallGot(t *testing.T) {
	fb := func(codes ...int) error {
		return &firebirdsql.FbError{GDSCodes: codes, Message: "I/O error during \"open\" for file \"/data/erp.fdb\"\n"}
	}
	userException := &firebirdsql.FbError{GDSCodes: []int{firebirdsql.ISCExcept, 335544382, 335544382, 335544842},
		Params: [][]string{{"16"}, {"REST_ERROR"}, {"***X NO EXISTE***"}, {"At procedure 'P' line: 1, col: 2"}}}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		at   phase
		err  error
		want error // nil: an *erp.Exception
	}{
		{"user exception while executing", context.Background(), executing, userException, nil},
		{"unique key while executing", context.Background(), executing, fb(firebirdsql.ISCUniqueKeyViolation), nil},
		{"wrong file while connecting", context.Background(), connecting, fb(firebirdsql.ISCIoError), erp.ErrUnavailable},
		{"any status while connecting", context.Background(), connecting, fb(335544472 + 1000), erp.ErrUnavailable},
		{"missing procedure while preparing", context.Background(), preparing, fb(firebirdsql.ISCDsqlError), erp.ErrCannotRun},
		// The transaction a prepare began refused by a database trigger
		// (ON TRANSACTION START), as when it begins with the execute.
		{"a trigger's exception while preparing", context.Background(), preparing, userException, nil},
		{"a trigger's error while preparing", context.Background(), preparing, fb(335544361, firebirdsql.ISCStackTrace), nil},
		{"wrong password", context.Background(), connecting, fb(firebirdsql.ISCLogin), erp.ErrCredentials},
		{"connection lost while executing", context.Background(), executing, io.EOF, erp.ErrUnavailable},
		{"deadline while executing", done, executing, driver.ErrBadConn, erp.ErrUnavailable},
		{"connection lost while committing", context.Background(), committing, io.EOF, erp.ErrOutcomeUnknown},
		{"deadline while committing", done, committing, driver.ErrBadConn, erp.ErrOutcomeUnknown},
		{"shutdown while committing", context.Background(), committing, fb(firebirdsql.ISCAttShutdown), erp.ErrOutcomeUnknown},
		{"refusal of the commit", context.Background(), committing, fb(firebirdsql.ISCUniqueKeyViolation), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := classify(tt.ctx, tt.at, tt.err)
			var exc *erp.Exception
			switch {
			case tt.want == nil && !errors.As(got, &exc):
				t.Fatalf("got %v, want the database's exception", got)
			case tt.want != nil && !errors.Is(got, tt.want):
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}
