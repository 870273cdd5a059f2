package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"time"
)

// wireClient is the timed phase's HTTP client: one keep-alive connection, the
// request serialised once, answers read by their Content-Length. The load
// generator shares the box with the server and Firebird, and net/http's
// client spends about as much CPU per request as the server it measures; every
// cycle it spends is taken from what it measures. The untimed hygiene phase
// keeps net/http.
type wireClient struct {
	addr    string
	request []byte
	conn    net.Conn
	r       *bufio.Reader
	answer  []byte
	// retryAfter is the last answer's Retry-After, in seconds (0: none).
	retryAfter int
}

func newWireClient(rawURL, token string, body []byte) (*wireClient, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	var req bytes.Buffer
	fmt.Fprintf(&req, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n", u.RequestURI(), u.Host, token)
	fmt.Fprintf(&req, "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	req.Write(body)
	return &wireClient{addr: u.Host, request: req.Bytes()}, nil
}

// post sends the request and returns the status and the body, which is only
// valid until the next call. A failed exchange drops the connection, and the
// next call dials again.
func (c *wireClient) post() (int, []byte, error) {
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", c.addr, callTimeout)
		if err != nil {
			return 0, nil, err
		}
		c.conn, c.r = conn, bufio.NewReaderSize(conn, 16<<10)
	}
	status, body, err := c.exchange()
	if err != nil {
		c.close()
	}
	return status, body, err
}

func (c *wireClient) exchange() (int, []byte, error) {
	if err := c.conn.SetDeadline(time.Now().Add(callTimeout)); err != nil {
		return 0, nil, err
	}
	if _, err := c.conn.Write(c.request); err != nil {
		return 0, nil, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return 0, nil, fmt.Errorf("reading the status line: %w", err)
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, nil, fmt.Errorf("not an HTTP/1.1 status line: %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, nil, fmt.Errorf("status line %q: %w", line, err)
	}
	length := -1
	c.retryAfter = 0
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return 0, nil, fmt.Errorf("reading the headers: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if ok && bytes.EqualFold(name, []byte("Retry-After")) {
			c.retryAfter, _ = strconv.Atoi(string(bytes.TrimSpace(value)))
		}
		if ok && bytes.EqualFold(name, []byte("Content-Length")) {
			if length, err = strconv.Atoi(string(bytes.TrimSpace(value))); err != nil {
				return 0, nil, fmt.Errorf("Content-Length %q: %w", value, err)
			}
		}
	}
	if length < 0 {
		return 0, nil, errors.New("answer without Content-Length")
	}
	c.answer = append(c.answer[:0], make([]byte, length)...)
	if _, err := io.ReadFull(c.r, c.answer); err != nil {
		return 0, nil, fmt.Errorf("reading the answer: %w", err)
	}
	return status, c.answer, nil
}

func (c *wireClient) close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn, c.r = nil, nil
	}
}
