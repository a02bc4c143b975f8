package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
)

// server names the servers of a run for a refusal's message: "zookeeper
// HOST:PORT,...", "redis HOST:PORT,...", "postgres HOST:PORT", ...
func (o *runOptions) server() string {
	if o.backend.name == backendZK {
		return o.conn.server()
	}
	return o.backend.server()
}

// server is "zookeeper HOST:PORT,...", for messages.
func (c *connOptions) server() string {
	servers, _ := c.serverList()
	return "zookeeper " + strings.Join(servers, ",")
}

// server names the servers of a backend other than ZooKeeper.
func (b *backendOptions) server() string {
	switch b.name {
	case backendRedis, backendRedlock, backendCluster:
		return b.name + " " + strings.Join(b.redisServers.addrs(), ",")
	case backendSentinel:
		return fmt.Sprintf("redis-sentinel %s (master %q)", strings.Join(b.sentinelServers.addrs(), ","), b.master)
	case backendMemcached:
		return "memcached " + b.memcached
	case backendPostgres:
		if cfg, err := pgx.ParseConfig(b.dsn); err == nil {
			return "postgres " + net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
		}
		return "postgres " + maskDSN(b.dsn)
	case backendMySQL:
		if cfg, err := mysql.ParseDSN(b.dsn); err == nil {
			return "mysql " + cfg.Addr
		}
		return "mysql " + maskDSN(b.dsn)
	}
	return ""
}

// security is how zklock reaches ZooKeeper, for -v's "connected to"
// message: ", TLS, digest user alice, ACL creator" (nothing by default).
func (c *connOptions) security() string {
	var b strings.Builder
	if c.tls.given() {
		b.WriteString(", TLS")
	}
	for _, cr := range c.creds {
		b.WriteString(", digest user " + cr.user)
	}
	if c.acl != "" && c.acl != aclOpen {
		b.WriteString(", ACL " + c.acl)
	}
	return b.String()
}

// security is how zklock reaches a Redis backend, for -v's "connected
// to" message: " (TLS, user locker, key prefix app:)", and how it asks
// the sentinels (", sentinels with a password"); "" for the other
// backends and without any.
func (b *backendOptions) security() string {
	srv := b.redisServers
	if b.name == backendSentinel {
		srv = b.sentinelServers
	}
	var parts []string
	if srv.tls {
		parts = append(parts, "TLS")
	}
	if len(srv.opts) > 0 && srv.opts[0].Username != "" {
		parts = append(parts, "user "+srv.opts[0].Username)
	}
	if b.redisPassword != "" {
		parts = append(parts, "with a password")
	}
	switch {
	case b.sentinelPassword != "" && b.sentinelUser != "":
		parts = append(parts, "sentinel user "+b.sentinelUser+" with a password")
	case b.sentinelPassword != "":
		parts = append(parts, "sentinels with a password")
	}
	if b.keyPrefix != "" {
		parts = append(parts, "key prefix "+b.keyPrefix)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
