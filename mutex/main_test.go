package mutex_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/integration"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
	"github.com/zkrecipes/zkrecipes/session"
	"go.uber.org/goleak"
)

var shared struct {
	once sync.Once
	zk   *integration.ZK
	err  error
}

// sharedServers is one standalone ZooKeeper for the tests that do not stop it.
func sharedServers(t testing.TB) []string {
	t.Helper()
	shared.once.Do(func() { shared.zk, shared.err = integration.LaunchZK(1) })
	if shared.err != nil {
		integration.Unavailable(t, "zookeeper: %v", shared.err)
	}
	return shared.zk.Servers()
}

type closingM struct{ m *testing.M }

func (c closingM) Run() int {
	code := c.m.Run()
	if shared.zk != nil {
		_ = shared.zk.Close()
	}
	return code
}

func TestMain(m *testing.M) {
	locktest.RunHolderIfChild(newHolderLocker) // a child process of TestHolderKilled
	goleak.VerifyTestMain(closingM{m})
}

const waitLimit = 60 * time.Second

func quiet() session.Option {
	return session.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// connect opens a session client closed at cleanup.
func connect(t testing.TB, servers []string, opts ...session.Option) *session.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	c, err := session.Connect(ctx, servers, append([]session.Option{quiet()}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}
