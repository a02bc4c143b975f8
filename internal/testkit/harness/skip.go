package harness

import (
	"errors"
	"fmt"
	"os"
	"testing"
)

// RequireEnv is the environment variable that turns a missing server from a
// skipped test into a failed one. `make test` and CI set it to 1.
const RequireEnv = "ZKR_REQUIRE_INTEGRATION"

// ErrUnavailable matches (errors.Is) the error of LaunchZK when no server can
// be had at all: nothing installed, no Docker daemon, and no (or too few)
// addresses in the environment. A TestMain can test for it and then skip its
// tests, or fail when Required.
var ErrUnavailable = errors.New("server unavailable")

// How to get each kind of server, quoted by Unavailable's callers.
const (
	zkHint = "install it (Debian/Ubuntu: apt-get install zookeeper default-jre-headless; " +
		"or unpack a release and set ZOOKEEPER_HOME), start a Docker daemon, " +
		"or point ZK_SERVERS=host:port,... at running servers"
	redisHint = "install it (Debian/Ubuntu: apt-get install redis-server) " +
		"or point REDIS_ADDRS=host:port,... at running servers"
	memcachedHint = "install it (Debian/Ubuntu: apt-get install memcached) " +
		"or point MEMCACHED_ADDRS=host:port,... at running servers"
)

// Required reports whether ZKR_REQUIRE_INTEGRATION=1, as set by `make test`
// and CI: then a test whose server, or a fault it injects, cannot be had
// fails instead of skipping.
func Required() bool {
	return os.Getenv(RequireEnv) == "1"
}

// Unavailable ends t because something it needs cannot be had: a server,
// or a fault it injects (stopping, killing or pausing a server this
// harness did not start, as those of ZK_SERVERS, REDIS_ADDRS and
// MEMCACHED_ADDRS). The message, formatted from format and args, should
// say what is missing and how to get it (apt-get install ..., or
// ZK_SERVERS=...). t is skipped, or fails when Required: a run that must
// test everything is never green with a fault skipped.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Required() {
		t.Fatalf("%s\n(%s=1, so what this run cannot have is a failure, not a skip)", msg, RequireEnv)
	}
	t.Skip(msg)
}

// unavailableError is an error that errors.Is matches with ErrUnavailable,
// without repeating ErrUnavailable's text.
type unavailableError struct{ msg string }

func (e *unavailableError) Error() string        { return e.msg }
func (e *unavailableError) Is(target error) bool { return target == ErrUnavailable }

// unavailablef returns an error that matches ErrUnavailable.
func unavailablef(format string, args ...any) error {
	return &unavailableError{fmt.Sprintf(format, args...)}
}

// skipOrFail ends t for err: Unavailable when err matches ErrUnavailable
// (whose text says how to get the server), t.Fatal otherwise.
func skipOrFail(t testing.TB, what string, err error) {
	t.Helper()
	if errors.Is(err, ErrUnavailable) {
		Unavailable(t, "%s: %v", what, err)
		return
	}
	t.Fatalf("%s: %v", what, err)
}
