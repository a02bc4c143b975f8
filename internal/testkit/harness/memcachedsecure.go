package harness

import (
	"crypto/tls"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// MemcachedSecurity configures a secured memcached server.
type MemcachedSecurity struct {
	// TLS, when set, makes the server speak TLS alone (-Z), with this
	// certificate (ssl_chain_cert, ssl_key); it asks clients for none.
	TLS *Cert
	// Users, when not empty, turns on ASCII authentication (-Y, an auth
	// file of "user:password" lines): user name to password. A client's
	// first command on each connection must then be
	// "set <any key> 0 0 <len>\r\n<user> <password>\r\n", answered STORED;
	// anything else is answered "CLIENT_ERROR unauthenticated" and the
	// connection is closed.
	Users map[string]string
}

// StartMemcachedSecure gives t one local memcached (as StartMemcached's:
// 64 MB, evictions off, a free 127.0.0.1 port) secured by sec, stopped by
// t.Cleanup. The auth file is written to the server's temp dir (mode
// 0600). Stop, Start and Kill work as for StartMemcached. The readiness
// probe speaks TLS to a TLS server (it checks that the server answers,
// not its certificate) and takes "CLIENT_ERROR unauthenticated" to its
// version command as up.
//
// MEMCACHED_ADDRS is not used: the security of its servers is not the
// test's to choose. Without memcached installed t is ended by
// Unavailable.
func StartMemcachedSecure(t testing.TB, sec MemcachedSecurity) *Memcached {
	t.Helper()
	if err := sec.check(); err != nil {
		t.Fatalf("StartMemcachedSecure: %v", err)
	}
	var extra []string
	if sec.TLS != nil {
		extra = append(extra, "-Z", "-o", "ssl_chain_cert="+sec.TLS.CertFile+",ssl_key="+sec.TLS.KeyFile)
	}
	argv := func(bin string, port int, dir string) []string {
		args := extra
		if len(sec.Users) > 0 {
			path := filepath.Join(dir, "auth")
			if err := os.WriteFile(path, []byte(sec.authFile()), 0o600); err != nil {
				t.Fatalf("memcached: %v", err)
			}
			args = append(slices.Clip(args), "-Y", path)
		}
		return memcachedArgv(megabytes, append([]string{"-M"}, args...)...)(bin, port, dir)
	}
	var cfg *tls.Config
	if sec.TLS != nil {
		// A liveness probe: it asks whether the server answers, not who it
		// is (the tests check certificates, and may issue wrong ones).
		cfg = &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}
	}
	probe := secureProbe(cfg, "version\r\n", func(r string) bool {
		return strings.HasPrefix(r, "VERSION ") || (len(sec.Users) > 0 && r == "CLIENT_ERROR unauthenticated\r\n")
	})
	const noEnv = "" // os.Getenv("") is empty: always a local process
	servers := startServers(t, 1, "memcached", noEnv, "memcached", memcachedHint, argv, probe)
	return wrapServers(servers, func(s Server) *Memcached { return &Memcached{s} })[0]
}

// check refuses users that an auth file cannot carry.
func (sec MemcachedSecurity) check() error {
	for user, pw := range sec.Users {
		switch {
		case user == "" || strings.ContainsFunc(user, func(r rune) bool { return r <= ' ' || r == ':' || r == 0x7f }):
			return fmt.Errorf("user %q: not empty, no spaces, colons or control characters", user)
		case pw == "" || strings.ContainsFunc(pw, func(r rune) bool { return r <= ' ' || r == 0x7f }):
			return fmt.Errorf("password of %q: not empty, no spaces or control characters", user)
		}
	}
	return nil
}

// authFile is the -Y file: "user:password" lines, sorted by user.
func (sec MemcachedSecurity) authFile() string {
	var b strings.Builder
	for _, user := range slices.Sorted(maps.Keys(sec.Users)) {
		fmt.Fprintf(&b, "%s:%s\n", user, sec.Users[user])
	}
	return b.String()
}
