package firebirdsql

import (
	"context"
	"database/sql/driver"
	"net"
)

// DialFunc opens the network connection to a Firebird server, as
// net.Dialer's DialContext does.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// NewConnector returns a connector for dsn (as sql.Open takes it) whose
// connections are opened with dial instead of a net.Dialer: to reach the
// server through a tunnel or a proxy, with socket options of the caller's
// (TCP keepalive, say), or through a wrapper that observes the traffic. A
// nil dial is net.Dialer's. Use it with sql.OpenDB.
//
// The driver speaks on the connection dial returns until the driver's
// connection is closed. Closing it from outside ends the attachment as a
// lost network would: the server rolls back its transactions.
func NewConnector(dsn string, dial DialFunc) (driver.Connector, error) {
	d, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	d.dial = dial
	return &firebirdConnector{dsn: d}, nil
}
