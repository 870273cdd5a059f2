// Command load measures the local server against the raw Firebird driver in
// the same run: requests per second, latency and the Firebird server's CPU per
// request at several client counts; then whether a mixed load leaves
// transactions, statements or attachments behind. `make load` runs it.
package main

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/nakagami/firebirdsql"

	"github.com/erp-gateway/gateway/shared/firebird"
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
}

func main() {
	var o options
	var levels string
	flag.StringVar(&o.server, "server", "bin/localserver", "the built local server (go build -o bin/localserver ./infra/localserver)")
	flag.StringVar(&o.serverLog, "server-log", "bin/load-server.log", "file that receives the local server's log")
	flag.StringVar(&o.instances, "instances", "infra/instances.demo.json", "instances file")
	flag.StringVar(&o.access, "access", "infra/access.demo.json", "access document the token is minted with")
	flag.StringVar(&o.instance, "instance", "demo", "instance to load")
	flag.StringVar(&o.token, "token", "erpgw_demo_8c04364041cbd740c97a63c0a3cff7cc_wLuaA3CSqmMyxAShB7x4f-G3dTF7S1-E-II8m9kYlRY", "bearer token of the instance")
	flag.StringVar(&levels, "levels", "1,4,16", "client counts, comma-separated")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "length of each measurement")
	flag.IntVar(&o.mixed, "mixed", 5000, "mixed requests of the hygiene phase (0 skips it)")
	flag.DurationVar(&o.neighbour, "neighbour", 0, "run only the noisy-neighbour phase, each half this long (make load-neighbour)")
	flag.IntVar(&o.neighbourClients, "neighbour-clients", 8, "clients per instance in the noisy-neighbour phase")
	flag.Parse()

	var err error
	if o.levels, err = parseLevels(levels); err != nil {
		fmt.Fprintln(os.Stderr, "load: -levels:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if o.neighbour > 0 {
		err = neighbour(ctx, o, o.neighbour, o.neighbourClients)
	} else {
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

	results, err := measureLevels(ctx, o, db, base)
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

// baseURL ends with the class segment, which GATEWAY_CLASS (passed on to the
// server with the rest of the environment) may rename.
func baseURL(addr, instance string) string {
	class := cmp.Or(os.Getenv("GATEWAY_CLASS"), "TServiceRestInterface")
	return fmt.Sprintf("http://%s/%s/RestServerIsapi.dll/api/v1/%s/", addr, instance, class)
}

func measureLevels(ctx context.Context, o options, db *sql.DB, base string) ([]result, error) {
	var results []result
	for _, c := range o.levels {
		raw, err := rawClients(ctx, db, c)
		if err != nil {
			return nil, err
		}
		r, err := measure(ctx, "raw", raw, o.duration)
		closeAll(raw)
		if err != nil {
			return nil, err
		}
		hcs, err := httpClients(base, o.token, c)
		if err != nil {
			return nil, err
		}
		h, err := measure(ctx, "http", hcs, o.duration)
		closeAll(hcs)
		if err != nil {
			return nil, err
		}
		results = append(results, r, h)
	}
	return results, nil
}

func reportFailures(results []result) int {
	failed := 0
	for _, r := range results {
		if r.errors > 0 {
			fmt.Fprintf(os.Stderr, "%d clients %s: %d failed requests, the first: %v\n", r.clients, r.kind, r.errors, r.firstErr)
			failed += r.errors
		}
	}
	return failed
}

// client is one simulated client: call makes one request, close releases
// what the client holds.
type client struct {
	call  func() error
	close func()
}

func closeAll(clients []client) {
	for _, c := range clients {
		c.close()
	}
}

// measure warms the clients up, then lets them call as fast as they can for
// d, and records every successful call's latency and the Firebird server's CPU.
func measure(ctx context.Context, kind string, clients []client, d time.Duration) (result, error) {
	if err := warmUp(clients); err != nil {
		return result{}, fmt.Errorf("%d clients %s: warm-up: %w", len(clients), kind, err)
	}
	type tally struct {
		latencies []time.Duration
		errors    int
		firstErr  error
	}
	tallies := make([]tally, len(clients))
	cpuBefore, cpuErr := firebirdCPU()
	start := time.Now()
	stopAt := start.Add(d)
	err := each(len(clients), d+callTimeout, func(i int) {
		t := &tallies[i]
		for time.Now().Before(stopAt) && ctx.Err() == nil {
			began := time.Now()
			if err := clients[i].call(); err != nil {
				t.errors++
				t.firstErr = cmp.Or(t.firstErr, err)
				continue
			}
			t.latencies = append(t.latencies, time.Since(began))
		}
	})
	elapsed := time.Since(start)
	cpuAfter, cpuErrAfter := firebirdCPU()
	if err := cmp.Or(err, ctx.Err()); err != nil {
		return result{}, fmt.Errorf("%d clients %s: %w", len(clients), kind, err)
	}
	// A Firebird restarted meanwhile counts its CPU from zero again.
	r := result{kind: kind, clients: len(clients), elapsed: elapsed, cpu: cpuAfter - cpuBefore,
		cpuKnown: cpuErr == nil && cpuErrAfter == nil && cpuAfter >= cpuBefore}
	for _, t := range tallies {
		r.latencies = append(r.latencies, t.latencies...)
		r.errors += t.errors
		r.firstErr = cmp.Or(r.firstErr, t.firstErr)
	}
	slices.Sort(r.latencies)
	return r, nil
}

// warmUp lets connections open and statements and the server's caches settle
// before anything is timed.
func warmUp(clients []client) error {
	errs := make([]error, len(clients))
	err := each(len(clients), warmUpCalls*callTimeout, func(i int) {
		for range warmUpCalls {
			if errs[i] = clients[i].call(); errs[i] != nil {
				return
			}
		}
	})
	return cmp.Or(err, cmp.Or(errs...))
}

// each runs fn(0) … fn(n-1) concurrently and waits for them at most limit,
// because a raw call has no deadline of its own (see rawClients).
func each(n int, limit time.Duration, fn func(i int)) error {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { fn(i) })
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-time.After(limit):
		return fmt.Errorf("clients still busy after %s", limit)
	}
}

