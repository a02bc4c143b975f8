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
