package session_test

import (
	"sync"
	"testing"

	"github.com/zkrecipes/zkrecipes/integration"
	"go.uber.org/goleak"
)

// shared is one standalone ZooKeeper for the tests that do not disturb it.
var shared struct {
	once sync.Once
	zk   *integration.ZK
	err  error
}

func sharedZK(t *testing.T) *integration.ZK {
	t.Helper()
	shared.once.Do(func() { shared.zk, shared.err = integration.LaunchZK(1) })
	if shared.err != nil {
		integration.Unavailable(t, "zookeeper: %v", shared.err)
	}
	return shared.zk
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
	goleak.VerifyTestMain(closingM{m})
}
