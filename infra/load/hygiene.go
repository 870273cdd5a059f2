package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// idle is how long the gateway is left alone before the monitoring tables
// are read, so that what is still open there is held, not in flight.
const idle = 2 * time.Second

// mixedRequest is one request of the hygiene phase and the answer it must get.
type mixedRequest struct {
	kind     string
	endpoint string
	body     []byte
	check    func(status int, answer []byte) error
}

// hygiene sends a mix of every kind of answer through the server, then
// reports what the gateway's user still holds open in the database.
func hygiene(ctx context.Context, o options, hc *http.Client, base, sysdbaDSN, user string) error {
	jobs := mixedJobs(o.mixed)
	counts, failures := runMixed(ctx, hc, base, o.token, jobs)
	if err := ctx.Err(); err != nil {
		return err
	}
	printCounts(counts)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(idle):
	}
	m, err := readMonitor(ctx, sysdbaDSN, user)
	if err != nil {
		return err
	}
	fmt.Printf("after %d mixed requests at %d clients and %s idle: gateway transactions open %d (read-write %d); NEXT-OAT %d; statements %d; attachments %d\n",
		o.mixed, mixedClients, idle, m.open, m.readWrite, m.nextMinusOAT, m.statements, m.attachments)
	if len(failures) > 0 {
		for _, err := range failures[:min(len(failures), 5)] {
			fmt.Fprintln(os.Stderr, "mixed:", err)
		}
		return fmt.Errorf("%d mixed requests got unexpected answers", len(failures))
	}
	return nil
}

// mixedJobs cycles through found reads, not-found reads, inserts, duplicate
// inserts and refused requests, n requests in all. An insert and its
// duplicate are one job, sent in order by one client: sent concurrently, the
// duplicate would wait on the insert's lock and get the unique-key text
// instead of YA EXISTE.
func mixedJobs(n int) [][]mixedRequest {
	found := []string{
		readBody,
		`{"CLAVE":"Get_Terceros","CODIGO":"10104729"}`,
		`{"CLAVE":"Get_Gestion_Primario","TIPO":"FV","PREFIJO":"FE","NUMERO":"1000"}`,
	}
	// Codes of earlier runs exist already; time keeps this run's apart.
	firstCode := time.Now().UnixNano() % 1e13
	var jobs [][]mixedRequest
	left := n
	add := func(job ...mixedRequest) {
		job = job[:min(len(job), left)]
		if len(job) > 0 {
			jobs = append(jobs, job)
			left -= len(job)
		}
	}
	for cycle := 0; left > 0; cycle++ {
		insert := insertBody(fmt.Sprintf("L%013d", (firstCode+int64(cycle))%1e13))
		add(mixedRequest{"found", "executequery", []byte(found[cycle%len(found)]), wantData})
		add(mixedRequest{"not-found", "executequery", fmt.Appendf(nil, `{"CLAVE":"Get_Referencias","CODIGO":"NO-EXISTE-%d"}`, cycle), wantRefusal("NO EXISTE")})
		add(mixedRequest{"insert", "execute", insert, wantData},
			mixedRequest{"duplicate", "execute", insert, wantRefusal("YA EXISTE")})
		add(mixedRequest{"refused", "executequery", []byte(`{"CLAVE":"Get_Terceros","CODIGO":12}`), wantStatus(http.StatusBadRequest)})
	}
	return jobs
}

// insertBody is the README's Set_Terceros example with another code.
func insertBody(code string) []byte {
	body, err := json.Marshal(map[string]string{
		"CLAVE": "Set_Terceros", "CODIGO": code, "DV": "3", "NATURALEZA": "J",
		"EMPRESA": "Café Ñuñoa S.A.S.", "RAZON_COMERCIAL": "Café Ñuñoa", "DIRECCION": "Calle 10 # 4-21",
		"CODIDENTIDAD": "NIT", "CODSOCIEDAD": "SAS", "CODPAIS": "CO", "CODMUNICIPIO": "05001",
		"CODACTIVIDAD": "NA", "CODZONA": "NA",
	})
	if err != nil {
		panic(err) // a map of strings always encodes
	}
	return body
}

// wantRefusal accepts the database's own refusal, which the gateway answers
// with HTTP 200 and the exception text.
func wantRefusal(text string) func(int, []byte) error {
	return func(status int, answer []byte) error {
		if status != http.StatusOK || !bytes.HasPrefix(answer, []byte(refusal)) || !bytes.Contains(answer, []byte(text)) {
			return unexpected(status, answer)
		}
		return nil
	}
}

