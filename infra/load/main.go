// Command load measures the local server against the raw Firebird driver in
// the same run: requests per second, latency and the Firebird server's CPU per
// request at several client counts; then whether a mixed load leaves
// transactions, statements or attachments behind. `make load` runs it.
package main

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/nakagami/firebirdsql"

	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/settings"
	"github.com/erp-gateway/gateway/shared/tenants"
)

const (
	// callTimeout bounds every single request and database call.
	callTimeout = 10 * time.Second
	warmUpCalls = 5
	// mixedClients is the client count of the hygiene phase.
	mixedClients = 16
	dataPrefix   = `{"cod_error":0,"data":[`
	refusal      = `{"cod_error":0,"ex_execsql":`
	readBody     = `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`
)

type options struct {
	server, serverLog, instances, access, instance, token string
	levels                                                []int
	duration                                              time.Duration
	mixed                                                 int
	// neighbour, when set, runs only the noisy-neighbour phase, each half
	// this long, with neighbourClients per instance.
	neighbour        time.Duration
	neighbourClients int
	// slow, when set, runs only the slow-clients phase for slowFor.
	slow    int
	slowFor time.Duration
}

func main() {
	var o options
	var levels string
	flag.StringVar(&o.server, "server", "bin/localserver", "the built local server (go build -o bin/localserver ./infra/localserver)")
	flag.StringVar(&o.serverLog, "server-log", "bin/load-server.log", "file that receives the local server's log")
	flag.StringVar(&o.instances, "instances", "infra/instances.demo.json", "instances file")
	flag.StringVar(&o.access, "access", "infra/access.demo.json", "access document the token is minted with")
	flag.StringVar(&o.instance, "instance", "demo", "instance to load")
	flag.StringVar(&o.token, "token", "erpgw_demo_3999776004efd43ca5ca39186f4b49f5_mAliZOWh_OsfcW0aZtBc_yS_VorP-s__q7sEhLp-KQX2q8Xr-AnyGe1K1NvIlIvt73BF0Pme7RHr3GzFI4W_Ag", "bearer token of the instance")
	flag.StringVar(&levels, "levels", "1,4,16", "client counts, comma-separated")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "length of each measurement")
	flag.IntVar(&o.mixed, "mixed", 5000, "mixed requests of the hygiene phase (0 skips it)")
	flag.DurationVar(&o.neighbour, "neighbour", 0, "run only the noisy-neighbour phase, each half this long (make load-neighbour)")
	flag.IntVar(&o.neighbourClients, "neighbour-clients", 8, "clients per instance in the noisy-neighbour phase")
	flag.IntVar(&o.slow, "slow", 0, "run only the slow-clients phase with this many slow connections (make load-slow)")
	flag.DurationVar(&o.slowFor, "slow-for", 45*time.Second, "length of the slow-clients phase")
	flag.Parse()
	// flag stops at the first word that is not a flag, and would drop
	// the flags after it without a word.
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "load: %q is not a flag: every value follows its flag\n", flag.Arg(0))
		os.Exit(2)
	}

	var err error
	if o.levels, err = parseLevels(levels); err != nil {
		fmt.Fprintln(os.Stderr, "load: -levels:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	switch {
	case o.slow > 0:
		err = slowClients(ctx, o, o.slow, o.slowFor)
	case o.neighbour > 0:
		err = neighbour(ctx, o, o.neighbour, o.neighbourClients)
	default:
		err = run(ctx, o)
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func parseLevels(s string) ([]int, error) {
	var levels []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a client count", f)
		}
		levels = append(levels, n)
	}
	return levels, nil
}

func run(ctx context.Context, o options) error {
	sysdbaPassword := os.Getenv("FB_SYSDBA_PASSWORD")
	if o.mixed > 0 && sysdbaPassword == "" {
		return errors.New("FB_SYSDBA_PASSWORD is empty (infra/firebird.sh sysdba prints it); -mixed 0 skips the phase that needs it")
	}
	instances, err := tenants.LoadFile(o.instances)
	if err != nil {
		return err
	}
	inst, err := instances.Lookup(ctx, o.instance)
	if err != nil {
		return fmt.Errorf("instance %s: %w", o.instance, err)
	}
	db, err := sql.Open("firebirdsql", firebird.DSN(inst.Connection))
	if err != nil {
		return fmt.Errorf("raw baseline: %w", err)
	}
	defer db.Close()
	// Attaching is costly: keep every level's connections for the next one.
	db.SetMaxIdleConns(slices.Max(o.levels))

	srv, err := startServer(o)
	if err != nil {
		return err
	}
	defer srv.stop()
	base := baseURL(srv.addr, o.instance)

	results, err := measureLevels(ctx, o, db, base, srv.cmd.Process.Pid)
	if err != nil {
		return err
	}
	if err := printTable(os.Stdout, results); err != nil {
		return err
	}
	failed := reportFailures(results)
	if o.mixed > 0 {
		// The raw baseline attaches as the gateway's user: only the
		// gateway's own attachments may be left for the counts.
		db.Close()
		dsn, err := sysdbaDSN(firebird.DSN(inst.Connection), sysdbaPassword)
		if err != nil {
			return err
		}
		// Firebird keeps unquoted user names in upper case, and so does MON$USER.
		if err := hygiene(ctx, o, newHTTPClient(mixedClients), base, dsn, strings.ToUpper(inst.Connection.User)); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d requests failed", failed)
	}
	return nil
}

// baseURL ends with the class segment, which settings.EnvClass (passed on to the
// server with the rest of the environment) may rename.
func baseURL(addr, instance string) string {
	class := cmp.Or(os.Getenv(settings.EnvClass), gateway.DefaultClass)
	return fmt.Sprintf("http://%s/%s/RestServerIsapi.dll/api/v1/%s/", addr, instance, class)
}
