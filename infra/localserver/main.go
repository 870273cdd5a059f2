// Command localserver serves the gateway over plain HTTP with the instances of
// a local instances file: `make run` and `make serve` use it where there is no
// Docker for `sam local start-api`.
package main

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/erp-gateway/gateway/shared/access"
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/idempotency"
	"github.com/erp-gateway/gateway/shared/settings"
	"github.com/erp-gateway/gateway/shared/tenants"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:3000", "address to listen on")
	instancesPath := flag.String("instances", "infra/instances.demo.json", "instances file: instance name -> instance document")
	accessPath := flag.String("access", "infra/access.demo.json", "access document: the keys tokens are minted with")
	readTimeout := flag.Duration("read-timeout", 30*time.Second, "time to read a request, body included; a body still arriving then is answered 408")
	maxRequests := flag.Int("max-requests", 64, "requests at work at once (their bodies arrived); more wait their turn up to 3s, then are refused with 429")
	basePath := flag.String("base-path", "", "path before {instance}, as a custom domain's mapping puts it (e.g. /erp); every other path is 404")
	flag.Parse()
	// flag stops at the first word that is not a flag, and would drop
	// the flags after it without a word.
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "localserver: %q is not a flag: every value follows its flag\n", flag.Arg(0))
		os.Exit(2)
	}

	s, err := settings.Read(os.Getenv)
	// Settings that cannot be read are told at INFO, the zero level.
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: s.LogLevel}))
	if err == nil {
		err = run(*addr, *instancesPath, *accessPath, *basePath, *readTimeout, *maxRequests, s, log)
	}
	if err != nil {
		log.Error("localserver stopped", "err", err)
		os.Exit(1)
	}
}

func run(addr, instancesPath, accessPath, basePath string, readTimeout time.Duration, maxRequests int, s settings.Settings, log *slog.Logger) error {
	cfg := s.Gateway()
	cfg.OpenAPI = true
	cfg.BasePath = basePath
	// Chunked: a read's answer of any size streams (infra/docs/answers.md#large-answers).
	cfg.StreamAbove = gateway.DefaultStreamAbove
	cat, err := s.LoadCatalog()
	if err != nil {
		return err
	}
	instances, err := tenants.LoadFile(instancesPath)
	if err != nil {
		return err
	}
	if len(instances.Names()) == 0 {
		// Every request would answer 401, as for a name that does not exist.
		return fmt.Errorf("instances file %s names no instance: there is nothing to serve", instancesPath)
	}
	load := func(context.Context) ([]byte, error) { return os.ReadFile(accessPath) }
	acc, err := access.Start(context.Background(), load, access.Options{}, log)
	if err != nil {
		return fmt.Errorf("%s: %w", accessPath, err)
	}
	pools := firebird.NewPools(s.Pools(log))
	defer pools.Close()

	h := gateway.New(cfg, cat, acc, instances, idempotency.New(pools, 0), log)
	srv := &http.Server{
		Addr:              addr,
		Handler:           limit(h, h.Admits, maxRequests, max(cfg.MaxBody, cfg.BatchBody), slotWait),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       readTimeout,
		WriteTimeout:      time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(shutdown) //nolint:errcheck // best effort on the way out
	}()
	fmt.Fprintf(os.Stderr, "serving the gateway on http://%s (instances from %s; %s)\n", addr, instancesPath, served(s.Catalog, cat))
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// served says which catalog the server serves, and how many operations:
// without a catalog file it is the specification's four, which an operator
// who meant to serve a file of their own would otherwise learn from an
// unknown-CLAVE refusal.
func served(catalogPath string, cat *catalog.Catalog) string {
	what := "the specification's built-in catalog"
	if catalogPath != "" {
		what = "the catalog " + catalogPath
	}
	return fmt.Sprintf("%s, %d operations", what, len(cat.Claves()))
}

// slotWait is how long a request waits its turn for a slot before it is
// refused. Measured with 200 clients looping on a read over a 20 ms link
// (the default pool of 4), those that wait the Retry-After they are told:
// refused at once, 49 of them got nothing in 15 s, those that send again at
// once taking the slots; waiting up to 1 s, 21 to 25; up to 3 s, none (each
// got 5 to 9 answers, and no 429), at the same throughput.
const slotWait = 3 * time.Second

// limit refuses requests beyond n at work at once with API Gateway's
// throttling answer once they have waited their turn up to wait, so a
// burst cannot queue for long behind a slow database and a client that
// waits as told is not overtaken for good. They wait in the order they came
// (a channel's blocked senders go in turn). A request counts once its body
// has arrived: a client that sends its headers or its body slowly holds a
// connection and a goroutine, bounded by the server's read timeouts, and no
// slot, so slow clients cannot lock everyone else out. A request admits does
// not take (a stranger's) goes to the handler, which refuses it, before its
// body is read.
func limit(h http.Handler, admits func(*http.Request) bool, n int, maxBody int64, wait time.Duration) http.Handler {
	slots := make(chan struct{}, max(n, 1))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !admits(r) {
			// Refused before its body (no token, a wrong one, no route):
			// a stranger's body is never read, as strangers cost nothing.
			h.ServeHTTP(w, r)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			encoded, err := decoded(r, maxBody)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				h.ServeHTTP(w, r) // 408, as for any body too slow
				return
			}
			if err != nil {
				answer(w, http.StatusUnsupportedMediaType, erp.CodeNotObject, err.Error(), false)
				return
			}
			var whole bool
			var failed error
			if r.Body, whole, failed = arrived(r.Body, maxBody); !whole {
				var tooBig *http.MaxBytesError
				if encoded && failed != nil && !errors.Is(failed, os.ErrDeadlineExceeded) && !errors.As(failed, &tooBig) {
					// As API Gateway: a body not encoded as it says.
					answer(w, http.StatusUnsupportedMediaType, erp.CodeNotObject, "the body is not encoded with its Content-Encoding", false)
					return
				}
				// Refused without work (408, 413): no slot, so bodies that
				// time out together are each told so.
				h.ServeHTTP(w, r)
				return
			}
		}
		select {
		case slots <- struct{}{}:
		default:
			turn := time.NewTimer(wait)
			defer turn.Stop()
			select {
			case slots <- struct{}{}:
			case <-turn.C:
				answer(w, erp.CodeThrottled.Status(), erp.CodeThrottled, "too many requests; retry later", true)
				return
			case <-r.Context().Done():
				return // the client left while it waited
			}
		}
		defer func() { <-slots }()
		h.ServeHTTP(w, r)
	})
}

