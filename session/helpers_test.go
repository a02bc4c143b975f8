package session_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/session"
)

// waitLimit bounds every wait in these tests; nothing asserts on durations.
const waitLimit = 60 * time.Second

func quiet() session.Option {
	return session.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// connect opens a client closed at cleanup.
func connect(t *testing.T, servers []string, opts ...session.Option) *session.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	c, err := session.Connect(ctx, servers, append([]session.Option{quiet()}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// subscribe returns the client's state changes, stopped at cleanup.
func subscribe(t *testing.T, c *session.Client) <-chan session.StateChange {
	t.Helper()
	return stream(t, c.Subscribe)
}

// notifications returns the client's node events, stopped at cleanup.
func notifications(t *testing.T, c *session.Client) <-chan session.Event {
	t.Helper()
	return stream(t, c.Notifications)
}

// stream opens one of the client's streams, stopped at cleanup.
func stream[T any](t *testing.T, open func(context.Context) (<-chan T, error)) <-chan T {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch, err := open(ctx)
	require.NoError(t, err)
	return ch
}

// expect reads changes until it has seen want in order (other states may be
// interleaved only where allowed lists them), failing after waitLimit.
func expect(t *testing.T, ch <-chan session.StateChange, want ...session.State) []session.StateChange {
	t.Helper()
	var got []session.StateChange
	timeout := time.After(waitLimit)
	for len(got) < len(want) {
		select {
		case c, ok := <-ch:
			require.True(t, ok, "state channel closed; got %v", got)
			require.Equal(t, want[len(got)], c.State, "state change %d (so far %v)", len(got), got)
			got = append(got, c)
		case <-timeout:
			t.Fatalf("waited %v for states %v; got %v", waitLimit, want, got)
		}
	}
	return got
}

// closed waits (bounded) for ch to close.
func closed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitLimit):
		t.Fatalf("%s not closed after %v", what, waitLimit)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}
