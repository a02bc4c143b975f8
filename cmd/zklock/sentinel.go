package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/recipes/refusal"
)

// sentinelPasswordEnv holds the sentinels' own password (requirepass, or
// the password of --sentinel-user). Not $REDISCLI_AUTH: that is the
// master's and its replicas', and the sentinels' password usually differs
// from the data nodes'.
const sentinelPasswordEnv = "ZKLOCK_SENTINEL_AUTH"

// sentinelACLRule is what a sentinel's ACL user needs for go-redis's
// failover client: the master's address, the other sentinels (to learn
// them) and the failover announcements, which it subscribes to together.
const sentinelACLRule = "+sentinel|get-master-addr-by-name +sentinel|sentinels +subscribe &+switch-master &+replica-reconf-done"

// validateSentinel reads the sentinels' password (the first line of
// --sentinel-password-file when given, else $ZKLOCK_SENTINEL_AUTH, else
// none) and sets the user the sentinels are asked as: --sentinel-user,
// else the user of the --sentinel URLs (also the master's). go-redis
// sends a user only with a password: without one the sentinels are asked
// without credentials.
func (b *backendOptions) validateSentinel(set map[string]bool) error {
	if set["sentinel-user"] && (b.sentinelUser == "" || strings.ContainsFunc(b.sentinelUser, isSpaceOrControl)) {
		return fmt.Errorf("--sentinel-user %q: want a user name, without spaces", b.sentinelUser)
	}
	password, err := passwordFrom("--sentinel-password-file", b.sentinelPasswordFile, sentinelPasswordEnv)
	if err != nil {
		return err
	}
	if set["sentinel-user"] && password == "" {
		return fmt.Errorf("--sentinel-user %s: the sentinels' password is missing: give it in $%s or in a file named by --sentinel-password-file",
			b.sentinelUser, sentinelPasswordEnv)
	}
	b.sentinelPassword = password
	b.sentinelUserFlag = set["sentinel-user"]
	if !b.sentinelUserFlag {
		b.sentinelUser = b.sentinelServers.opts[0].Username
	}
	return nil
}

// isSpaceOrControl reports whether r cannot be in a user name.
func isSpaceOrControl(r rune) bool { return r <= ' ' || r == 0x7f }

// failoverOptions are the failover client's: the sentinels and their
// credentials; the master's (and its replicas') user, database and
// password from the --sentinel URLs and --redis-password-file; TLS for
// both.
func (b *backendOptions) failoverOptions() *redis.FailoverOptions {
	first := b.sentinelServers.opts[0]
	return &redis.FailoverOptions{MasterName: b.master, SentinelAddrs: b.sentinelServers.addrs(),
		SentinelUsername: b.sentinelUser, SentinelPassword: b.sentinelPassword,
		Username: first.Username, Password: first.Password, DB: first.DB, TLSConfig: b.sentinelServers.tlsConfig()}
}

// sentinelRefused is a sentinel's refusal (see whatRefused) of zklock's
// credentials, of the master's address to its user (NOPERM), or of a
// TLS handshake.
type sentinelRefused struct {
	addr string
	err  error
}

func (e *sentinelRefused) Error() string { return "sentinel " + e.addr + ": " + e.err.Error() }
func (e *sentinelRefused) Unwrap() error { return e.err }

// askSentinels asks every sentinel at once for the master's address, as
// the failover client does, with the sentinels' credentials, and returns
// nil as soon as one answers. go-redis joins the sentinels' errors
// without their addresses, and a sentinel's NOPERM would then pass for
// the master's answer to PING (see pingErr): asked first, a refusal names
// the sentinel that refused (*sentinelRefused; the first in --sentinel's
// order when several did). With no answer and no refusal, the error names
// each sentinel's failure.
func (b *backendOptions) askSentinels(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fo := b.failoverOptions()
	errs := make([]error, len(fo.SentinelAddrs))
	var answered atomic.Bool
	var wg sync.WaitGroup
	for i, addr := range fo.SentinelAddrs {
		wg.Go(func() {
			c := redis.NewSentinelClient(&redis.Options{Addr: addr, Username: fo.SentinelUsername,
				Password: fo.SentinelPassword, TLSConfig: fo.TLSConfig})
			defer c.Close()
			_, err := c.GetMasterAddrByName(ctx, b.master).Result()
			switch {
			case errors.Is(err, redis.Nil):
				errs[i] = fmt.Errorf("no master named %q", b.master)
			case err != nil:
				errs[i] = err
			default:
				answered.Store(true)
				cancel() // the others need not answer
			}
		})
	}
	wg.Wait()
	if answered.Load() {
		return nil
	}
	for i, err := range errs {
		if _, _, ok := whatRefused(err); ok {
			return &sentinelRefused{addr: fo.SentinelAddrs[i], err: err}
		}
	}
	for i, err := range errs {
		errs[i] = fmt.Errorf("%s: %w", fo.SentinelAddrs[i], err)
	}
	return errors.Join(errs...)
}

// sentinelHint says what to check after a sentinel's refusal of kind
// what.
func (b *backendOptions) sentinelHint(what refusal.Reason) string {
	switch what {
	case refusedAuth:
		from := "$" + sentinelPasswordEnv
		if b.sentinelPasswordFile != "" {
			from = "--sentinel-password-file"
		}
		switch {
		case b.sentinelPassword == "":
			return "no sentinel password was given: $" + sentinelPasswordEnv + " or --sentinel-password-file"
		case b.sentinelUserFlag:
			return fmt.Sprintf("check --sentinel-user %s and the password of %s", b.sentinelUser, from)
		case b.sentinelUser != "":
			return fmt.Sprintf("check the sentinel user %s, the --sentinel URLs' (--sentinel-user default if the sentinels "+
				"have requirepass alone), and the password of %s", b.sentinelUser, from)
		}
		return "check the password of " + from + ", given as the sentinels' default user: --sentinel-user names an ACL user"
	case refusedPermission:
		return "the sentinel user needs the ACL rule " + sentinelACLRule
	case refusedNotTLS:
		return "use redis:// for sentinels without TLS"
	}
	return tlsHint(what, b.tls)
}
