package firebird

import (
	"bufio"
	"net"
	"testing"
)

// TestCountTripsLeavesOtherLayoutsAlone: a driver connection that is not
// laid out as counted is left as it is, and counts nothing.
func TestCountTripsLeavesOtherLayoutsAlone(t *testing.T) {
	type channel struct {
		conn   net.Conn
		reader *bufio.Reader
	}
	type protocol struct{ conn channel }
	type driverConn struct{ wp *protocol }
	for _, tc := range []struct {
		name string
		dc   any
	}{
		{"nil", nil},
		{"not a pointer", driverConn{}},
		{"no wire protocol", &driverConn{}},
		{"no writer", &driverConn{wp: &protocol{conn: channel{conn: &net.TCPConn{}, reader: bufio.NewReader(nil)}}}},
		{"another struct", &struct{ wp int }{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if w := countTrips(tc.dc); w != nil || w.Trips() != 0 {
				t.Fatalf("counted %v", w)
			}
		})
	}
}
