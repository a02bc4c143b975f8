package main

import (
	"errors"
	"fmt"

	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/compat/redlock"
	"github.com/zkrecipes/zkrecipes/recipes/refusal"
)

// What refused is, for messages and hints: the reasons of the library's
// one rule (package refusal), named here as zklock's messages use them.
const (
	refusedAuth       = refusal.Auth
	refusedPermission = refusal.Permission
	refusedUntrusted  = refusal.Untrusted
	refusedHostname   = refusal.Hostname
	refusedInvalid    = refusal.Certificate
	refusedByPeer     = refusal.ByPeer
	refusedNotTLS     = refusal.NotTLS
)

// whatRefused tells a failure that waiting cannot mend (the server refused
// zklock's credentials or permissions, or a TLS handshake was refused
// either way) by the rule the library's backends follow, so that zklock
// exits 69 where an Acquire gives up for errors.Is(err,
// recipes.ErrRefused). what names it for the message; cause is the error
// that says so (the server's answer). ok is false for any other error.
func whatRefused(err error) (what refusal.Reason, cause error, ok bool) {
	what, cause = refusal.Of(err)
	return what, cause, what != refusal.NotRefused
}

// refusedMessage is a refusal's message: "SERVER: WHAT: CAUSE (HINT)",
// e.g. "redis 127.0.0.1:6380: authentication refused: WRONGPASS ...".
// The reporter masks the secrets in it, as in every message.
func refusedMessage(server string, what refusal.Reason, cause error, hint string) string {
	msg := fmt.Sprintf("%s: %s: %v", server, what, cause)
	if hint != "" {
		msg += " (" + hint + ")"
	}
	return msg
}

// refusedBy names the server that refused, err's sentinel when a
// sentinel did, and says what to check after a refusal of kind what.
func (o *runOptions) refusedBy(err error, what refusal.Reason) (server, hint string) {
	var sr *sentinelRefused
	if errors.As(err, &sr) {
		return "sentinel " + sr.addr, o.backend.sentinelHint(what)
	}
	return o.server(), o.refusalHint(what)
}

// refusalHint says what to check after a refusal of kind what.
func (o *runOptions) refusalHint(what refusal.Reason) string {
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
		case what == refusedPermission:
			return "the DSN's user lacks a privilege on the lock's database or table"
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
func tlsHint(what refusal.Reason, o *tlsOptions) string {
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
