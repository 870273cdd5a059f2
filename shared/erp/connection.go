package erp

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// Connection is how to reach one instance's database: the connection part of the
// instance document (infra/docs/configuration.md#the-instance-document).
type Connection struct {
	Host     string `json:"host"`
	Port     int    `json:"port,omitempty"`
	Database string `json:"database"`
	User     string `json:"user"`
	Password string `json:"password"`
	Role     string `json:"role,omitempty"`
	// Charset is the connection's character set (UTF8), not the database's.
	Charset   string    `json:"charset,omitempty"`
	WireCrypt WireCrypt `json:"wire_crypt,omitempty"`
	// AuthPlugin is the plugin tried first (Srp256); AuthPluginList the
	// plugins the server may pick (Srp256,Srp): Legacy_Auth, which puts a
	// DES hash of the password on the wire, only when listed.
	AuthPlugin     string `json:"auth_plugin,omitempty"`
	AuthPluginList string `json:"auth_plugin_list,omitempty"`
	WireCompress   bool   `json:"wire_compress,omitempty"`
	// Timezone (UTC) is the zone of the connection's session and of the
	// DATE, TIME and TIMESTAMP values read, so that their wall-clock digits
	// never depend on the machine's zone (or fall into its DST gaps).
	Timezone string `json:"timezone,omitempty"`
}

// WireCrypt is the wire-encryption policy: required (the default: the
// connection fails rather than fall back to plain text), enabled (encrypt
// when the server agrees), or disabled. The booleans true and false of
// earlier documents mean enabled and disabled.
type WireCrypt string

// The wire-encryption policies.
const (
	WireCryptRequired WireCrypt = "required"
	WireCryptEnabled  WireCrypt = "enabled"
	WireCryptDisabled WireCrypt = "disabled"
)

// UnmarshalJSON accepts the policy names and the booleans of earlier
// instance documents.
func (w *WireCrypt) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "true":
		*w = WireCryptEnabled
		return nil
	case "false":
		*w = WireCryptDisabled
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		// Kept as it came, for Check to name: an error returned here would
		// reach the document's reader only as "not a valid JSON object".
		*w = WireCrypt(b)
		return nil
	}
	*w = WireCrypt(s)
	return nil
}

var authPlugins = []string{"Srp256", "Srp", "Legacy_Auth"}

// Defaults of the connection settings.
const (
	DefaultPort           = 3050
	DefaultCharset        = "UTF8"
	DefaultAuthPlugin     = "Srp256"
	DefaultAuthPluginList = "Srp256,Srp"
	DefaultTimezone       = "UTC"
)

// Check reports what is missing or malformed, without echoing secrets.
func (c Connection) Check() error {
	var problems []string
	if c.Host == "" {
		problems = append(problems, "host is required")
	} else if !validHost(c.Host) {
		problems = append(problems, "host must be a host name or an IP address, without a port (the port goes in port)")
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
	switch c.WireCrypt {
	case "", WireCryptRequired, WireCryptEnabled, WireCryptDisabled:
	default:
		problems = append(problems, `wire_crypt must be "required", "enabled" or "disabled"`)
	}
	if c.AuthPlugin != "" && !slices.Contains(authPlugins, c.AuthPlugin) {
		problems = append(problems, "auth_plugin must be Srp256, Srp or Legacy_Auth")
	}
	list := c.AuthPlugins()
	for _, p := range list {
		if !slices.Contains(authPlugins, p) {
			problems = append(problems, "auth_plugin_list may hold only Srp256, Srp and Legacy_Auth")
			break
		}
	}
	if first := c.FirstAuthPlugin(); !slices.Contains(list, first) {
		problems = append(problems, "auth_plugin "+first+" is not in auth_plugin_list")
	}
	if c.Timezone != "" {
		// "Local" is whatever zone the machine running us is in: the very
		// dependence the setting is there to remove.
		if _, err := time.LoadLocation(c.Timezone); err != nil || c.Timezone == "Local" {
			problems = append(problems, "timezone must be an IANA zone name such as UTC or America/Bogota")
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// validHost: a host name (letters, digits, '.', '-' and '_', which some
// Windows machines' names hold) or an IP address without a zone. Anything
// else would not survive the driver's URL, whose parse error quotes the
// whole connection string, password included, to whoever prints it.
func validHost(h string) bool {
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Zone() == ""
	}
	if len(h) > 253 || h[0] == '-' || h[0] == '.' {
		return false
	}
	for _, r := range h {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '.' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// CharacterSet is the connection's character set by its upper-case name:
// Firebird takes a name in any case, but the driver decodes text by the
// upper-case one only, and handed a document's "utf8" every VARCHAR back as
// bytes (answered in base64).
func (c Connection) CharacterSet() string { return strings.ToUpper(cmp.Or(c.Charset, DefaultCharset)) }

// FirstAuthPlugin is the plugin tried first.
func (c Connection) FirstAuthPlugin() string { return cmp.Or(c.AuthPlugin, DefaultAuthPlugin) }

// AuthPlugins are the plugins the server may pick.
func (c Connection) AuthPlugins() []string {
	return strings.Split(strings.ReplaceAll(cmp.Or(c.AuthPluginList, DefaultAuthPluginList), " ", ""), ",")
}

// LogValue keeps the password out of every log line.
func (c Connection) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("host", c.Host),
		slog.Int("port", c.Port),
		slog.String("database", c.Database),
		slog.String("user", c.User),
	)
}

// String keeps the password out of %v and %+v.
func (c Connection) String() string {
	return fmt.Sprintf("firebird %s@%s:%d/%s", c.User, c.Host, c.Port, c.Database)
}

// Target is one instance's database: its name, for pools and logs, and how
// to reach it.
type Target struct {
	Instance   string
	Connection Connection
}
