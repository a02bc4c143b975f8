package harness

import (
	"strings"
	"testing"
	"time"
)

func TestRedisRestart(t *testing.T) {
	r := StartRedis(t)
	if r.External() {
		Unavailable(t, "stopping and killing redis needs a server this harness starts; REDIS_ADDRS is set")
	}
	addr := r.Addr()
	if err := redisPing(addr); err != nil {
		t.Fatal(err)
	}
	if got := redisCmd(t, addr, "SET k v\r\n"); got != "+OK\r\n" {
		t.Fatalf("SET: %q", got)
	}
	r.Stop(t)
	if err := redisPing(addr); err == nil {
		t.Fatal("PING answered after Stop")
	}
	r.Start(t)
	if r.Addr() != addr {
		t.Fatalf("address changed: %s -> %s", addr, r.Addr())
	}
	if got := redisCmd(t, addr, "GET k\r\n"); got != "$-1\r\n" {
		t.Fatalf("GET after restart without persistence: %q", got)
	}
	r.Kill(t)
	if err := redisPing(addr); err == nil {
		t.Fatal("PING answered after Kill")
	}
	r.Start(t)
	if err := redisPing(addr); err != nil {
		t.Fatal(err)
	}
}

// A server of REDIS_ADDRS cannot be stopped, started or killed: the test
// is skipped, or fails when Required.
func TestExternalRedis(t *testing.T) {
	addr := StartRedis(t).Addr() // the first of REDIS_ADDRS when it is set
	t.Setenv("REDIS_ADDRS", addr)
	r := StartRedis(t)
	if !r.External() || r.Addr() != addr {
		t.Fatalf("external redis: external=%v addr=%s, want %s", r.External(), r.Addr(), addr)
	}
	checkCannotControl(t, "Stop of an external redis", "REDIS_ADDRS", r.Stop)
	checkCannotControl(t, "Start of an external redis", "REDIS_ADDRS", r.Start)
	checkCannotControl(t, "Kill of an external redis", "REDIS_ADDRS", r.Kill)
	if err := redisPing(addr); err != nil {
		t.Fatalf("the external redis after the refused faults: %v", err)
	}
}

func TestRedisN(t *testing.T) {
	rs := StartRedisN(t, 3)
	seen := map[string]bool{}
	for _, r := range rs {
		if seen[r.Addr()] {
			t.Fatalf("duplicate address %s", r.Addr())
		}
		seen[r.Addr()] = true
		if err := redisPing(r.Addr()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMemcachedRestart(t *testing.T) {
	m := StartMemcached(t)
	if m.External() {
		Unavailable(t, "stopping memcached needs a server this harness starts; MEMCACHED_ADDRS is set")
	}
	addr := m.Addr()
	if got := memcachedCmd(t, addr, "set k 0 0 1\r\nv\r\n"); got != "STORED\r\n" {
		t.Fatalf("set: %q", got)
	}
	if got := memcachedCmd(t, addr, "get k\r\n"); got != "VALUE k 0 1\r\nv\r\nEND\r\n" {
		t.Fatalf("get: %q", got)
	}
	m.Stop(t)
	if err := memcachedVersion(addr); err == nil {
		t.Fatal("version answered after Stop")
	}
	m.Start(t)
	if got := memcachedCmd(t, addr, "get k\r\n"); got != "END\r\n" {
		t.Fatalf("get after restart: %q", got)
	}
	m.Kill(t)
	m.Start(t)
	if err := memcachedVersion(m.Addr()); err != nil {
		t.Fatal(err)
	}
}

// A probe that gets the wrong server's answer fails, naming the command
// and the reply.
func TestProbeRefusesAnotherServer(t *testing.T) {
	m := StartMemcached(t)
	err := redisPing(m.Addr())
	if err == nil || !strings.Contains(err.Error(), `"PING" to `) || !strings.Contains(err.Error(), "ERROR") {
		t.Fatalf("redis PING to memcached: %v", err)
	}
}

// redisCmd sends one inline command and returns the one-line reply.
func redisCmd(t *testing.T, addr, cmd string) string {
	t.Helper()
	reply, err := exchange(addr, cmd, 2*time.Second, func(r string) bool { return strings.HasSuffix(r, "\r\n") })
	if err != nil {
		t.Fatalf("%q to %s: %v", cmd, addr, err)
	}
	return reply
}

// memcachedCmd sends a command and returns the reply up to its last line
// (STORED, END, ERROR...).
func memcachedCmd(t *testing.T, addr, cmd string) string {
	t.Helper()
	reply, err := exchange(addr, cmd, 2*time.Second, func(r string) bool {
		for _, end := range []string{"STORED\r\n", "END\r\n", "ERROR\r\n"} {
			if strings.HasSuffix(r, end) {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("%q to %s: %v", cmd, addr, err)
	}
	return reply
}
