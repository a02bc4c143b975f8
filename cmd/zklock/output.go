package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// reporter prints zklock's messages on stderr, prefixed "zklock: ": errors
// unless -q, progress only with -v.
type reporter struct {
	mu      sync.Mutex
	w       io.Writer
	quiet   bool
	verbose bool
	secrets []string // masked wherever they appear: the DSNs' passwords
}

func newReporter(w io.Writer, o outputOptions) *reporter {
	return &reporter{w: w, quiet: o.quiet, verbose: o.verbose}
}

// errorf prints a message unless -q.
func (r *reporter) errorf(format string, args ...any) {
	if r.quiet {
		return
	}
	r.print(fmt.Sprintf(format, args...))
}

// infof prints a progress message with -v.
func (r *reporter) infof(format string, args ...any) {
	if !r.verbose {
		return
	}
	r.print(fmt.Sprintf(format, args...))
}

func (r *reporter) print(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.w, "zklock: %s\n", redact(msg, r.secrets))
}

// logger is the session client's logger: its messages become zklock's:
// warnings (connection suspended, session lost) with -v, errors only by
// default, none with -q.
func (r *reporter) logger() *slog.Logger {
	level := slog.LevelError
	if r.verbose {
		level = slog.LevelWarn
	}
	if r.quiet {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(&logHandler{r: r, level: level})
}

// logHandler prints a record as "message: key=value ...", leaving out nil
// values. Groups are flattened; the library does not use them.
type logHandler struct {
	r     *reporter
	level slog.Level
	attrs []slog.Attr
}

func (h *logHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *logHandler) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Message)
	sep := ": "
	add := func(a slog.Attr) bool {
		v := a.Value.Resolve()
		if a.Key == "" || (v.Kind() == slog.KindAny && v.Any() == nil) {
			return true
		}
		fmt.Fprintf(&b, "%s%s=%v", sep, a.Key, v)
		sep = " "
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	rec.Attrs(add)
	h.r.print(b.String())
	return nil
}

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &logHandler{r: h.r, level: h.level, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h *logHandler) WithGroup(string) slog.Handler { return h }
