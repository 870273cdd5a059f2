package lambdafn

import (
	"context"
	"log/slog"
)

// requestMsg is the message of the gateway's one line per request
// (shared/gateway, logRequest), which is also its Embedded Metric Format
// document: the metrics, UnavailableAlarm and the rollbacks read it.
const requestMsg = "request"

// levelHandler writes records at min and above, and every request line
// whatever min is: a log level chosen to quieten the logs must not switch the
// metrics off.
type levelHandler struct {
	inner slog.Handler // enabled at every level; this handler filters
	min   slog.Level
}

// newLevelHandler filters for inner, which must itself let every level through.
func newLevelHandler(inner slog.Handler, min slog.Level) slog.Handler {
	return levelHandler{inner: inner, min: min}
}

// Enabled lets INFO records be built below min too: whether one is the
// request line is only known from its message, in Handle.
func (h levelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return (l >= h.min || l == slog.LevelInfo) && h.inner.Enabled(ctx, l)
}

func (h levelHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < h.min && !(r.Level == slog.LevelInfo && r.Message == requestMsg) {
		return nil
	}
	return h.inner.Handle(ctx, r)
}

func (h levelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return levelHandler{inner: h.inner.WithAttrs(attrs), min: h.min}
}

func (h levelHandler) WithGroup(name string) slog.Handler {
	return levelHandler{inner: h.inner.WithGroup(name), min: h.min}
}
