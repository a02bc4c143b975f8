package rwlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/integration"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/session"
	"go.uber.org/goleak"
)

var shared struct {
	once sync.Once
	zk   *integration.ZK
	err  error
}

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

// newHolderLocker builds the half ("read" or "write") a holder child takes.
func newHolderLocker(c *session.Client, path, kind string) (recipes.Locker, error) {
	l, err := rwlock.New(c, path)
	if err != nil {
		return nil, err
	}
	if kind == "read" {
		return l.ReadLock(), nil
	}
	return l.WriteLock(), nil
}

const waitLimit = 60 * time.Second

func connect(t testing.TB, servers []string, opts ...session.Option) *session.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	c, err := session.Connect(ctx, servers, append([]session.Option{session.WithLogger(nil)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

func newRW(t testing.TB, c *session.Client, path string) *rwlock.RWLock {
	t.Helper()
	l, err := rwlock.New(c, path)
	require.NoError(t, err)
	return l
}
