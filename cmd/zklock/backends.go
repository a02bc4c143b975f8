package main

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/compat/sqllock"
)

// A backend is one value of --backend: the flags it takes and their
// checks. Which backends take a flag comes from their register methods
// alone (registerBackends): a flag given with a backend that does not
// register it is a usage error that names the backends that do.
type backend interface {
	// name is the backend's --backend value.
	name() string
	// register adds the flags the backend takes to fs. Backends that take
	// the same flag bind it to the same field, with the same usage.
	register(fs *flag.FlagSet)
	// validate checks the backend's flags (set: the names given), with an
	// error that names the flag at fault. Nothing is connected to.
	validate(set map[string]bool) error
}

// backends are the backends of a run, bound to o's fields (and kinds',
// ZooKeeper's lock kinds), in the order messages list them.
func (o *runOptions) backends(kinds *kindFlags) []backend {
	b := &o.backend
	b.tls = &o.conn.tls
	return []backend{
		zkBackend{conn: &o.conn, kinds: kinds},
		redisBackend{b: b, kind: backendRedis},
		redisBackend{b: b, kind: backendCluster},
		redisBackend{b: b, kind: backendSentinel},
		redisBackend{b: b, kind: backendRedlock},
		memcachedBackend{b: b},
		sqlBackend{b: b, kind: backendPostgres},
		sqlBackend{b: b, kind: backendMySQL},
	}
}

// backendFlags are the flags of the backends, each with the names of the
// backends that register it.
type backendFlags map[string][]string

// registerBackends adds every backend's flags to fs, once each, and
// returns who takes which.
func registerBackends(fs *flag.FlagSet, bs []backend) backendFlags {
	takers := backendFlags{}
	for _, b := range bs {
		own := newFlagSet(b.name())
		b.register(own)
		own.VisitAll(func(f *flag.Flag) {
			if fs.Lookup(f.Name) == nil {
				fs.Var(f.Value, f.Name, f.Usage)
			}
			takers[f.Name] = append(takers[f.Name], b.name())
		})
	}
	return takers
}

// check refuses a flag in set that backend name does not take, naming
// the backends that do; flags of no backend pass.
func (t backendFlags) check(name string, set map[string]bool) error {
	var given []string
	for f := range set {
		given = append(given, f)
	}
	slices.Sort(given)
	for _, f := range given {
		if takers, ok := t[f]; ok && !slices.Contains(takers, name) {
			return fmt.Errorf("--%s needs --backend %s", f, orList(takers))
		}
	}
	return nil
}

// pick is the backend named name.
func pick(bs []backend, name string) (backend, error) {
	for _, b := range bs {
		if b.name() == name {
			return b, nil
		}
	}
	return nil, fmt.Errorf("unknown --backend %q: %s", name, backendNames)
}

// zkBackend is ZooKeeper: the connection flags (ls's too), --acl and the
// lock kinds, which the other backends do not have.
type zkBackend struct {
	conn  *connOptions
	kinds *kindFlags
}

func (zkBackend) name() string { return backendZK }

func (z zkBackend) register(fs *flag.FlagSet) {
	z.conn.register(fs)
	z.conn.registerACL(fs)
	z.kinds.register(fs)
}

func (z zkBackend) validate(map[string]bool) error { return z.conn.validate() }

// redisBackend is one of the Redis backends: a server (redis), a cluster
// (redis-cluster), a master behind sentinels (redis-sentinel) or Redlock
// over independent servers (redlock; --backend redis with several
// servers is Redlock too).
type redisBackend struct {
	b    *backendOptions
	kind string
}

func (r redisBackend) name() string { return r.kind }

func (r redisBackend) register(fs *flag.FlagSet) {
	b := r.b
	if r.kind == backendSentinel {
		fs.StringVar(&b.sentinel, "sentinel", "", "redis-sentinel: the sentinels HOST:PORT,... (or redis://, rediss:// URLs, as --redis)")
		fs.StringVar(&b.master, "master", "", "redis-sentinel: the name of the master the sentinels monitor")
		fs.StringVar(&b.sentinelPasswordFile, "sentinel-password-file", "",
			"redis-sentinel: the sentinels' own password: the first line of FILE (default $"+sentinelPasswordEnv+")")
		fs.StringVar(&b.sentinelUser, "sentinel-user", "", "redis-sentinel: the sentinels' ACL user, when not the --sentinel URLs' user")
	} else {
		fs.StringVar(&b.redis, "redis", "", "Redis servers HOST:PORT or redis://[USER@]HOST:PORT[/DB] (rediss:// for TLS), comma separated "+
			"(several: Redlock; redis-cluster: some nodes of the cluster)")
	}
	fs.StringVar(&b.redisPasswordFile, "redis-password-file", "", "the Redis password: the first line of FILE (default $"+redisPasswordEnv+")")
	b.tls.register(fs)
	if r.kind != backendRedlock { // Redlock's servers have no replicas to wait for
		fs.IntVar(&b.acks, "replica-ack", 0, "redis, redis-cluster, redis-sentinel: count an acquisition or renewal only once N replicas acknowledged it (WAIT; best-effort)")
		fs.Var(durationValue{d: &b.ackWait, min: time.Millisecond}, "replica-ack-timeout", "how long --replica-ack waits for the replicas (default 100ms)")
	}
	b.registerKeyed(fs)
}

