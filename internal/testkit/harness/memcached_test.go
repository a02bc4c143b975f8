package harness

import (
	"strings"
	"testing"
)

// StartMemcached's servers run with evictions off (-M), as
// compat/memcachedlock requires; StartMemcachedEvicting's evict, with the
// memory asked for.
func TestMemcachedEvictionSetting(t *testing.T) {
	m := StartMemcached(t)
	if !m.External() {
		if got := memcachedCmd(t, m.Addr(), "stats settings\r\n"); !strings.Contains(got, "STAT evictions off\r\n") {
			t.Errorf("StartMemcached: stats settings says %q", got)
		}
	}
	e := StartMemcachedEvicting(t, 2)
	got := memcachedCmd(t, e.Addr(), "stats settings\r\n")
	if !strings.Contains(got, "STAT evictions on\r\n") || !strings.Contains(got, "STAT maxbytes 2097152\r\n") {
		t.Errorf("StartMemcachedEvicting(2): stats settings says %q", got)
	}
}

// StartMemcachedRestartable's server keeps its items and its CAS counter
// across StopWarm and Start (a warm restart), and loses them across Stop
// and Start (a cold one).
func TestMemcachedWarmRestart(t *testing.T) {
	m := StartMemcachedRestartable(t)
	addr := m.Addr()
	if got := memcachedCmd(t, addr, "set k 0 0 1\r\nv\r\n"); got != "STORED\r\n" {
		t.Fatalf("set: %q", got)
	}
	before := memcachedCmd(t, addr, "gets k\r\n")
	m.StopWarm(t)
	m.Start(t)
	if got := memcachedCmd(t, addr, "gets k\r\n"); got != before {
		t.Fatalf("gets after a warm restart: %q, want %q (the item and its CAS kept)", got, before)
	}
	m.Stop(t)
	m.Start(t)
	if got := memcachedCmd(t, addr, "get k\r\n"); got != "END\r\n" {
		t.Fatalf("get after a cold restart: %q", got)
	}
}
