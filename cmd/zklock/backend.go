package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/compat/memcachedlock"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/compat/redlock"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// The backends --backend names.
const (
	backendZK        = "zk"
	backendRedis     = "redis"
	backendCluster   = "redis-cluster"
	backendSentinel  = "redis-sentinel"
	backendRedlock   = "redlock"
	backendMemcached = "memcached"
	backendPostgres  = "postgres"
	backendMySQL     = "mysql"
)

// backendList is every backend, for completion.
var backendList = []string{backendZK, backendRedis, backendCluster, backendSentinel, backendRedlock,
	backendMemcached, backendPostgres, backendMySQL}

// backendNames lists the backends for messages.
const backendNames = "zk, redis, redis-cluster, redis-sentinel, redlock, memcached, postgres or mysql"

// pingTimeout bounds the check that a Redis, memcached or SQL server
// answers (and, for SQL, the creation of the lease table) before zklock
// waits for its lock (ZooKeeper has its connection timeout).
const pingTimeout = 15 * time.Second

// backendOptions are --backend and the fields the flags of the other
// backends set (each backend registers its own: backends.go).
type backendOptions struct {
	name      string
	redis     string
	sentinel  string // redis-sentinel: the sentinels
	master    string // redis-sentinel: the monitored master's name
	acks      int    // replicas that must acknowledge each write
	ackWait   time.Duration
	memcached string
	dsn       string // postgres, mysql: passed to the driver unchanged
	listenDSN string // postgres: the LISTEN connection's (default: dsn)
	table     string // postgres, mysql: the lease table
	ttl       time.Duration
	noCheck   bool
	noDurable bool // postgres, mysql: skip the durability check

	redisPasswordFile    string      // --redis-password-file
	sentinelPasswordFile string      // --sentinel-password-file
	sentinelUser         string      // --sentinel-user; validate sets the URLs' user when it is not given
	keyPrefix            string      // --key-prefix: redis backends and memcached
	dsnFile              string      // --dsn-file
	listenDSNFile        string      // --listen-dsn-file
	tls                  *tlsOptions // the --tls flags (connOptions's): set by parseRun

	// Set by validate.
	redisServers     redisServers // --redis parsed, password and TLS applied
	sentinelServers  redisServers // --sentinel parsed
	redisPassword    string       // from --redis-password-file or $REDISCLI_AUTH
	sentinelPassword string       // from --sentinel-password-file or $ZKLOCK_SENTINEL_AUTH
	sentinelUserFlag bool         // the sentinels' user is --sentinel-user's, not the URLs'
}

// validateKeyPrefix checks --key-prefix as the lock's package will, before
// anything is connected to: memcachedlock's rule for memcached,
// redlock's for Redlock (several --redis servers), else redislock's.
func (b *backendOptions) validateKeyPrefix() error {
	var err error
	switch {
	case b.name == backendMemcached:
		err = memcachedlock.ValidKeyPrefix(b.keyPrefix)
	case b.redlock():
		err = redlock.ValidKeyPrefix(b.keyPrefix)
	default:
		err = redislock.ValidKeyPrefix(b.keyPrefix)
	}
	if err != nil {
		return fmt.Errorf("--key-prefix: %w", err)
	}
	return nil
}

// redlock reports whether the lock is taken by Redlock: --backend redlock,
// or several --redis servers (once validateRedis has parsed them).
func (b *backendOptions) redlock() bool {
	return b.name == backendRedlock || (b.name == backendRedis && len(b.redisServers.opts) > 1)
}

// orList is "a", "a or b", "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// ttlOr is the --ttl given, or def.
func (b *backendOptions) ttlOr(def time.Duration) time.Duration {
	if b.ttl > 0 {
		return b.ttl
	}
	return def
}

