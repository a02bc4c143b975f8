package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/recipes/refusal"
	"github.com/zkrecipes/zkrecipes/session"
)

func TestReadAuthFile(t *testing.T) {
	creds, err := readAuthFile(secretFile(t, "a", "# comment\n\n  digest alice:pw:with:colons  \ndigest bob:\r\n"))
	require.NoError(t, err)
	assert.Equal(t, []digestCred{{"alice", "pw:with:colons"}, {"bob", ""}}, creds)

	for content, msg := range map[string]string{
		"sasl bob:s3cr3t\n":       `line 1: scheme "sasl" is not supported`,
		"\nbob:s3cr3t\n":          `line 2: want "digest USER:PASSWORD"`,
		"Bob:s3cr3t x\n":          `line 1: want "digest USER:PASSWORD"`, // not a scheme's name: not shown
		"digest :s3cr3t\n":        `line 1: want "digest USER:PASSWORD"`,
		"digest s3cr3t\n":         `line 1: want "digest USER:PASSWORD"`,
		"# only a comment\n":      `no "digest USER:PASSWORD" line in it`,
		"digest a:b\nip s3cr3t\n": `line 2: scheme "ip" is not supported`,
		"s3cr3t alice\n":          `line 1: want "digest USER:PASSWORD"`, // a password first: a word like a scheme's name
		"s3cr3tpw alice:x\n":      `line 1: want "digest USER:PASSWORD"`,
		"kerberos s3cr3t\n":       `line 1: scheme "kerberos" is not supported`,
		"x509 s3cr3t\n":           `line 1: scheme "x509" is not supported`,
	} {
		_, err := readAuthFile(secretFile(t, "a", content))
		require.Error(t, err, "%q", content)
		assert.Contains(t, err.Error(), msg, "%q", content)
		assert.NotContains(t, err.Error(), "s3cr3t", "%q", content)
	}
}

func TestValidateACL(t *testing.T) {
	for _, tc := range []struct {
		mode, authFile, want, err string
	}{
		{"", "", aclOpen, ""},
		{"", "f", aclCreator, ""},
		{"open", "f", aclOpen, ""},
		{"read", "f", aclRead, ""},
		{"creator", "", "", "--acl creator needs --auth-file"},
		{"read", "", "", "--acl read needs --auth-file"},
		{"world", "f", "", `unknown --acl "world"`},
	} {
		mode := tc.mode
		err := validateACL(&mode, tc.authFile)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, "%+v", tc)
			continue
		}
		require.NoError(t, err, "%+v", tc)
		assert.Equal(t, tc.want, mode, "%+v", tc)
	}
	assert.Equal(t, session.AuthACL(session.PermAll), aclFor(aclCreator))
	assert.Equal(t, session.WorldACL(session.PermAll), aclFor(aclOpen))
	assert.Equal(t, []session.ACL{{Perms: session.PermAll, Scheme: "auth"}, {Perms: session.PermRead, Scheme: "world", ID: "anyone"}}, aclFor(aclRead))
}

