package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"
)

// redisPasswordEnv holds the Redis password, as for redis-cli.
const redisPasswordEnv = "REDISCLI_AUTH"

// redisServers is --redis (or --sentinel) parsed: each server's options
// (address, user, database, TLS) with the password and the TLS files of
// the flags applied.
type redisServers struct {
	opts []*redis.Options
	tls  bool // rediss://: every server's
}

// addrs are the servers' addresses, for messages.
func (s redisServers) addrs() []string {
	out := make([]string, len(s.opts))
	for i, o := range s.opts {
		out[i] = o.Addr
	}
	return out
}

// parseRedisServers parses a comma-separated list of Redis servers, each
// HOST:PORT or a URL redis://[USER@]HOST[:PORT][/DB][?...] (rediss:// for
// TLS). Every server must have the same scheme and user. A URL with a
// password is refused: command lines are public (ps). The errors never
// show a password.
func parseRedisServers(flagName, list string, tlsFiles *tlsOptions) (redisServers, error) {
	var s redisServers
	var user string
	for i, a := range strings.Split(list, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			return s, fmt.Errorf("%s %q: empty server address", flagName, maskDSN(list))
		}
		if len(dsnSecrets(a)) > 0 {
			return s, fmt.Errorf("%s %s: a password on the command line is refused (anyone on this machine can read it with ps): %s",
				flagName, maskDSN(a), passwordPlaces(flagName))
		}
		var o *redis.Options
		switch {
		case strings.HasPrefix(a, "redis://") || strings.HasPrefix(a, "rediss://"):
			var err error
			if o, err = redis.ParseURL(a); err != nil {
				return s, fmt.Errorf("%s %s: %v", flagName, a, err)
			}
		case strings.Contains(a, "://") || strings.Contains(a, "@"):
			return s, fmt.Errorf("%s %s: want HOST:PORT, redis://[USER@]HOST:PORT[/DB] or rediss://... for TLS", flagName, a)
		default:
			o = &redis.Options{Addr: a}
		}
		if i > 0 && ((o.TLSConfig != nil) != s.tls || o.Username != user) {
			return s, fmt.Errorf("%s: every server must have the same scheme (redis://, rediss://) and user", flagName)
		}
		s.tls, user = o.TLSConfig != nil, o.Username
		s.opts = append(s.opts, o)
	}
	if tlsFiles != nil && tlsFiles.given() && !s.tls {
		return s, fmt.Errorf("--tls-ca, --tls-cert and --tls-key are for TLS: give %s as rediss://HOST:PORT", flagName)
	}
	return s, nil
}

// passwordPlaces says where the passwords of the servers of flagName go
// instead of its URLs.
func passwordPlaces(flagName string) string {
	redisPlaces := "in $" + redisPasswordEnv + " or in a file named by --redis-password-file"
	if flagName == "--sentinel" {
		return "give the sentinels' password in $" + sentinelPasswordEnv + " or in a file named by --sentinel-password-file, " +
			"the master's " + redisPlaces
	}
	return "give it " + redisPlaces
}

// apply sets the password and, for TLS, the roots and client certificate
// of the --tls flags on every server's options (once validated).
func (s redisServers) apply(password string, tlsFiles *tlsOptions) {
	for _, o := range s.opts {
		o.Password = password
		if o.TLSConfig != nil && tlsFiles != nil {
			o.TLSConfig.RootCAs = tlsFiles.roots
			o.TLSConfig.Certificates = tlsFiles.pair
		}
	}
}

// tlsConfig is the TLS configuration for clients that dial servers other
// than those listed (a cluster's nodes, a sentinel's master): nil without
// TLS, else without a ServerName, so that each connection checks the
// certificate against the host it dials.
func (s redisServers) tlsConfig() *tls.Config {
	if !s.tls {
		return nil
	}
	c := s.opts[0].TLSConfig.Clone()
	c.ServerName = ""
	return c
}

// passwordFrom is a password kept out of the command line: the first
// line of file (named by the flag fileFlag) when given, else the
// environment variable env, else none. The file wins, so that a zklock
// in another's COMMAND, which inherits its environment, takes the
// password its own flags give.
func passwordFrom(fileFlag, file, env string) (string, error) {
	if file != "" {
		return readFirstLine(fileFlag, file)
	}
	return os.Getenv(env), nil
}

// readFirstLine is the first line of file, without its line end, for a
// secret kept out of the command line. It must not be empty. The error
// names flagName and the file, never what is in it.
func readFirstLine(flagName, file string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s: %v", flagName, err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	line = strings.TrimSuffix(line, "\r")
	if line == "" {
		return "", fmt.Errorf("%s %s: the first line is empty", flagName, file)
	}
	return line, nil
}

// validateRedis checks the flags of the Redis backends: parses --redis
// (--sentinel for redis-sentinel), loads the --tls files and reads the
// password, and applies them to every server's options; for
// redis-sentinel it also reads the sentinels' own credentials
// (validateSentinel).
func (b *backendOptions) validateRedis(set map[string]bool) error {
	flagName, list := "--redis", b.redis
	if b.name == backendSentinel {
		if b.sentinel == "" || b.master == "" {
			return errors.New("--backend redis-sentinel needs --sentinel HOST:PORT[,HOST:PORT...] and --master NAME")
		}
		flagName, list = "--sentinel", b.sentinel
	} else if b.redis == "" {
		return fmt.Errorf("--backend %s needs --redis HOST:PORT[,HOST:PORT...]", b.name)
	}
	if b.tls == nil {
		b.tls = &tlsOptions{}
	}
	if err := b.tls.validate(); err != nil {
		return err
	}
	srv, err := parseRedisServers(flagName, list, b.tls)
	if err != nil {
		return err
	}
	if set["replica-ack"] && b.name == backendRedis && len(srv.opts) > 1 {
		return errors.New("--replica-ack needs one --redis server (several are Redlock, which has no replicas to wait for)")
	}
	if b.name == backendCluster && srv.opts[0].DB != 0 {
		return errors.New("--redis: a Redis Cluster has database 0 only")
	}
	password, err := passwordFrom("--redis-password-file", b.redisPasswordFile, redisPasswordEnv)
	if err != nil {
		return err
	}
	srv.apply(password, b.tls)
	b.redisPassword = password
	if b.name != backendSentinel {
		b.redisServers = srv
		return nil
	}
	b.sentinelServers = srv
	return b.validateSentinel(set)
}
