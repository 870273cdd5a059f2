// Package firebird runs the catalog's stored procedures on an instance's
// Firebird database through github.com/nakagami/firebirdsql: a pool per
// instance, bound parameters, rows turned into ordered records and driver
// errors into the domain's outcomes (package erp). It knows nothing of HTTP.
package firebird

import (
	"cmp"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/erp-gateway/gateway/shared/erp"
)

// DSN is c as the driver's connection string. It holds the password: never log
// it, never put it in an error.
//
// Every connection also asks the driver to close the socket of a statement
// that op_cancel did not stop within hardDropGrace after its deadline (a
// frozen server, a lock wait): the deadline then holds.
func DSN(c erp.Connection) string {
	q := url.Values{}
	q.Set("charset", c.CharacterSet())
	if c.Role != "" {
		q.Set("role", c.Role)
	}
	q.Set("wire_crypt", string(cmp.Or(c.WireCrypt, erp.WireCryptRequired)))
	q.Set("auth_plugin_name", c.FirstAuthPlugin())
	q.Set("auth_plugin_list", strings.Join(c.AuthPlugins(), ","))
	q.Set("wire_compress", strconv.FormatBool(c.WireCompress))
	q.Set("timezone", cmp.Or(c.Timezone, erp.DefaultTimezone))
	q.Set("cancel_hard_drop", "true")
	q.Set("cancel_hard_drop_grace", strconv.Itoa(int(hardDropGrace/time.Millisecond)))
	u := url.URL{
		Scheme:   "firebird",
		User:     url.UserPassword(c.User, c.Password),
		Host:     net.JoinHostPort(c.Host, strconv.Itoa(cmp.Or(c.Port, erp.DefaultPort))),
		Path:     "/" + c.Database,
		RawQuery: q.Encode(),
	}
	return u.String()
}