func TestParseRedisServers(t *testing.T) {
	_, err := parseRedisServers("--redis", "h1:1, redis://app@h2:2/3", nil)
	require.Error(t, err, "a bare address has no user: not the same as app")
	s, err := parseRedisServers("--redis", "h1:1, h2:2", nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"h1:1", "h2:2"}, s.addrs())
	assert.False(t, s.tls)

	s, err = parseRedisServers("--redis", "rediss://app@h1:1/2,rediss://app@h2", &tlsOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"h1:1", "h2:6379"}, s.addrs())
	assert.True(t, s.tls)
	assert.Equal(t, "app", s.opts[0].Username)
	assert.Equal(t, 2, s.opts[0].DB)
	assert.Equal(t, "h1", s.opts[0].TLSConfig.ServerName, "each server is checked as its own host")
	pool := x509.NewCertPool()
	s.apply("pw", &tlsOptions{roots: pool})
	assert.Equal(t, "pw", s.opts[1].Password)
	assert.Same(t, pool, s.opts[1].TLSConfig.RootCAs)
	assert.Empty(t, s.tlsConfig().ServerName, "a cluster's or sentinel's: the host dialed")
	assert.Same(t, pool, s.tlsConfig().RootCAs)

	for list, msg := range map[string]string{
		"redis://u:s3cr3t@h:1":   "--redis redis://u:xxxxx@h:1: a password on the command line is refused",
		"u:s3cr3t@h:1":           "--redis u:xxxxx@h:1: a password on the command line is refused",
		"u@h:1":                  "--redis u@h:1: want HOST:PORT, redis://",
		"h:1,":                   "empty server address",
		"unix:///tmp/redis.sock": "want HOST:PORT, redis://",
		"rediss://h:1,h:2":       "every server must have the same scheme",
		"redis://h:notaport":     "--redis redis://h:notaport: ",
	} {
		_, err := parseRedisServers("--redis", list, nil)
		require.Error(t, err, list)
		assert.Contains(t, err.Error(), msg, list)
		assert.NotContains(t, err.Error(), "s3cr3t", list)
	}
	_, err = parseRedisServers("--redis", "redis://h:1", &tlsOptions{ca: "ca.pem"})
	assert.ErrorContains(t, err, "give --redis as rediss://HOST:PORT")
}

func TestDSNSource(t *testing.T) {
	file := secretFile(t, "dsn", "postgres://u:s3cr3t@h/db\nsecond line\n")
	for _, tc := range []struct {
		name            string
		env             string
		value, file     string
		set             map[string]bool
		want, from, err string
	}{
		{name: "none"},
		{name: "flag", value: "postgres://u@h/db", set: map[string]bool{"dsn": true}, want: "postgres://u@h/db", from: "--dsn"},
		{name: "env", env: "postgres://u:s3cr3t@h/db", want: "postgres://u:s3cr3t@h/db", from: "$ZKLOCK_DSN"},
		{name: "file", file: file, set: map[string]bool{"dsn-file": true}, want: "postgres://u:s3cr3t@h/db", from: "--dsn-file"},
		{name: "password in the flag", value: "host=h password=s3cr3t", set: map[string]bool{"dsn": true},
			err: "--dsn host=h password=xxxxx: a password on the command line is refused"},
		// A flag wins over the environment (a zklock run by another's
		// COMMAND inherits its $ZKLOCK_DSN); the two flags together are a
		// usage error.
		{name: "flag over env", env: "x", value: "y", set: map[string]bool{"dsn": true}, want: "y", from: "--dsn"},
		{name: "file over env", env: "x", file: file, set: map[string]bool{"dsn-file": true}, want: "postgres://u:s3cr3t@h/db", from: "--dsn-file"},
		{name: "password in the flag, whatever the env", env: "x", value: "host=h password=s3cr3t", set: map[string]bool{"dsn": true},
			err: "--dsn host=h password=xxxxx: a password on the command line is refused"},
		{name: "flag and file", value: "y", file: file, set: map[string]bool{"dsn": true, "dsn-file": true},
			err: "--dsn and --dsn-file both give the DSN"},
		{name: "flag and file, and env", env: "x", value: "y", file: file, set: map[string]bool{"dsn": true, "dsn-file": true},
			err: "--dsn and --dsn-file both give the DSN"},
		{name: "empty file", file: secretFile(t, "empty", ""), set: map[string]bool{"dsn-file": true}, err: "the first line is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(dsnEnv, tc.env)
			dsn, from, err := mainDSN.resolve(tc.value, tc.file, tc.set)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				assert.NotContains(t, err.Error(), "s3cr3t")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, dsn)
			assert.Equal(t, tc.from, from)
		})
	}
	// The LISTEN DSN's places, by the same rules.
	t.Setenv(listenDSNEnv, "x")
	dsn, from, err := listenDSN.resolve("", file, map[string]bool{"listen-dsn-file": true})
	require.NoError(t, err)
	assert.Equal(t, "postgres://u:s3cr3t@h/db", dsn)
	assert.Equal(t, "--listen-dsn-file", from)
	dsn, from, err = listenDSN.resolve("y", "", map[string]bool{"listen-dsn": true})
	require.NoError(t, err)
	assert.Equal(t, "y", dsn)
	assert.Equal(t, "--listen-dsn", from)
	dsn, from, err = listenDSN.resolve("", "", nil)
	require.NoError(t, err)
	assert.Equal(t, "x", dsn)
	assert.Equal(t, "$ZKLOCK_LISTEN_DSN", from)
	_, _, err = listenDSN.resolve("y", file, map[string]bool{"listen-dsn": true, "listen-dsn-file": true})
	assert.ErrorContains(t, err, "--listen-dsn and --listen-dsn-file both give the DSN")
}