// answer sends a refusal of the local server's own, as API Gateway
// answers before a function: in the gateway's shape, with its headers.
func answer(w http.ResponseWriter, status int, code erp.Code, message string, retry bool) {
	body := gateway.RefusalBody(code, message)
	gateway.SetAnswerHeaders(w.Header())
	w.Header().Set("X-Request-Id", gateway.NewRequestID())
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	if retry {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(status)
	w.Write(body) //nolint:errcheck // the client went away
}

// decoded takes a body's Content-Encoding off as API Gateway does before
// a function sees it: gzip and deflate (zlib) are decompressed, and the
// handler's bounds hold for what they decompress to; another coding is
// refused with 415. encoded reports whether there was one to take off.
// What arrives compressed is bounded as a plain body is (most).
func decoded(r *http.Request, most int64) (encoded bool, err error) {
	codings := r.Header.Values("Content-Encoding")
	if len(codings) > 1 {
		return true, errors.New("Content-Encoding is sent more than once: send one")
	}
	var dec io.Reader
	// Past most, a *http.MaxBytesError: the handler's 413.
	compressed := http.MaxBytesReader(nil, r.Body, most)
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
		return false, nil
	case "gzip":
		dec, err = gzip.NewReader(compressed)
	case "deflate":
		dec, err = zlib.NewReader(compressed)
	default:
		return true, fmt.Errorf("Content-Encoding %s is not one this service decodes: send gzip, deflate or identity", gateway.Loggable(enc))
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true, err
	}
	if err != nil {
		return true, errors.New("the body is not encoded with its Content-Encoding")
	}
	r.Body = struct {
		io.Reader
		io.Closer
	}{dec, r.Body}
	r.Header.Del("Content-Encoding")
	r.ContentLength = -1
	return true, nil
}

// arrived reads body to its end, or to one byte past maxBody (which tells
// the handler it is too large), and returns a body that gives the handler
// the same bytes and then the same error (a read timeout: 408); whole is
// false when the body failed (failed says why) or is too large.
func arrived(body io.ReadCloser, maxBody int64) (_ io.ReadCloser, whole bool, failed error) {
	b, failed := io.ReadAll(io.LimitReader(body, maxBody+1))
	whole = failed == nil && int64(len(b)) <= maxBody
	then := failed
	if then == nil {
		then = io.EOF
	}
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), failing{then}), body}, whole, failed
}

// failing is a reader that fails with its error.
type failing struct{ err error }

func (f failing) Read([]byte) (int, error) { return 0, f.err }
