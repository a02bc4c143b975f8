package harness

import (
	"bufio"
	"context"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"
)

// A password: PING is refused until AUTH, the probe took the server as up
// all the same, and a restarted server asks for it again.
func TestRedisSecurePassword(t *testing.T) {
	r := StartRedisSecure(t, RedisSecurity{Password: "s3cret"})
	if r.TLSAddr() != "" {
		t.Errorf("TLSAddr without TLS: %q", r.TLSAddr())
	}
	if got := lines(t, r.Addr(), nil, "PING\r\n", 1); !strings.HasPrefix(got[0], "-NOAUTH ") {
		t.Fatalf("PING without AUTH: %q", got)
	}
	if got := lines(t, r.Addr(), nil, "AUTH wrong\r\n", 1); !strings.HasPrefix(got[0], "-WRONGPASS ") {
		t.Fatalf("AUTH with a wrong password: %q", got)
	}
	if got := lines(t, r.Addr(), nil, "AUTH s3cret\r\nPING\r\n", 2); got[0] != "+OK" || got[1] != "+PONG" {
		t.Fatalf("AUTH, PING: %q", got)
	}
	r.Stop(t)
	r.Start(t)
	if got := lines(t, r.Addr(), nil, "PING\r\nAUTH s3cret\r\nPING\r\n", 3); !strings.HasPrefix(got[0], "-NOAUTH ") || got[2] != "+PONG" {
		t.Fatalf("after a restart: %q", got)
	}
}

// An ACL user has its keys and commands, and nothing else.
func TestRedisSecureUsers(t *testing.T) {
	r := StartRedisSecure(t, RedisSecurity{
		Password: "admin",
		Users:    []string{"locker on >pw ~app:* &app:* +get +set +publish", "reader on >rpw ~* +get"},
	})
	got := lines(t, r.Addr(), nil, "AUTH locker pw\r\nSET app:k v\r\nGET app:k\r\nGET other\r\nDEL app:k\r\nPUBLISH app:c m\r\nPUBLISH other m\r\n", 8)
	want := []string{"+OK", "+OK", "$1", "v", "-NOPERM ", "-NOPERM ", ":0", "-NOPERM "}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Fatalf("reply %d: %q, want %q...; all: %q", i, got[i], want[i], got)
		}
	}
	if got := lines(t, r.Addr(), nil, "AUTH reader rpw\r\nGET app:k\r\nSET app:k w\r\n", 4); got[2] != "v" || !strings.HasPrefix(got[3], "-NOPERM ") {
		t.Fatalf("the second user: %q", got)
	}
}

// TLS alone: the plain port is off, a client that trusts the CA is
// served (with or without a certificate of its own), one that does not is
// refused by its own check, and a restarted server is probed over TLS.
func TestRedisSecureTLS(t *testing.T) {
	ca := NewCA(t, "")
	r := StartRedisSecure(t, RedisSecurity{TLS: ca.Issue(t, "redis", Loopback), CA: ca})
	if r.TLSAddr() == "" || r.TLSAddr() != r.Addr() {
		t.Fatalf("TLSAddr %q, Addr %q: want the same TLS address", r.TLSAddr(), r.Addr())
	}
	if got := lines(t, r.TLSAddr(), ca.ClientConfig(nil), "PING\r\n", 1); got[0] != "+PONG" {
		t.Fatalf("PING over TLS: %q", got)
	}
	client := ca.ClientConfig(ca.Issue(t, "client", "client"))
	if got := lines(t, r.TLSAddr(), client, "PING\r\n", 1); got[0] != "+PONG" {
		t.Fatalf("PING over TLS with a client certificate: %q", got)
	}
	if reply, err := secureExchange(r.Addr(), nil, "PING\r\n", time.Second); strings.HasPrefix(reply, "+PONG") {
		t.Fatalf("plain PING to the TLS port: %q, %v; want no answer", reply, err)
	}
	other := NewCA(t, "another CA")
	// A generous bound: under load the refusal takes a while, and the
	// bound is not what the test measures.
	if _, err := secureExchange(r.TLSAddr(), other.ClientConfig(nil), "PING\r\n", 30*time.Second); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a client that trusts another CA: %v; want a certificate error", err)
	}
	r.Stop(t)
	r.Start(t)
	if got := lines(t, r.TLSAddr(), ca.ClientConfig(nil), "PING\r\n", 1); got[0] != "+PONG" {
		t.Fatalf("PING over TLS after a restart: %q", got)
	}
}

func TestRedisSecurityRefused(t *testing.T) {
	ca := &CA{}
	for _, tc := range []struct {
		sec  RedisSecurity
		want string
	}{
		{RedisSecurity{TLS: &Cert{}}, "needs a CA"},
		{RedisSecurity{CA: ca}, "without TLS"},
		{RedisSecurity{Password: "two words"}, "no spaces"},
		{RedisSecurity{Password: `q"uote`}, "quotes"},
		{RedisSecurity{Users: []string{"a on\nuser b on"}}, "one redis.conf"},
		{RedisSecurity{Users: []string{" "}}, "not empty"},
	} {
		if err := tc.sec.check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.sec, err, tc.want)
		}
	}
	if err := (RedisSecurity{Password: "pw", Users: []string{"u on >p ~* +@all"}, TLS: &Cert{}, CA: ca}).check(); err != nil {
		t.Errorf("a good one refused: %v", err)
	}
	if got := (RedisSecurity{Password: "pw", Users: []string{"u on >p"}}).config(); !strings.Contains(got, "\nmasterauth pw\nrequirepass pw\nuser u on >p\n") {
		t.Errorf("config: %q", got)
	}
}

// lines sends req to addr (over TLS with cfg, when not nil) and returns
// the first n lines of the reply, without their CRLF.
func lines(t *testing.T, addr string, cfg *tls.Config, req string, n int) []string {
	t.Helper()
	return linesUntil(t, addr, cfg, req, func(out []string) bool { return len(out) == n })
}

// linesUntil sends req to addr (over TLS with cfg, when not nil) and
// returns the lines of the reply, without their CRLF, until done says
// they are all there.
func linesUntil(t *testing.T, addr string, cfg *tls.Config, req string, done func([]string) bool) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var conn net.Conn
	var err error
	if cfg != nil {
		conn, err = (&tls.Dialer{Config: cfg}).DialContext(ctx, "tcp", addr)
	} else {
		conn, err = (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	if err := conn.SetDeadline(deadline); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatalf("%q to %s: %v", req, addr, err)
	}
	rd := bufio.NewReader(conn)
	var out []string
	for !done(out) {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("%q to %s: %v after %q", req, addr, err, out)
		}
		out = append(out, strings.TrimSuffix(line, "\r\n"))
	}
	return out
}
