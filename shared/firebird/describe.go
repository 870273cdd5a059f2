package firebird

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/tally"
)

// Describe reads from the system tables what the database says of the named
// procedures, as the target's user sees them, keyed by the names given.
func Describe(ctx context.Context, cfg erp.Connection, names []string) (map[string]catalog.Procedure, error) {
	var out map[string]catalog.Procedure
	err := reading(ctx, cfg, DefaultLongestCall+orphanMargin, func(tx *sql.Tx) (err error) {
		out, err = describeAll(ctx, tx, names)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// describeAll describes the named procedures, keyed by the names given, a
// query for each kind of fact rather than for each procedure: each query
// is round trips over a WAN, and the health check must answer within its
// deadline there (internals.md#round-trips).
func describeAll(ctx context.Context, tx *sql.Tx, names []string) (map[string]catalog.Procedure, error) {
	out := make(map[string]catalog.Procedure, len(names))
	// Firebird 3 takes at most 1,500 values in an IN list.
	for chunk := range slices.Chunk(names, 1000) {
		if err := describeSome(ctx, tx, chunk, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// describeSome is describeAll for at most an IN list's names, into out.
func describeSome(ctx context.Context, tx *sql.Tx, names []string, out map[string]catalog.Procedure) error {
	// In upper case, as the gateway writes them into SQL
	// (calls.QuoteProcedure): a catalog's plain identifier names what
	// Firebird keeps so.
	upper := make([]string, len(names))
	for i, n := range names {
		upper[i] = strings.ToUpper(n)
	}
	q := txQuerier(tx)
	procs, err := heads(ctx, q, upper)
	if err != nil {
		return fmt.Errorf("describing procedures: %w", err)
	}
	sigs, _, err := signatures(ctx, q, upper)
	if err != nil {
		return fmt.Errorf("describing parameters: %w", err)
	}
	ungranted, err := ungrantedExceptions(ctx, q, upper)
	if err != nil {
		return fmt.Errorf("describing exceptions: %w", err)
	}
	for i, name := range names {
		p := procs[upper[i]]
		p.Name = upper[i]
		if p.Exists {
			p.Inputs, p.Outputs = sigs[p.Name].Inputs, sigs[p.Name].Outputs
			p.UngrantedExceptions = ungranted[p.Name]
		}
		out[name] = p
	}
	return nil
}

// DescribeMatching describes the procedures whose names match a SQL LIKE
// pattern, sorted by name (make catalog-from-db). The pattern is matched in
// upper case: a catalog's procedure names are plain identifiers, which
// Firebird keeps in upper case, so `rest_%` means what it would in a
// statement; a procedure only a quoted name reaches (lower case in the
// database) is left out, as one the gateway cannot call (and one whose
// upper-case name is no plain identifier, the drafter leaves out with a
// note). Names are compared trimmed: the system
// table pads them with blanks (CHAR), which an exact name would not match.
// A backslash escapes _ and %: REST\_% does not match RESTAR_SALDO. It
// also returns the database's SQL dialect, which says what a type means
// (in dialect 1 every DATE is a TIMESTAMP).
func DescribeMatching(ctx context.Context, cfg erp.Connection, pattern string) (_ []catalog.Procedure, dialect int, err error) {
	var out []catalog.Procedure
	err = reading(ctx, cfg, DefaultLongestCall+orphanMargin, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, "SELECT MON$SQL_DIALECT FROM MON$DATABASE").Scan(&dialect); err != nil {
			return fmt.Errorf("reading the SQL dialect: %w", err)
		}
		names, err := matching(ctx, tx, strings.ToUpper(pattern))
		if err != nil {
			return fmt.Errorf("listing procedures: %w", err)
		}
		procs, err := describeAll(ctx, tx, names)
		if err != nil {
			return err
		}
		for _, name := range names {
			out = append(out, procs[name])
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return out, dialect, nil
}

// reading runs read in a read-only transaction on a connection of its own,
// closed before it returns: descriptions are rare (the doctor, the health
// check, after a call the database could not run, the catalog tools) and
// must not disturb the pools' connections and their prepared statements. Its
// attachment carries bound in its marker, as the pools' do.
func reading(ctx context.Context, cfg erp.Connection, bound time.Duration, read func(*sql.Tx) error) error {
	c := &readingConnector{dsn: attachDSN(cfg, bound, newConnID())}
	db := sql.OpenDB(c)
	// The driver's close waits on the server (up to its own 10 s): never
	// in the caller's time.
	defer func() { go db.Close() }()
	db.SetMaxOpenConns(1)
	err := func() error {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted, ReadOnly: true})
		if err != nil {
			return err
		}
		tally.Add(ctx, tally.ConnectionOpens)
		w := c.wire.Load()
		defer func() { tally.AddN(ctx, tally.RoundTrips, w.Trips()) }()
		defer w.watch(ctx)()
		defer tx.Rollback() //nolint:errcheck // read-only: nothing to keep
		return read(tx)
	}()
	if err != nil {
		return classify(ctx, connecting, err)
	}
	return nil
}

// readingConnector attaches reading's one connection through a wire of
// ours, which it keeps for reading to watch.
type readingConnector struct {
	dsn  string
	wire atomic.Pointer[wire]
}

func (c *readingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, w, err := connect(ctx, c.dsn)
	if err != nil {
		return nil, err
	}
	c.wire.Store(w)
	return dc, nil
}

func (c *readingConnector) Driver() driver.Driver { return errNoDriver{} }

func matching(ctx context.Context, tx *sql.Tx, pattern string) ([]string, error) {
	return column(ctx, tx, `
		SELECT TRIM(p.RDB$PROCEDURE_NAME) FROM RDB$PROCEDURES p
		WHERE TRIM(p.RDB$PROCEDURE_NAME) LIKE ? ESCAPE '\' AND COALESCE(p.RDB$SYSTEM_FLAG, 0) = 0 AND p.RDB$PACKAGE_NAME IS NULL
		  AND p.RDB$PROCEDURE_NAME = UPPER(p.RDB$PROCEDURE_NAME)
		ORDER BY 1`, pattern)
}

// column runs a query of one text column and returns its values.
func column(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]string, error) {
	tally.Add(ctx, tally.StatementPrepares) // database/sql prepares each query
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// heads says, of each named procedure that exists, whether it is
// selectable and whether the user may execute it (granted to the user,
// PUBLIC or the user's role, or the user owns it).
func heads(ctx context.Context, q querier, names []string) (map[string]catalog.Procedure, error) {
	out := make(map[string]catalog.Procedure, len(names))
	err := q(ctx, `
		SELECT TRIM(p.RDB$PROCEDURE_NAME), COALESCE(p.RDB$PROCEDURE_TYPE, 0),
			TRIM(p.RDB$OWNER_NAME) = TRIM(CURRENT_USER) OR CURRENT_USER = 'SYSDBA' OR EXISTS (
				SELECT 1 FROM RDB$USER_PRIVILEGES u
				WHERE u.RDB$RELATION_NAME = p.RDB$PROCEDURE_NAME AND u.RDB$OBJECT_TYPE = 5 AND u.RDB$PRIVILEGE = 'X'
				  AND (u.RDB$USER = CURRENT_USER OR u.RDB$USER = 'PUBLIC' OR u.RDB$USER = CURRENT_ROLE))
		FROM RDB$PROCEDURES p
		WHERE p.RDB$PROCEDURE_NAME IN `+placeholders(len(names))+` AND p.RDB$PACKAGE_NAME IS NULL`, anys(names), func(v []driver.Value) error {
		name, _ := v[0].(string)
		typ, _ := v[1].(int64)
		executable, _ := v[2].(bool)
		out[name] = catalog.Procedure{Name: name, Exists: true, Selectable: typ == 1, Executable: executable}
		return nil
	})
	return out, err
}

// anys is names as a query's arguments.
func anys(names []string) []any {
	args := make([]any, len(names))
	for i, n := range names {
		args[i] = n
	}
	return args
}

// ungrantedExceptions lists, per named procedure, the exceptions it raises
// without USAGE on them granted to it, the user or PUBLIC.
func ungrantedExceptions(ctx context.Context, q querier, names []string) (map[string][]string, error) {
	out := make(map[string][]string)
	err := q(ctx, `
		SELECT DISTINCT TRIM(d.RDB$DEPENDENT_NAME), TRIM(d.RDB$DEPENDED_ON_NAME) FROM RDB$DEPENDENCIES d
		WHERE d.RDB$DEPENDENT_NAME IN `+placeholders(len(names))+` AND d.RDB$DEPENDENT_TYPE = 5 AND d.RDB$DEPENDED_ON_TYPE = 7
		  AND NOT EXISTS (SELECT 1 FROM RDB$USER_PRIVILEGES u
		    WHERE u.RDB$RELATION_NAME = d.RDB$DEPENDED_ON_NAME AND u.RDB$PRIVILEGE = 'G'
		      AND (u.RDB$USER = d.RDB$DEPENDENT_NAME OR u.RDB$USER = CURRENT_USER OR u.RDB$USER = 'PUBLIC'))
		ORDER BY 1, 2`, anys(names), func(v []driver.Value) error {
		proc, _ := v[0].(string)
		exc, _ := v[1].(string)
		out[proc] = append(out[proc], exc)
		return nil
	})
	return out, err
}

// Describe is the package's Describe for an instance the pools serve, on
// one attachment with what keeps each of tables from serving (checkTable),
// the pools' own need (OrphanGrant), and a user of the gateway's own
// (checkUser).
func (p *Pools) Describe(ctx context.Context, t erp.Target, names []string, tables ...catalog.Table) (procs map[string]catalog.Procedure, problems []catalog.Finding, err error) {
	tables = append([]catalog.Table{OrphanGrant()}, tables...)
	err = reading(ctx, t.Connection, p.bound(), func(tx *sql.Tx) error {
		if procs, err = describeAll(ctx, tx, names); err != nil {
			return err
		}
		for _, table := range tables {
			found, err := checkTable(ctx, tx, table)
			if err != nil {
				return err
			}
			problems = append(problems, found...)
		}
		found, err := checkUser(ctx, tx)
		problems = append(problems, found...)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return procs, problems, nil
}

// checkUser finds the gateway connected as a user a DBA's shutdown does not
// keep out: the database's owner, SYSDBA, or one in the RDB$ADMIN role.
// Firebird lets them attach to a database shut down single or multi, so
// the gateway's writes went on through a shutdown meant to stop them, and
// its reconnect took the one attachment single mode leaves the DBA (who
// was refused until the gateway's connection idled out).
func checkUser(ctx context.Context, tx *sql.Tx) ([]catalog.Finding, error) {
	var user, owner, role string
	if err := tx.QueryRowContext(ctx, `SELECT TRIM(CURRENT_USER), TRIM(MON$OWNER), TRIM(CURRENT_ROLE) FROM MON$DATABASE`).Scan(&user, &owner, &role); err != nil {
		return nil, err
	}
	who := user
	switch {
	case user == "SYSDBA":
	case user == owner:
		who += ", the database's owner"
	case role == "RDB$ADMIN":
		who += " in the RDB$ADMIN role"
	default:
		return nil, nil
	}
	return []catalog.Finding{{Clave: catalog.UserFinding, Text: "the gateway connects as " + who + ": a DBA's shutdown (gfix -shut single or multi) does not keep it out, and its reconnects can take the one attachment -shut single leaves the DBA; give it a user of its own (infra/docs/catalog.md)"}}, nil
}

// checkTable finds the table missing, a column missing, a privilege not granted
// (to the user, its role or PUBLIC), with CURRENT_USER and CURRENT_ROLE as
// the procedures' grants are.
func checkTable(ctx context.Context, tx *sql.Tx, t catalog.Table) ([]catalog.Finding, error) {
	columns, err := column(ctx, tx, `SELECT TRIM(RDB$FIELD_NAME) FROM RDB$RELATION_FIELDS WHERE RDB$RELATION_NAME = ?`, t.Name)
	if err != nil {
		return nil, err
	}
	finding := func(text string) catalog.Finding {
		return catalog.Finding{Clave: t.Finding, Fatal: t.Fatal, Text: text}
	}
	if len(columns) == 0 {
		return []catalog.Finding{finding(t.Name + " does not exist: " + t.Install)}, nil
	}
	var problems []catalog.Finding
	for _, c := range t.Columns {
		if !slices.Contains(columns, c) {
			problems = append(problems, finding(fmt.Sprintf("%s has no column %s: %s", t.Name, c, t.Install)))
		}
	}
	granted, err := column(ctx, tx, `SELECT TRIM(RDB$PRIVILEGE) FROM RDB$USER_PRIVILEGES
		WHERE RDB$RELATION_NAME = ? AND (RDB$USER = CURRENT_USER OR RDB$USER = CURRENT_ROLE OR RDB$USER = 'PUBLIC')`, t.Name)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, p := range t.Privileges {
		// RDB$PRIVILEGE is the privilege's first letter.
		if !slices.Contains(granted, p[:1]) {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		user, err := column(ctx, tx, `SELECT TRIM(CURRENT_USER) FROM RDB$DATABASE`)
		if err != nil {
			return nil, err
		}
		text := fmt.Sprintf("%s may not be used by %s: GRANT %s ON %s TO %s", t.Name, user[0], strings.Join(missing, ", "), t.Name, user[0])
		if t.Cost != "" {
			text += "; " + t.Cost
		}
		problems = append(problems, finding(text))
	}
	return problems, nil
}
