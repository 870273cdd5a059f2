package lambdafn

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/erp-gateway/gateway/shared/gateway"
)

// HandleStream serves one API Gateway event whose integration streams its
// response (responseTransferMode STREAM): the status and headers go in the
// response's prelude, and the body follows through a pipe that the runtime
// reads while the handler writes it, so an answer of any size takes
// constant memory. aws-lambda-go-api-proxy only buffers: it still turns the
// event into the request, and this side writes the response.
func (f *Function) HandleStream(ctx context.Context, event events.APIGatewayProxyRequest) (*events.APIGatewayProxyStreamingResponse, error) {
	ctx, ids, cancel := f.requestContext(ctx, event)
	err := usable(event)
	var req *http.Request
	if err == nil {
		req, err = f.adapter.EventToRequestWithContext(ctx, event)
	}
	if err != nil {
		f.log.WarnContext(ctx, "unusable event", "request_id", ids.API, "lambda_request_id", ids.Lambda, "err", gateway.Loggable(err.Error()))
		cancel()
		bad := badEvent(ids.API)
		return &events.APIGatewayProxyStreamingResponse{StatusCode: bad.StatusCode, MultiValueHeaders: bad.MultiValueHeaders, Body: strings.NewReader(bad.Body)}, nil
	}
	pr, pw := io.Pipe()
	w := &streamWriter{header: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() {
		// The answer streams after HandleStream returns.
		defer cancel()
		defer func() {
			// The handler panics with http.ErrAbortHandler to leave a
			// body unended: the runtime then ends the stream with its
			// error trailers, never as a whole answer.
			if p := recover(); p != nil {
				w.WriteHeader(http.StatusInternalServerError)
				pw.CloseWithError(errAnswerCut)
				return
			}
			w.WriteHeader(http.StatusOK)
			pw.Close()
		}()
		f.handler.ServeHTTP(w, req)
	}()
	<-w.ready
	return &events.APIGatewayProxyStreamingResponse{StatusCode: w.status, MultiValueHeaders: w.sent, Body: pr}, nil
}

var errAnswerCut = errors.New("the answer was cut after its first byte")

// streamWriter is the http.ResponseWriter of a streaming invocation.
type streamWriter struct {
	header http.Header
	pw     *io.PipeWriter
	ready  chan struct{} // closed once status and headers are known

	mu     sync.Mutex
	status int
	sent   map[string][]string // the headers as sent
	timer  *time.Timer         // the write deadline
}

func (w *streamWriter) Header() http.Header { return w.header }

func (w *streamWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sent != nil {
		return
	}
	w.status, w.sent = code, w.header.Clone()
	if w.sent == nil {
		w.sent = map[string][]string{}
	}
	close(w.ready)
}

func (w *streamWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(p)
}

// FlushError is for http.ResponseController: a pipe holds nothing back.
func (w *streamWriter) FlushError() error { return nil }

// SetWriteDeadline interrupts a write still blocked at t (the runtime not
// reading, as API Gateway throttles a slow client), and every later one.
func (w *streamWriter) SetWriteDeadline(t time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if t.IsZero() || w.sent == nil {
		// Before the prelude nothing can block: the runtime reads the
		// body only once it has the prelude.
		return nil
	}
	w.timer = time.AfterFunc(time.Until(t), func() { w.pw.CloseWithError(errAnswerCut) })
	return nil
}
