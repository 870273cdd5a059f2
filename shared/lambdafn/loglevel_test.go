package lambdafn

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
)

// TestLevelHandlerKeepsTheRequestLine: below the level only the request line
// is written; at and above it everything is.
func TestLevelHandlerKeepsTheRequestLine(t *testing.T) {
	for _, tc := range []struct {
		min   slog.Level
		level slog.Level
		msg   string
		want  bool
	}{
		{slog.LevelError, slog.LevelInfo, requestMsg, true},
		{slog.LevelWarn, slog.LevelInfo, requestMsg, true},
		{slog.LevelWarn, slog.LevelInfo, "connection replaced", false},
		{slog.LevelWarn, slog.LevelDebug, requestMsg, false},
		{slog.LevelWarn, slog.LevelWarn, "database unavailable", true},
		{slog.LevelInfo, slog.LevelDebug, "prepared", false},
		{slog.LevelDebug, slog.LevelDebug, "prepared", true},
		{slog.LevelError, slog.LevelError, "cannot start", true},
	} {
		var out bytes.Buffer
		log := slog.New(newLevelHandler(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}), tc.min)).With("k", "v")
		log.Log(context.Background(), tc.level, tc.msg)
		if written := out.Len() > 0; written != tc.want {
			t.Errorf("level %v: %v %q written %v, want %v", tc.min, tc.level, tc.msg, written, tc.want)
		}
	}
}
