package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"go.uber.org/goleak"
)

// The tests run the zklock binary, built once by TestMain (with -race when
// the tests are), as a real process against a real ZooKeeper: one
// standalone server for the package, started by the first test that needs
// it and stopped after all tests.

var zklockBin string // path of the built binary

var shared struct {
	once sync.Once
	zk   *harness.ZK
	err  error
}

// zkServers is the shared ZooKeeper's connect string; t is skipped (or
// fails, with ZKR_REQUIRE_INTEGRATION=1) when none can be had.
func zkServers(t testing.TB) string {
	t.Helper()
	shared.once.Do(func() { shared.zk, shared.err = harness.LaunchZK(1) })
	if shared.err != nil {
		harness.Unavailable(t, "zookeeper: %v", shared.err)
	}
	return shared.zk.ConnectString()
}

type closingM struct {
	m   *testing.M
	dir string
}

func (c closingM) Run() int {
	code := c.m.Run()
	if shared.zk != nil {
		if err := shared.zk.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "stop zookeeper:", err)
		}
	}
	os.RemoveAll(c.dir)
	return code
}

func TestMain(m *testing.M) {
	// The tests give zklock its secrets themselves (runZklockEnv).
	for _, v := range []string{dsnEnv, listenDSNEnv, redisPasswordEnv, sentinelPasswordEnv, "PGPASSWORD"} {
		os.Unsetenv(v)
	}
	dir, err := os.MkdirTemp("", "zklock-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	zklockBin = filepath.Join(dir, "zklock")
	args := []string{"build", "-o", zklockBin}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build zklock: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(closingM{m: m, dir: dir})
}