func (r redisBackend) validate(set map[string]bool) error {
	b := r.b
	if err := b.validateRedis(set); err != nil {
		return err
	}
	if err := b.validateKeyPrefix(); err != nil {
		return err
	}
	if set["replica-ack"] && b.acks < 1 {
		return fmt.Errorf("--replica-ack %d: want 1 replica or more", b.acks)
	}
	if set["replica-ack-timeout"] && !set["replica-ack"] {
		return errors.New("--replica-ack-timeout needs --replica-ack")
	}
	return nil
}

// memcachedBackend is one memcached server.
type memcachedBackend struct{ b *backendOptions }

func (memcachedBackend) name() string { return backendMemcached }

func (m memcachedBackend) register(fs *flag.FlagSet) {
	fs.StringVar(&m.b.memcached, "memcached", "", "memcached server HOST:PORT")
	m.b.registerKeyed(fs)
}

func (m memcachedBackend) validate(map[string]bool) error {
	switch {
	case m.b.memcached == "":
		return errors.New("--backend memcached needs --memcached HOST:PORT")
	case strings.Contains(m.b.memcached, ","):
		return errors.New("--memcached takes one server")
	}
	return m.b.validateKeyPrefix()
}

// sqlBackend is PostgreSQL (postgres) or MySQL/MariaDB (mysql).
type sqlBackend struct {
	b    *backendOptions
	kind string
}

func (s sqlBackend) name() string { return s.kind }

func (s sqlBackend) register(fs *flag.FlagSet) {
	b := s.b
	fs.StringVar(&b.dsn, "dsn", "", "PostgreSQL or MySQL data source name, as the driver takes it")
	fs.StringVar(&b.dsnFile, "dsn-file", "", "the DSN: the first line of FILE (or $"+dsnEnv+"; a password may not be in --dsn)")
	if s.kind == backendPostgres {
		fs.StringVar(&b.listenDSN, "listen-dsn", "", "PostgreSQL DSN of the LISTEN connection, when --dsn goes through a transaction pooler (default: --dsn)")
		fs.StringVar(&b.listenDSNFile, "listen-dsn-file", "", "the LISTEN connection's DSN: the first line of FILE (or $"+listenDSNEnv+")")
	} else {
		// PostgreSQL takes its TLS files in the DSN (sslrootcert, sslcert,
		// sslkey); go-sql-driver/mysql's DSN can name none.
		b.tls.register(fs)
	}
	fs.StringVar(&b.table, "table", sqllock.DefaultTable, "the lease table, TABLE or SCHEMA.TABLE (postgres, mysql)")
	fs.BoolVar(&b.noDurable, "without-durability-check", false,
		"do not refuse a PostgreSQL with synchronous_commit off or a MySQL with innodb_flush_log_at_trx_commit 0 (to accept that a crash may forget a grant)")
	b.registerTTL(fs)
}

func (s sqlBackend) validate(set map[string]bool) error { return s.b.validateSQL(set) }

// registerKeyed adds the flags of the backends that keep the lock in a
// key with a TTL (Redis's and memcached): --key-prefix, --ttl and
// --without-eviction-check.
func (b *backendOptions) registerKeyed(fs *flag.FlagSet) {
	fs.StringVar(&b.keyPrefix, "key-prefix", "", "redis backends and memcached: prefix of every key (and channel) of the lock, for Redis ACLs")
	fs.BoolVar(&b.noCheck, "without-eviction-check", false,
		"do not check that the Redis or memcached server cannot evict the lock (where it refuses the check, or to accept that risk)")
	b.registerTTL(fs)
}

// registerTTL adds --ttl, which every backend but ZooKeeper takes.
func (b *backendOptions) registerTTL(fs *flag.FlagSet) {
	fs.Var(durationValue{d: &b.ttl, min: time.Millisecond}, "ttl", "lock TTL for redis, redis-cluster, redis-sentinel, redlock, memcached, postgres and mysql (default 10s)")
}