// rawClients are the best the driver can do: each client holds its own
// connection with the statement prepared once. Their calls get no context
// deadline, because any cancellable context makes the driver set socket
// deadlines and start a watcher goroutine on every round trip (make bench
// measures that cost apart, as raw-deadline); each bounds them instead.
func rawClients(ctx context.Context, db *sql.DB, n int) ([]client, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	clients := make([]client, 0, n)
	for range n {
		c, err := rawClient(ctx, db)
		if err != nil {
			closeAll(clients)
			return nil, fmt.Errorf("raw baseline: %w", err)
		}
		clients = append(clients, c)
	}
	return clients, nil
}

func rawClient(ctx context.Context, db *sql.DB) (client, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return client{}, fmt.Errorf("connecting: %w", err)
	}
	stmt, err := conn.PrepareContext(ctx, "SELECT * FROM REST_SELECT_REFERENCIA(?)")
	if err != nil {
		conn.Close()
		return client{}, fmt.Errorf("preparing: %w", err)
	}
	var dest []any
	call := func() error {
		rows, err := stmt.QueryContext(context.Background(), "REF0001")
		if err != nil {
			return err
		}
		defer rows.Close()
		if dest == nil {
			cols, err := rows.Columns()
			if err != nil {
				return err
			}
			dest = scanTargets(len(cols))
		}
		n := 0
		for rows.Next() {
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			n++
		}
		if err := cmp.Or(rows.Err(), rows.Close()); err != nil {
			return err
		}
		if n != 1 {
			return fmt.Errorf("REST_SELECT_REFERENCIA('REF0001') returned %d rows, want 1", n)
		}
		return nil
	}
	return client{call: call, close: func() { stmt.Close(); conn.Close() }}, nil
}