func wantStatus(want int) func(int, []byte) error {
	return func(status int, answer []byte) error {
		if status != want {
			return unexpected(status, answer)
		}
		return nil
	}
}

// runMixed sends the jobs from mixedClients clients and counts the answers
// by kind and HTTP status (0: no answer).
func runMixed(ctx context.Context, hc *http.Client, base, token string, jobs [][]mixedRequest) (map[string]map[int]int, []error) {
	queue := make(chan []mixedRequest, len(jobs))
	for _, job := range jobs {
		queue <- job
	}
	close(queue)
	var mu sync.Mutex
	counts := map[string]map[int]int{}
	var failures []error
	var wg sync.WaitGroup
	for range mixedClients {
		wg.Go(func() {
			for job := range queue {
				if ctx.Err() != nil {
					return
				}
				for _, req := range job {
					status, answer, err := post(ctx, hc, base+req.endpoint, token, req.body)
					if err == nil {
						err = req.check(status, answer)
					}
					mu.Lock()
					if counts[req.kind] == nil {
						counts[req.kind] = map[int]int{}
					}
					counts[req.kind][status]++
					if err != nil {
						failures = append(failures, fmt.Errorf("%s %s: %w", req.kind, req.body, err))
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return counts, failures
}

func printCounts(counts map[string]map[int]int) {
	var parts []string
	for _, kind := range []string{"found", "not-found", "insert", "duplicate", "refused"} {
		var byStatus []string
		for _, status := range slices.Sorted(maps.Keys(counts[kind])) {
			byStatus = append(byStatus, fmt.Sprintf("%d×%d", status, counts[kind][status]))
		}
		parts = append(parts, kind+" "+strings.Join(byStatus, " "))
	}
	fmt.Println("mixed answers by HTTP status:", strings.Join(parts, "; "))
}

// monitor is what the monitoring tables show of the gateway's user.
type monitor struct {
	nextMinusOAT                             int64
	open, readWrite, statements, attachments int64
}

func readMonitor(ctx context.Context, dsn, user string) (monitor, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	db, err := sql.Open("firebirdsql", dsn)
	if err != nil {
		return monitor{}, fmt.Errorf("monitoring tables: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)

	var m monitor
	var next, oat, oit, ost int64
	var readWrite sql.NullInt64 // SUM of no rows is NULL
	queries := []struct {
		sql  string
		args []any
		dest []any
	}{
		{`SELECT MON$NEXT_TRANSACTION, MON$OLDEST_ACTIVE, MON$OLDEST_TRANSACTION, MON$OLDEST_SNAPSHOT FROM MON$DATABASE`,
			nil, []any{&next, &oat, &oit, &ost}},
		{`SELECT COUNT(*), SUM(IIF(t.MON$READ_ONLY = 0, 1, 0)) FROM MON$TRANSACTIONS t
		  JOIN MON$ATTACHMENTS a ON a.MON$ATTACHMENT_ID = t.MON$ATTACHMENT_ID WHERE a.MON$USER = ?`,
			[]any{user}, []any{&m.open, &readWrite}},
		{`SELECT COUNT(*) FROM MON$STATEMENTS s
		  JOIN MON$ATTACHMENTS a ON a.MON$ATTACHMENT_ID = s.MON$ATTACHMENT_ID WHERE a.MON$USER = ?`,
			[]any{user}, []any{&m.statements}},
		{`SELECT COUNT(*) FROM MON$ATTACHMENTS WHERE MON$USER = ?`, []any{user}, []any{&m.attachments}},
	}
	for _, q := range queries {
		// The monitoring tables are a snapshot taken at a transaction's first
		// read of them: a transaction of its own gives each query the present.
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return monitor{}, fmt.Errorf("monitoring tables: %w", err)
		}
		err = tx.QueryRowContext(ctx, q.sql, q.args...).Scan(q.dest...)
		if err != nil {
			tx.Rollback() //nolint:errcheck // the query's error is the one to report
			return monitor{}, fmt.Errorf("monitoring tables: %w", err)
		}
		if err := tx.Commit(); err != nil {
			return monitor{}, fmt.Errorf("monitoring tables: %w", err)
		}
	}
	m.nextMinusOAT = next - oat
	m.readWrite = readWrite.Int64
	return m, nil
}