// openCompat connects to the Redis, memcached or SQL backend (checking
// that it answers, as ZooKeeper's connect does) and returns the lock named
// name and what closes the clients. go-redis's own messages go to rep.
func (b *backendOptions) openCompat(ctx context.Context, name string, rep *reporter) (recipes.Locker, func(), error) {
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	redis.SetLogger(redisLog{rep})
	switch b.name {
	case backendPostgres, backendMySQL:
		return b.openSQL(pctx, name, rep)
	case backendMemcached:
		return b.memcachedLock(pctx, name, rep)
	}
	srv := b.redisServers
	switch b.name {
	case backendCluster:
		first := srv.opts[0]
		r := redis.NewClusterClient(&redis.ClusterOptions{Addrs: srv.addrs(), Username: first.Username,
			Password: first.Password, TLSConfig: srv.tlsConfig()})
		return b.redisLock(pctx, r, name, "the Redis Cluster at "+strings.Join(srv.addrs(), ","))
	case backendSentinel:
		where := fmt.Sprintf("Redis master %q through the sentinels at %s", b.master, strings.Join(b.sentinelServers.addrs(), ","))
		if err := b.askSentinels(pctx); err != nil {
			return nil, nil, fmt.Errorf("cannot reach %s: %w", where, err)
		}
		return b.redisLock(pctx, redis.NewFailoverClient(b.failoverOptions()), name, where)
	}
	if b.name == backendRedis && len(srv.opts) == 1 {
		return b.redisLock(pctx, redis.NewClient(srv.opts[0]), name, "Redis at "+srv.opts[0].Addr)
	}
	clients := make([]*redis.Client, len(srv.opts))
	for i, o := range srv.opts {
		clients[i] = redis.NewClient(o)
	}
	closeAll := func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}
	if err := pingRedis(pctx, clients); err != nil {
		closeAll()
		return nil, nil, fmt.Errorf("cannot reach Redis at %s: %w", strings.Join(srv.addrs(), ","), err)
	}
	servers := make([]redlock.Redis, len(clients))
	for i, c := range clients {
		servers[i] = c
	}
	var copts []redlock.ClientOption
	if b.noCheck {
		copts = append(copts, redlock.WithoutEvictionCheck())
	}
	if b.keyPrefix != "" {
		copts = append(copts, redlock.WithKeyPrefix(b.keyPrefix))
	}
	c, err := redlock.NewClient(servers, copts...)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	l, err := redlock.New(c, name, redlock.WithTTL(b.ttlOr(redlock.DefaultTTL)))
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	// The Client first: it waits for its releases in the background, which
	// need the go-redis clients.
	return l, func() { _ = c.Close(); closeAll() }, nil
}

// redisClient is a go-redis client redislock takes.
type redisClient interface {
	redislock.Redis
	Ping(ctx context.Context) *redis.StatusCmd
	Close() error
}

// redisLock is the redislock lock named name over r (one server, a
// cluster, or a master behind sentinels, named where), once r answers.
func (b *backendOptions) redisLock(ctx context.Context, r redisClient, name, where string) (recipes.Locker, func(), error) {
	closeAll := func() { _ = r.Close() }
	if err := pingErr(r.Ping(ctx).Err()); err != nil {
		closeAll()
		return nil, nil, fmt.Errorf("cannot reach %s: %w", where, err)
	}
	opts := []redislock.Option{redislock.WithTTL(b.ttlOr(redislock.DefaultTTL))}
	var copts []redislock.ClientOption
	if b.noCheck {
		copts = append(copts, redislock.WithoutEvictionCheck())
	}
	if b.keyPrefix != "" {
		copts = append(copts, redislock.WithKeyPrefix(b.keyPrefix))
	}
	if b.acks > 0 {
		wait := b.ackWait
		if wait == 0 {
			wait = 100 * time.Millisecond
		}
		opts = append(opts, redislock.WithReplicaAck(b.acks, wait))
	}
	c, err := redislock.NewClient(r, copts...)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	l, err := redislock.New(c, name, opts...)
	if err != nil {
		_ = c.Close()
		closeAll()
		return nil, nil, err
	}
	// The lock Client first: it waits for its clean-ups in the
	// background, which need r.
	return l, func() { _ = c.Close(); closeAll() }, nil
}

// pingRedis succeeds when a majority of the servers answer PING (one of
// one for a single server).
func pingRedis(ctx context.Context, clients []*redis.Client) error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			if err := pingErr(c.Ping(ctx).Err()); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", c.Options().Addr, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > (len(clients)-1)/2 {
		return errors.Join(errs...)
	}
	return nil
}

// pingErr is a PING's error, nil when the server refused PING itself to
// a user whose ACL grants the lock's commands only (NOPERM): it answered,
// and took the credentials.
func pingErr(err error) error {
	if redis.HasErrorPrefix(err, "NOPERM") {
		return nil
	}
	return err
}

// ping runs a call that takes no context, abandoning it when ctx ends.
func ping(ctx context.Context, call func() error) error {
	res := make(chan error, 1)
	go func() { res <- call() }()
	select {
	case err := <-res:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// redisLog is go-redis's logger (one for the process): its messages (a
// pool that cannot dial, say) are printed with -v only; zklock's own
// errors say what failed.
type redisLog struct{ r *reporter }

func (l redisLog) Printf(_ context.Context, format string, v ...any) {
	if l.r.verbose && !l.r.quiet {
		l.r.print("redis: " + fmt.Sprintf(format, v...))
	}
}
