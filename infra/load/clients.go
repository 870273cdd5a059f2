package main

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

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

func post(ctx context.Context, hc *http.Client, url, token string, body []byte) (status int, answer []byte, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
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
