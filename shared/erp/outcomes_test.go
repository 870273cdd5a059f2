package erp

import (
	"errors"
	"fmt"
	"testing"
)

// TestFaults: each fault is answered by a code of the table, tells the
// client what to do, and is found through the wrapping an adapter adds.
func TestFaults(t *testing.T) {
	tests := []struct {
		fault *Fault
		down  bool
		of    *Fault
	}{
		{ErrUnavailable, true, nil},
		{ErrCredentials, false, ErrUnavailable},
		{ErrCannotRun, false, ErrUnavailable},
		{ErrOutcomeUnknown, true, nil},
		{ErrKeyReused, false, nil},
		{ErrKeyInProgress, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.fault.Error(), func(t *testing.T) {
			if tt.fault.Code.Info().Meaning == CodeInternal.Info().Meaning || tt.fault.Advice == "" || tt.fault.Down != tt.down {
				t.Fatalf("%+v", tt.fault)
			}
			err := fmt.Errorf("%w: %w", tt.fault, errors.New("the cause"))
			if FaultOf(err) != tt.fault || (tt.of != nil && !errors.Is(err, tt.of)) {
				t.Fatalf("FaultOf %v, errors.Is %v", FaultOf(err), tt.of)
			}
		})
	}
	if FaultOf(errors.New("plain")) != nil {
		t.Fatal("a plain error has a fault")
	}
}
