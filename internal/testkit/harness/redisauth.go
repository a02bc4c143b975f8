package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// redisPasswords is the password of each password-protected redis server
// the harness started (StartRedisSecure, StartRedisClusterSecure,
// StartRedisSentinelSecure, and the sentinels of StartRedisSentinelAuth),
// by address, so that the harness's own commands to it (redisDo: health
// checks, ROLE, slot moves, failovers, SENTINEL queries) authenticate
// first. FreePorts never hands out a port twice in one process, so an
// address names one server.
var redisPasswords sync.Map // "127.0.0.1:port" → password

// securedArgv wraps argv (a redis-server command line) for a server
// secured by sec: its password and users go to a config file in the
// server's dir (mode 0600, not on the command line), which comes first
// (the options after it override its lines), and the password is
// remembered for the harness's own commands until t ends.
func securedArgv(t testing.TB, sec RedisSecurity, argv func(bin string, port int, dir string) []string) func(bin string, port int, dir string) []string {
	conf := sec.config()
	return func(bin string, port int, dir string) []string {
		path := filepath.Join(dir, "secure.conf")
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			t.Errorf("redis: %v", err) // the server then fails to start, saying so
		}
		rememberPassword(t, hostPort(port), sec.Password)
		return slices.Insert(argv(bin, port, dir), 1, path)
	}
}

// rememberPassword keeps password ("" for none) as the one of the server
// at addr, for the harness's own commands to it, until t ends.
func rememberPassword(t testing.TB, addr, password string) {
	if password == "" {
		return
	}
	if _, loaded := redisPasswords.LoadOrStore(addr, password); !loaded {
		t.Cleanup(func() { redisPasswords.Delete(addr) })
	}
}

// authRequest is the AUTH request the harness sends to addr before a
// command, or "" when it has no password.
func authRequest(addr string) string {
	pw, ok := redisPasswords.Load(addr)
	if !ok {
		return ""
	}
	return respCommand("AUTH", pw.(string))
}

// respCommand is args as a RESP request.
func respCommand(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	return b.String()
}
