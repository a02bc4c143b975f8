package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/compat/memcachedlock"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/compat/redlock"
	"github.com/zkrecipes/zkrecipes/compat/sqllock"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// The backends --backend names.
const (
	backendZK        = "zk"
	backendRedis     = "redis"
	backendRedlock   = "redlock"
	backendMemcached = "memcached"
	backendPostgres  = "postgres"
	backendMySQL     = "mysql"
)

// backendNames lists the backends for messages.
const backendNames = "zk, redis, redlock, memcached, postgres or mysql"

// pingTimeout bounds the check that a Redis, memcached or SQL server
// answers (and, for SQL, the creation of the lease table) before zklock
// waits for its lock (ZooKeeper has its connection timeout).
const pingTimeout = 15 * time.Second

// backendOptions are --backend and the flags of the other backends.
type backendOptions struct {
	name      string
	redis     string
	memcached string
	dsn       string // postgres, mysql: passed to the driver unchanged
	listenDSN string // postgres: the LISTEN connection's (default: dsn)
	table     string // postgres, mysql: the lease table
	ttl       time.Duration
	noCheck   bool
	noDurable bool // postgres, mysql: skip the durability check
}

func (b *backendOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&b.name, "backend", backendZK, "where the lock lives: "+backendNames)
	fs.StringVar(&b.redis, "redis", "", "Redis servers HOST:PORT,... (several: Redlock)")
	fs.StringVar(&b.memcached, "memcached", "", "memcached server HOST:PORT")
	fs.StringVar(&b.dsn, "dsn", "", "PostgreSQL or MySQL data source name, as the driver takes it")
	fs.StringVar(&b.listenDSN, "listen-dsn", "", "PostgreSQL DSN of the LISTEN connection, when --dsn goes through a transaction pooler (default: --dsn)")
	fs.StringVar(&b.table, "table", sqllock.DefaultTable, "the lease table, TABLE or SCHEMA.TABLE (postgres, mysql)")
	fs.Var(durationValue{d: &b.ttl, min: time.Millisecond}, "ttl", "lock TTL for redis, redlock, memcached, postgres and mysql (default 10s)")
	fs.BoolVar(&b.noCheck, "without-eviction-check", false,
		"do not check that the Redis or memcached server cannot evict the lock (where it refuses the check, or to accept that risk)")
	fs.BoolVar(&b.noDurable, "without-durability-check", false,
		"do not refuse a PostgreSQL with synchronous_commit off or a MySQL with innodb_flush_log_at_trx_commit 0 (to accept that a crash may forget a grant)")
}

// backendFlags are the flags of the backends other than ZooKeeper, each
// with the backends that take it; any other refuses it.
var backendFlags = []struct {
	flag     string
	backends []string
}{
	{"redis", []string{backendRedis, backendRedlock}},
	{"memcached", []string{backendMemcached}},
	{"dsn", []string{backendPostgres, backendMySQL}},
	{"listen-dsn", []string{backendPostgres}},
	{"table", []string{backendPostgres, backendMySQL}},
	{"ttl", []string{backendRedis, backendRedlock, backendMemcached, backendPostgres, backendMySQL}},
	{"without-eviction-check", []string{backendRedis, backendRedlock, backendMemcached}},
	{"without-durability-check", []string{backendPostgres, backendMySQL}},
}

// validate checks the backend flags against the others set (by name).
func (b *backendOptions) validate(set map[string]bool) error {
	switch b.name {
	case backendZK, backendRedis, backendRedlock, backendMemcached, backendPostgres, backendMySQL:
	default:
		return fmt.Errorf("unknown --backend %q: %s", b.name, backendNames)
	}
	for _, f := range backendFlags {
		if set[f.flag] && !slices.Contains(f.backends, b.name) {
			return fmt.Errorf("--%s needs --backend %s", f.flag, orList(f.backends))
		}
	}
	switch b.name {
	case backendZK:
		return nil
	case backendRedis, backendRedlock:
		if b.redis == "" {
			return fmt.Errorf("--backend %s needs --redis HOST:PORT[,HOST:PORT...]", b.name)
		}
		if _, err := splitAddrs("--redis", b.redis); err != nil {
			return err
		}
	case backendMemcached:
		if b.memcached == "" {
			return errors.New("--backend memcached needs --memcached HOST:PORT")
		}
		if strings.Contains(b.memcached, ",") {
			return errors.New("--memcached takes one server")
		}
	case backendPostgres, backendMySQL:
		if err := b.validateSQL(set); err != nil {
			return err
		}
	}
	for _, f := range []string{"read", "write", "exclusive", "leader", "semaphore", "namespace", "session-timeout", "servers"} {
		if set[f] {
			return fmt.Errorf("--%s needs --backend zk", f)
		}
	}
	return nil
}

// orList is "a", "a or b", "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// splitAddrs splits a comma-separated list of HOST:PORT.
func splitAddrs(flagName, s string) ([]string, error) {
	var out []string
	for _, a := range strings.Split(s, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			return nil, fmt.Errorf("%s %q: empty server address", flagName, s)
		}
		out = append(out, a)
	}
	return out, nil
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
		mc := memcache.New(b.memcached)
		closeAll := func() { _ = mc.Close() }
		if err := ping(pctx, mc.Ping); err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("cannot reach memcached at %s: %w", b.memcached, err)
		}
		opts := []memcachedlock.Option{memcachedlock.WithTTL(b.ttlOr(memcachedlock.DefaultTTL))}
		if b.noCheck {
			opts = append(opts, memcachedlock.WithoutEvictionCheck())
		} else {
			opts = append(opts, memcachedlock.WithServerAddr(b.memcached))
		}
		l, err := memcachedlock.New(mc, name, opts...)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		return l, closeAll, nil
	}
	addrs, _ := splitAddrs("--redis", b.redis)
	clients := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		clients[i] = redis.NewClient(&redis.Options{Addr: a})
	}
	closeAll := func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}
	if err := pingRedis(pctx, clients); err != nil {
		closeAll()
		return nil, nil, fmt.Errorf("cannot reach Redis at %s: %w", b.redis, err)
	}
	if b.name == backendRedis && len(clients) == 1 {
		c, err := redislock.NewClient(clients[0])
		if err == nil {
			var l *redislock.Lock
			opts := []redislock.Option{redislock.WithTTL(b.ttlOr(redislock.DefaultTTL))}
			if b.noCheck {
				opts = append(opts, redislock.WithoutEvictionCheck())
			}
			if l, err = redislock.New(c, name, opts...); err == nil {
				return l, func() { _ = c.Close(); closeAll() }, nil
			}
		}
		closeAll()
		return nil, nil, err
	}
	servers := make([]redlock.Redis, len(clients))
	for i, c := range clients {
		servers[i] = c
	}
	opts := []redlock.Option{redlock.WithTTL(b.ttlOr(redlock.DefaultTTL))}
	if b.noCheck {
		opts = append(opts, redlock.WithoutEvictionCheck())
	}
	l, err := redlock.New(servers, name, opts...)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return l, closeAll, nil
}

// pingRedis succeeds when a majority of the servers answer PING (one of
// one for a single server).
func pingRedis(ctx context.Context, clients []*redis.Client) error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			if err := c.Ping(ctx).Err(); err != nil {
				mu.Lock()
				errs = append(errs, err)
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