func scanTargets(n int) []any {
	vals := make([]any, n)
	dest := make([]any, n)
	for i := range vals {
		dest[i] = &vals[i]
	}
	return dest
}

func httpClients(base, token string, n int) ([]client, error) {
	clients := make([]client, n)
	for i := range clients {
		wc, err := newWireClient(base+"executequery", token, []byte(readBody))
		if err != nil {
			return nil, err
		}
		call := func() error {
			status, answer, err := wc.post()
			if err != nil {
				return err
			}
			return wantData(status, answer)
		}
		clients[i] = client{call: call, close: wc.close}
	}
	return clients, nil
}

// newHTTPClient keeps a connection per client alive between requests, as
// integrators' clients do, so the measurement is not of TCP handshakes.
func newHTTPClient(clients int) *http.Client {
	return &http.Client{
		Timeout: callTimeout,
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: callTimeout}).DialContext,
			MaxIdleConns:        clients,
			MaxIdleConnsPerHost: clients,
			IdleConnTimeout:     time.Minute,
		},
	}
}

func post(hc *http.Client, url, token string, body []byte) (status int, answer []byte, err error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	answer, err = io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("reading the answer: %w", err)
	}
	return resp.StatusCode, answer, nil
}

func wantData(status int, answer []byte) error {
	if status != http.StatusOK || !bytes.HasPrefix(answer, []byte(dataPrefix)) {
		return unexpected(status, answer)
	}
	return nil
}

func unexpected(status int, answer []byte) error {
	const maxShown = 300
	if len(answer) > maxShown {
		answer = append(answer[:maxShown:maxShown], "…"...)
	}
	return fmt.Errorf("unexpected answer: HTTP %d %s", status, answer)
}

// server is the local server, run as a subprocess.
type server struct {
	cmd    *exec.Cmd
	addr   string
	exited chan error
	log    *os.File
}

// startServer starts the local server on a free port and waits until it
// accepts connections. Its log goes to a file: it writes a line per request.
func startServer(o options) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(o.serverLog), 0o755); err != nil {
		return nil, err
	}
	log, err := os.Create(o.serverLog)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(o.server, "-addr", addr, "-instances", o.instances, "-access", o.access)
	cmd.Env = os.Environ()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("local server (go build -o bin/localserver ./infra/localserver): %w", err)
	}
	s := &server{cmd: cmd, addr: addr, exited: make(chan error, 1), log: log}
	go func() { s.exited <- cmd.Wait() }()
	if err := s.waitListening(10 * time.Second); err != nil {
		s.stop()
		return nil, fmt.Errorf("local server: %w (its log: %s)", err, o.serverLog)
	}
	return s, nil
}

// freeAddr asks the kernel for a free port. Another process may take it
// before the server listens on it; the server then fails to start, loudly.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func (s *server) waitListening(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case err := <-s.exited:
			s.exited <- err // for stop
			return fmt.Errorf("exited before listening: %v", err)
		default:
		}
		if conn, err := net.DialTimeout("tcp", s.addr, time.Second); err == nil {
			conn.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not listening on %s after %s", s.addr, limit)
}

// stop asks the server to shut down gracefully (it allows itself 10 s) and
// kills it if it takes longer.
func (s *server) stop() {
	defer s.log.Close()
	s.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited already
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		s.cmd.Process.Kill() //nolint:errcheck // best effort on the way out
		<-s.exited
	}
}

// sysdbaDSN is the instance's DSN with SYSDBA's credentials, for the
// monitoring tables, which show a user only their own attachments.
func sysdbaDSN(instanceDSN, password string) (string, error) {
	u, err := url.Parse(instanceDSN)
	if err != nil {
		// The error would quote the DSN, and with it the password.
		return "", errors.New("the instance's DSN does not parse as a URL")
	}
	u.User = url.UserPassword("SYSDBA", password)
	u.RawQuery = url.Values{"charset": {"UTF8"}}.Encode()
	return u.String(), nil
}
