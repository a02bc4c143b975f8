package refusal

import (
	"regexp"
	"strings"
)

// sqlStater is a SQL driver's error with its SQLSTATE (pgx's *PgError,
// lib/pq's *Error).
type sqlStater interface {
	error
	SQLState() string
}

// redisError is a Redis server's error reply (go-redis's redis.Error).
type redisError interface {
	error
	RedisError()
}

// serverRefusal is the rule for one error of a chain that a server wrote.
// The rules on text are applied to errors that wrap nothing (a driver's
// own error, or one flattened by %v), so that the cause is the server's
// answer and not what wraps it.
func serverRefusal(err error) Reason {
	switch e := err.(type) {
	case sqlStater:
		switch code := e.SQLState(); {
		case strings.HasPrefix(code, "28"):
			// invalid_authorization_specification: a wrong password
			// (28P01), a pg_hba.conf rule (28000).
			return Auth
		case code == "42501":
			return Permission // insufficient_privilege
		}
		return NotRefused
	case redisError:
		return redisRefusal(e.Error())
	case interface{ Unwrap() error }, interface{ Unwrap() []error }:
		return NotRefused
	}
	msg := err.Error()
	if m := mysqlError.FindStringSubmatch(msg); m != nil {
		return mysqlRefusals[m[1]]
	}
	for _, reply := range memcachedRefusals {
		// gomemcache quotes the line ("CLIENT_ERROR unauthenticated"),
		// or, for incr and decr, writes "memcache: client error: ...".
		if strings.Contains(msg, "CLIENT_ERROR "+reply) || strings.Contains(msg, "client error: "+reply) {
			return Auth
		}
	}
	return NotRefused
}

// redisRefusal is the rule for a Redis error reply.
func redisRefusal(reply string) Reason {
	msg := strings.TrimPrefix(reply, "ERR ")
	switch {
	case strings.HasPrefix(msg, "WRONGPASS"), strings.HasPrefix(msg, "NOAUTH"):
		return Auth
	case strings.HasPrefix(msg, "AUTH"), strings.HasPrefix(msg, "Client sent AUTH"):
		// A password given to a server that has none (Redis 6+, and
		// before 6).
		return Auth
	case strings.HasPrefix(msg, "NOPERM"):
		return Permission
	case strings.HasPrefix(msg, "The user executing the script can't"):
		// A command, key or channel refused to a script by the user's
		// ACL (Redis 7): NOPERM, said from inside the script.
		return Permission
	}
	return NotRefused
}

// mysqlError is how go-sql-driver/mysql writes a server's error: "Error
// 1045 (28000): Access denied ...", or without the SQLSTATE when the
// server sent none.
var mysqlError = regexp.MustCompile(`Error (\d+)(?: \([0-9A-Z]{5}\))?: `)

// mysqlRefusals are MySQL's (and MariaDB's) refusals, by number. Not all
// of SQLSTATE class 42, which also holds limits that pass (1203 too many
// connections for the user, 1226 a user's resource limit).
var mysqlRefusals = map[string]Reason{
	"1045": Auth,       // ER_ACCESS_DENIED_ERROR: the user or its password
	"1698": Auth,       // ER_ACCESS_DENIED_NO_PASSWORD_ERROR
	"1044": Permission, // ER_DBACCESS_DENIED_ERROR
	"1142": Permission, // ER_TABLEACCESS_DENIED_ERROR
	"1143": Permission, // ER_COLUMNACCESS_DENIED_ERROR
	"1227": Permission, // ER_SPECIFIC_ACCESS_DENIED_ERROR
	"1370": Permission, // ER_PROCACCESS_DENIED_ERROR
}

// memcachedRefusals are memcached's answers to a connection that did not
// authenticate (-Y: ASCII authentication), or failed to.
var memcachedRefusals = []string{
	"unauthenticated",
	"authentication failure",
	"bad authentication token format",
}
