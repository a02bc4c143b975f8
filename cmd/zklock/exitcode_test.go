package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A backend that cannot be reached exits 69, never the "held" code 75,
// with and without --timeout, on every backend, naming the last error
// (here: the connection refused). With ZooKeeper and --timeout shorter
// than the connection timeout the timeout ends the connecting: still an
// outage, not a lock found held.
func TestUnreachableIsNotBusy(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  []string
	}{
		{name: "zk", args: []string{"--servers", "127.0.0.1:1"}},
		{name: "redis", args: []string{"--backend", "redis", "--redis", "127.0.0.1:1"}},
		{name: "redis-cluster", args: []string{"--backend", "redis-cluster", "--redis", "127.0.0.1:1"}},
		{name: "redis-sentinel", args: []string{"--backend", "redis-sentinel", "--sentinel", "127.0.0.1:1", "--master", "m"}},
		{name: "redlock", args: []string{"--backend", "redlock", "--redis", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"}},
		{name: "memcached", args: []string{"--backend", "memcached", "--memcached", "127.0.0.1:1"}},
		{name: "postgres", args: []string{"--backend", "postgres", "--dsn", "postgres://u@127.0.0.1:1/db?sslmode=disable"}},
		{name: "mysql", args: []string{"--backend", "mysql", "--dsn", "u@tcp(127.0.0.1:1)/db"}},
	} {
		for _, timeout := range []string{"", "3s"} {
			t.Run(tc.name+"/timeout="+timeout, func(t *testing.T) {
				t.Parallel()
				args := append([]string(nil), tc.args...)
				if timeout != "" {
					args = append(args, "--timeout", timeout)
				}
				code, p := runZklockEnv(t, tc.env, append(args, "/x", "--", "echo", "ran")...)
				assert.Equal(t, exitUnavailable, code, "stderr: %s", p.stderr)
				assert.Empty(t, p.stdout.String(), "the command must not run")
				stderr := p.stderr.String()
				assert.True(t, strings.Contains(stderr, "connection refused") || strings.Contains(stderr, "connect: "),
					"the last error is named: %s", stderr)
			})
		}
	}
}
