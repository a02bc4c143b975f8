package integration

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Linking this package makes the core harness fall back to a container.
func TestContainerSourceIsRegistered(t *testing.T) {
	if harness.ZKSource == nil {
		t.Fatal("harness.ZKSource is not set")
	}
}

// A container offers one member only: an ensemble is Unavailable, whether
// or not a Docker daemon answers, and nothing panics.
func TestContainerEnsembleIsUnavailable(t *testing.T) {
	if _, err := launchContainerZK(3); !errors.Is(err, harness.ErrUnavailable) {
		t.Fatalf("launchContainerZK(3) = %v, want ErrUnavailable", err)
	}
}

// With a Docker daemon, the container serves; without one (as on machines
// with no Docker engine), the error is ErrUnavailable, never a panic.
func TestContainerZK(t *testing.T) {
	z, err := launchContainerZK(1)
	if dockerHealthy() != nil {
		if !errors.Is(err, harness.ErrUnavailable) {
			t.Fatalf("without a Docker daemon: %v, want ErrUnavailable", err)
		}
		t.Logf("no Docker daemon: %v", err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	c, _, err := zk.Connect(z.Servers(), 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create("/container-test", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
}
