// Package firebird runs the catalog's stored procedures on an instance's
// Firebird database through github.com/nakagami/firebirdsql: a pool per
// instance, bound parameters, rows turned into ordered records and driver
// errors into database exceptions. It knows nothing of HTTP.
package firebird

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Config is how to reach one instance's database: the connection part of the
// instance document (README, "The instance document").
type Config struct {
	Host       string `json:"host"`
	Port       int    `json:"port,omitempty"`
	Database   string `json:"database"`
	User       string `json:"user"`
	Password   string `json:"password"`
	Role       string `json:"role,omitempty"`
	Charset    string `json:"charset,omitempty"`
	WireCrypt  *bool  `json:"wire_crypt,omitempty"`
	AuthPlugin string `json:"auth_plugin,omitempty"`
}

// Check reports what is missing or malformed, without echoing secrets.
func (c Config) Check() error {
	var problems []string
	if c.Host == "" {
		problems = append(problems, "host is required")
	}
	if c.Database == "" {
		problems = append(problems, "database is required")
	}
	if c.User == "" {
		problems = append(problems, "user is required")
	}
	if c.Port < 0 || c.Port > 65535 {
		problems = append(problems, "port is out of range")
	}
	switch c.AuthPlugin {
	case "", "Srp256", "Srp", "Legacy_Auth":
	default:
		problems = append(problems, "auth_plugin must be Srp256, Srp or Legacy_Auth")
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// DSN is the driver's connection string. It holds the password: never log
// it, never put it in an error.
func (c Config) DSN() string {
	port := c.Port
	if port == 0 {
		port = 3050
	}
	charset := c.Charset
	if charset == "" {
		charset = "UTF8"
	}
	q := url.Values{}
	q.Set("charset", charset)
	if c.Role != "" {
		q.Set("role", c.Role)
	}
	if c.WireCrypt != nil {
		q.Set("wire_crypt", strconv.FormatBool(*c.WireCrypt))
	}
	if c.AuthPlugin != "" {
		q.Set("auth_plugin_name", c.AuthPlugin)
	}
	u := url.URL{
		Scheme:   "firebird",
		User:     url.UserPassword(c.User, c.Password),
		Host:     net.JoinHostPort(c.Host, strconv.Itoa(port)),
		Path:     "/" + c.Database,
		RawQuery: q.Encode(),
	}
	return u.String()
}

// LogValue keeps the password out of every log line.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("host", c.Host),
		slog.Int("port", c.Port),
		slog.String("database", c.Database),
		slog.String("user", c.User),
	)
}

// String keeps the password out of %v and %+v.
func (c Config) String() string {
	return fmt.Sprintf("firebird %s@%s:%d/%s", c.User, c.Host, c.Port, c.Database)
}
