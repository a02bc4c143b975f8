package harness

import (
	"strings"
	"testing"
)

// ASCII authentication: nothing is served before a connection
// authenticates with a "set" of "user password"; a wrong password is
// refused; evictions stay off.
func TestMemcachedSecureAuth(t *testing.T) {
	m := StartMemcachedSecure(t, MemcachedSecurity{Users: map[string]string{"alice": "s3cret", "bob": "other"}})
	if got := lines(t, m.Addr(), nil, "version\r\n", 1); got[0] != "CLIENT_ERROR unauthenticated" {
		t.Fatalf("version before authenticating: %q", got)
	}
	if got := lines(t, m.Addr(), nil, "set a 0 0 11\r\nalice wrong\r\n", 1); !strings.HasPrefix(got[0], "CLIENT_ERROR") {
		t.Fatalf("a wrong password: %q", got)
	}
	got := lines(t, m.Addr(), nil, "set a 0 0 12\r\nalice s3cret\r\nversion\r\nstats settings\r\n", 2)
	if got[0] != "STORED" || !strings.HasPrefix(got[1], "VERSION ") {
		t.Fatalf("authenticated as alice: %q", got)
	}
	if got := lines(t, m.Addr(), nil, "set a 0 0 9\r\nbob other\r\nversion\r\n", 2); got[0] != "STORED" || !strings.HasPrefix(got[1], "VERSION ") {
		t.Fatalf("authenticated as bob: %q", got)
	}
	settings := strings.Join(linesUntil(t, m.Addr(), nil, "set a 0 0 12\r\nalice s3cret\r\nstats settings\r\n",
		func(out []string) bool { return len(out) > 0 && out[len(out)-1] == "END" }), "\n")
	if !strings.Contains(settings, "STAT evictions off") {
		t.Errorf("stats settings: %q", settings)
	}
}

// TLS alone: a client that trusts the CA is served, a plain one is not,
// and a restarted server is probed over TLS.
func TestMemcachedSecureTLS(t *testing.T) {
	ca := NewCA(t, "")
	m := StartMemcachedSecure(t, MemcachedSecurity{TLS: ca.Issue(t, "memcached", Loopback)})
	if got := lines(t, m.Addr(), ca.ClientConfig(nil), "version\r\n", 1); !strings.HasPrefix(got[0], "VERSION ") {
		t.Fatalf("version over TLS: %q", got)
	}
	if reply, err := secureExchange(m.Addr(), nil, "version\r\n", probeTimeout); strings.HasPrefix(reply, "VERSION") {
		t.Fatalf("plain version to the TLS port: %q, %v; want no answer", reply, err)
	}
	m.Stop(t)
	m.Start(t)
	if got := lines(t, m.Addr(), ca.ClientConfig(nil), "version\r\n", 1); !strings.HasPrefix(got[0], "VERSION ") {
		t.Fatalf("version over TLS after a restart: %q", got)
	}
}

func TestMemcachedSecurityRefused(t *testing.T) {
	for _, users := range []map[string]string{{"a:b": "pw"}, {"a b": "pw"}, {"": "pw"}, {"a": ""}, {"a": "two words"}} {
		if err := (MemcachedSecurity{Users: users}).check(); err == nil {
			t.Errorf("%q: accepted", users)
		}
	}
	sec := MemcachedSecurity{Users: map[string]string{"b": "2", "a": "1"}}
	if err := sec.check(); err != nil {
		t.Errorf("refused: %v", err)
	}
	if got := sec.authFile(); got != "a:1\nb:2\n" {
		t.Errorf("auth file %q", got)
	}
}
