package harness

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// RedisSecurity configures a secured redis server.
type RedisSecurity struct {
	Password string   // requirepass (the default user's password); "" for none
	Users    []string // ACL rules, one user each, as in redis.conf's "user" lines without the word "user": e.g. "locker on >pw ~app:* &app:* +@all"
	TLS      *Cert    // when set, the server listens on a TLS port (tls-port) with this certificate, trusting CA for client certs
	CA       *CA      // with TLS: tls-ca-cert-file; client certificates are optional (tls-auth-clients optional)
}

// StartRedisSecure gives t one local redis server (as StartRedis's: no
// persistence, a free 127.0.0.1 port, its own temp dir) secured by sec,
// stopped by t.Cleanup. The password and the users are written to a
// config file in the server's temp dir (mode 0600), not on its command
// line.
//
// With sec.TLS the server listens on TLS alone: its plain port is off
// (port 0), and Addr and TLSAddr are the same address, that of its TLS
// port; sec.CA is then required (redis needs a CA to verify client
// certificates against, and asks for none: tls-auth-clients optional).
// Without sec.TLS, Addr is its plain port and TLSAddr is "".
//
// Stop, Start and Kill work as for StartRedis; a restarted server has the
// same users and password, and is empty. The readiness probe takes a PING
// answered with NOAUTH as up (the server asks for a password), and speaks
// TLS to a TLS server (it checks that the server answers, not its
// certificate).
//
// REDIS_ADDRS is not used: the security of its servers is not the test's
// to choose. Without redis-server installed t is ended by Unavailable.
func StartRedisSecure(t testing.TB, sec RedisSecurity) *Redis {
	t.Helper()
	if err := sec.check(); err != nil {
		t.Fatalf("StartRedisSecure: %v", err)
	}
	secured := securedArgv(t, sec, redisArgv)
	argv := func(bin string, port int, dir string) []string {
		// The options after the config file override its lines and each
		// other (the last "port" wins).
		argv := secured(bin, port, dir)
		if sec.TLS != nil {
			argv = append(argv, "--port", "0", "--tls-port", strconv.Itoa(port),
				"--tls-cert-file", sec.TLS.CertFile, "--tls-key-file", sec.TLS.KeyFile,
				"--tls-ca-cert-file", sec.CA.CertFile, "--tls-auth-clients", "optional")
		}
		return argv
	}
	probe := redisSecurePing(nil)
	if sec.TLS != nil {
		// A liveness probe: it asks whether the server answers, not who it
		// is (the tests check certificates, and may issue wrong ones).
		probe = redisSecurePing(&tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12})
	}
	const noEnv = "" // os.Getenv("") is empty: always a local process
	servers := startServers(t, 1, "redis", noEnv, "redis-server", redisLocalHint, argv, probe)
	return wrapServers(servers, func(s Server) *Redis { return &Redis{Server: s, tls: sec.TLS != nil} })[0]
}

// TLSAddr is the address of the server's TLS port, "127.0.0.1:port" (the
// same as Addr: a TLS server has no plain port), or "" when it has none.
func (r *Redis) TLSAddr() string {
	if !r.tls {
		return ""
	}
	return r.Addr()
}

// checkPlain is check for a setup that does not take TLS (a cluster, a
// sentinel setup), what naming it.
func (sec RedisSecurity) checkPlain(what string) error {
	if sec.TLS != nil {
		return fmt.Errorf("%s: TLS is not supported here", what)
	}
	return sec.check()
}

// check refuses what redis.conf cannot carry, or a TLS server without a
// CA.
func (sec RedisSecurity) check() error {
	switch {
	case sec.TLS != nil && sec.CA == nil:
		return fmt.Errorf("TLS needs a CA (tls-ca-cert-file)")
	case sec.TLS == nil && sec.CA != nil:
		return fmt.Errorf("a CA without TLS: set TLS too")
	case sec.Password != "" && strings.ContainsFunc(sec.Password, func(r rune) bool { return r <= ' ' || r == '"' || r == '\'' || r == 0x7f }):
		return fmt.Errorf("password %q: no spaces, quotes or control characters (it goes on a redis.conf line)", sec.Password)
	}
	for _, u := range sec.Users {
		if strings.TrimSpace(u) == "" || strings.ContainsAny(u, "\r\n") {
			return fmt.Errorf("user %q: one redis.conf \"user\" line's rules, not empty", u)
		}
	}
	return nil
}

// config is the server's config file: its password (also the one a
// replica gives its master) and users.
func (sec RedisSecurity) config() string {
	var b strings.Builder
	b.WriteString("# written by the zkrecipes test harness\n")
	if sec.Password != "" {
		fmt.Fprintf(&b, "masterauth %s\n", sec.Password)
	}
	b.WriteString(sec.accessConfig())
	return b.String()
}

// accessConfig is the config lines of who may use a server, data node or
// sentinel: requirepass and the users.
func (sec RedisSecurity) accessConfig() string {
	var b strings.Builder
	if sec.Password != "" {
		fmt.Fprintf(&b, "requirepass %s\n", sec.Password)
	}
	for _, u := range sec.Users {
		fmt.Fprintf(&b, "user %s\n", u)
	}
	return b.String()
}

// redisSecurePing is redisPing over TLS when cfg is not nil, that also
// takes NOAUTH (a password is required) as up.
func redisSecurePing(cfg *tls.Config) func(addr string) error {
	return secureProbe(cfg, "PING\r\n", func(r string) bool {
		return r == "+PONG\r\n" || strings.HasPrefix(r, "-NOAUTH ")
	})
}

// probeTimeout bounds one probe of a secured server.
const probeTimeout = 2 * time.Second

// secureProbe returns a probe that sends cmd, over TLS when cfg is not
// nil, and accepts the one-line reply when ok says so.
func secureProbe(cfg *tls.Config, cmd string, ok func(reply string) bool) func(addr string) error {
	return func(addr string) error {
		reply, err := secureExchange(addr, cfg, cmd, probeTimeout)
		if err != nil {
			return err
		}
		if !ok(reply) {
			return fmt.Errorf("%q to %s: %q", strings.TrimSpace(cmd), addr, reply)
		}
		return nil
	}
}

// secureExchange dials addr (with TLS when cfg is not nil), writes req
// and returns the first line of the reply, CRLF included; within timeout.
func secureExchange(addr string, cfg *tls.Config, req string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var conn net.Conn
	var err error
	if cfg != nil {
		d := tls.Dialer{Config: cfg}
		conn, err = d.DialContext(ctx, "tcp", addr)
	} else {
		var d net.Dialer
		conn, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	if _, err := conn.Write([]byte(req)); err != nil {
		return "", err
	}
	line := make([]byte, 0, 64)
	buf := make([]byte, 1)
	for len(line) < 4096 { // bounded: a one-line reply
		if _, err := conn.Read(buf); err != nil {
			return string(line), err
		}
		line = append(line, buf[0])
		if buf[0] == '\n' {
			return string(line), nil
		}
	}
	return string(line), fmt.Errorf("reply from %s: no line end in %d bytes", addr, len(line))
}