// whatRefused tells the failures of credentials, permissions and
// certificates, as the clients zklock links report them and wrap them,
// from every other failure, by the library's rule (package refusal, whose
// tests hold the rule itself): the drivers' own error types are what it
// must recognise without linking them.
func TestWhatRefused(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("cannot take x: %w", fmt.Errorf("y: %w", err)) }
	for _, tc := range []struct {
		err  error
		what refusal.Reason
	}{
		{x509.UnknownAuthorityError{}, refusedUntrusted},
		{&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, refusedUntrusted},
		{x509.HostnameError{Host: "h", Certificate: &x509.Certificate{}}, refusedHostname},
		{x509.CertificateInvalidError{Reason: x509.Expired}, refusedInvalid},
		{&net.OpError{Op: "remote error", Err: errors.New("tls: bad certificate")}, refusedByPeer},
		{tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake", Conn: &net.TCPConn{}}, refusedNotTLS},
		{refusal.As(session.ErrNoAuth, refusal.Auth), refusedAuth}, // as the session marks it
		{&pgconn.PgError{Code: "28P01"}, refusedAuth},
		{&pgconn.PgError{Code: "28000"}, refusedAuth},
		{&pgconn.PgError{Code: "42501"}, refusedPermission},
		{&mysql.MySQLError{Number: 1045, SQLState: [5]byte{'2', '8', '0', '0', '0'}}, refusedAuth},
		{&mysql.MySQLError{Number: 1045}, refusedAuth},
		{&mysql.MySQLError{Number: 1142, SQLState: [5]byte{'4', '2', '0', '0', '0'}}, refusedPermission},
		{redisError("WRONGPASS invalid username-password pair or user is disabled."), refusedAuth},
		{redisError("NOAUTH Authentication required."), refusedAuth},
		{redisError("ERR AUTH <password> called without any password configured for the default user."), refusedAuth},
		{redisError("NOPERM this user has no permissions to access one of the keys"), refusedPermission},
	} {
		what, cause, ok := whatRefused(wrap(tc.err))
		assert.True(t, ok, "%v", tc.err)
		assert.Equal(t, tc.what, what, "%v", tc.err)
		assert.NotNil(t, cause)
	}
	for _, err := range []error{
		errors.New("connection refused"),
		&net.OpError{Op: "dial", Err: errors.New("connection refused")},
		&net.OpError{Op: "remote error", Err: errors.New("tls: internal error")}, // retried, as the library does
		tls.RecordHeaderError{Msg: "a malformed record after the handshake"},
		&pgconn.PgError{Code: "42P01"},
		&mysql.MySQLError{Number: 1146, SQLState: [5]byte{'4', '2', 'S', '0', '2'}},
		redisError("ERR unknown command"),
		session.ErrNoNode,
	} {
		_, _, ok := whatRefused(wrap(err))
		assert.False(t, ok, "%v", err)
	}
}

// redisError is an error go-redis would return for a reply.
type redisError string

func (e redisError) Error() string { return string(e) }
func (redisError) RedisError()     {}

var _ redis.Error = redisError("")
