package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/compat/redlock"
	"github.com/zkrecipes/zkrecipes/session"
)

// What refused is, for messages.
const (
	refusedAuth       = "authentication refused"
	refusedPermission = "permission refused by the server's ACL"
	refusedUntrusted  = "TLS: certificate not trusted"
	refusedHostname   = "TLS: certificate not valid for the host name"
	refusedInvalid    = "TLS: certificate not valid"
	refusedByPeer     = "TLS: the server refused the connection"
	refusedNotTLS     = "TLS: the server does not speak TLS"
)

// refusal tells a failure that waiting cannot mend: the server refused
// zklock's credentials, or a TLS handshake failed (the server's
// certificate not trusted, or zklock's refused). what names it for the
// message; cause is the error that says so. ok is false for any other
// error.
func refusal(err error) (what string, cause error, ok bool) {
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var alert tls.AlertError
	var remote *net.OpError
	var record tls.RecordHeaderError
	var pe *pgconn.PgError
	var me *mysql.MySQLError
	switch {
	case errors.As(err, &unknownCA):
		return refusedUntrusted, unknownCA, true
	case errors.As(err, &hostname):
		return refusedHostname, hostname, true
	case errors.As(err, &invalid):
		return refusedInvalid, invalid, true
	case errors.As(err, &remote) && remote.Op == "remote error":
		// An alert from the server (crypto/tls reports it so over TCP):
		// bad_certificate, certificate_required, unknown_ca, ...: most
		// often a client certificate missing or not trusted.
		return refusedByPeer, remote, true
	case errors.As(err, &alert): // the same, over QUIC
		return refusedByPeer, alert, true
	case errors.As(err, &record):
		return refusedNotTLS, record, true
	case errors.Is(err, session.ErrNoAuth):
		return refusedAuth, session.ErrNoAuth, true
	case errors.Is(err, session.ErrAuthFailed):
		return refusedAuth, session.ErrAuthFailed, true
	case errors.As(err, &pe) && (pe.Code == "28P01" || pe.Code == "28000"):
		// invalid_password, invalid_authorization_specification (pg_hba.conf)
		return refusedAuth, pe, true
	case errors.As(err, &me) && (me.Number == 1045 || me.Number == 1698):
		// ER_ACCESS_DENIED_ERROR, ER_ACCESS_DENIED_NO_PASSWORD_ERROR
		return refusedAuth, me, true
	}
	var re redis.Error
	if errors.As(err, &re) {
		msg := strings.TrimPrefix(re.Error(), "ERR ")
		switch {
		case strings.HasPrefix(msg, "WRONGPASS"), strings.HasPrefix(msg, "NOAUTH"),
			strings.HasPrefix(msg, "AUTH"), strings.HasPrefix(msg, "Client sent AUTH"):
			// The last two: a password given to a server that has none.
			return refusedAuth, re, true
		case strings.HasPrefix(msg, "NOPERM"):
			return refusedPermission, re, true
		}
	}
	return "", nil, false
}

// refusedTLS reports whether what is one of refusal's TLS failures.
func refusedTLS(what string) bool { return strings.HasPrefix(what, "TLS:") }

// refusedMessage is a refusal's message: "SERVER: WHAT: CAUSE (HINT)",
// e.g. "redis 127.0.0.1:6380: authentication refused: WRONGPASS ...".
// The reporter masks the secrets in it, as in every message.
func refusedMessage(server, what string, cause error, hint string) string {
	msg := fmt.Sprintf("%s: %s: %v", server, what, cause)
	if hint != "" {
		msg += " (" + hint + ")"
	}
	return msg
}

// refusedBy names the server that refused, err's sentinel when a
// sentinel did, and says what to check after a refusal of kind what.
func (o *runOptions) refusedBy(err error, what string) (server, hint string) {
	var sr *sentinelRefused
	if errors.As(err, &sr) {
		return "sentinel " + sr.addr, o.backend.sentinelHint(what)
	}
	return o.server(), o.refusalHint(what)
}

// refusalHint says what to check after a refusal of kind what.
func (o *runOptions) refusalHint(what string) string {
	b := &o.backend
	switch b.name {
	case backendZK:
		switch {
		case what == refusedAuth && len(o.conn.creds) == 0:
			return "the nodes are not open to all: give the credentials with --auth-file"
		case what == refusedAuth:
			return "the nodes' ACL does not grant the identity of --auth-file: a wrong user or password?"
		case what == refusedNotTLS:
			return "is it the server's secureClientPort?"
		}
		return tlsHint(what, &o.conn.tls)
	case backendRedis, backendRedlock, backendCluster, backendSentinel:
		switch what {
		case refusedAuth:
			switch {
			case b.redisPasswordFile != "":
				return "check the user of the URL and the password of --redis-password-file"
			case b.redisPassword != "":
				return "check the user of the URL and the password of $" + redisPasswordEnv
			}
			return "no password was given: $" + redisPasswordEnv + " or --redis-password-file"
		case refusedPermission:
			return "the user needs the ACL rule " + b.aclRule()
		case refusedNotTLS:
			return "use redis:// for a server without TLS"
		}
		return tlsHint(what, b.tls)
	case backendPostgres, backendMySQL:
		switch {
		case what == refusedAuth:
			return "check the user and the password of the DSN"
		case b.name == backendMySQL && b.tls != nil && b.tls.given():
			return tlsHint(what, b.tls)
		case b.name == backendMySQL:
			return "check the DSN's tls setting, or give the CA with --tls-ca"
		}
		return "check the DSN's TLS settings: sslmode, sslrootcert"
	}
	return ""
}

// tlsHint says which --tls flag to check after a TLS refusal.
func tlsHint(what string, o *tlsOptions) string {
	switch {
	case what == refusedUntrusted && o != nil && o.ca != "":
		return "the CA of --tls-ca did not sign it"
	case what == refusedUntrusted:
		return "give the CA that signed it with --tls-ca"
	case what == refusedHostname:
		return "the certificate must name the host zklock connects to"
	case what == refusedByPeer:
		return "does the server want a client certificate? --tls-cert and --tls-key"
	}
	return ""
}

// aclRule is the Redis ACL rule the user of a Redis backend needs, for
// the keys of --key-prefix: redlock's for Redlock (several --redis
// servers, not the nodes of a cluster), else redislock's.
func (b *backendOptions) aclRule() string {
	if b.redlock() {
		return redlock.ACLRule(b.keyPrefix)
	}
	return redislock.ACLRule(b.keyPrefix)
}
