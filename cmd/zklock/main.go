package main

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
)

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

// dispatch runs the subcommand named by args[0] ("ls", "version") or, for
// anything else, the lock-and-run, and returns the exit status.
func dispatch(args []string, stdout, stderr io.Writer) int {
	if global, rest := leadingFlags(args); len(global) > 0 && len(rest) > 0 && rest[0] == "ls" {
		// Global flags before the subcommand, as etcdctl and kubectl take
		// them: zklock --servers H ls PATH.
		return lsMain(append(append([]string(nil), global...), rest[1:]...), stdout, stderr)
	}
	if len(args) > 0 {
		switch args[0] {
		case "ls":
			return lsMain(args[1:], stdout, stderr)
		case "version":
			if len(args) > 1 {
				return usageError(stderr, "version takes no arguments")
			}
			printVersion(stdout)
			return exitOK
		case "help":
			fmt.Fprint(stdout, usageText)
			return exitOK
		}
	}
	return runMain(args, stdout, stderr)
}

const usageLine = `Usage: zklock [flags] PATH -- COMMAND [ARGS...]
       zklock ls [flags] PATH
       zklock version
`

const usageText = usageLine + `
zklock takes the lock PATH (on ZooKeeper, or with --backend on Redis,
memcached, PostgreSQL or MySQL), runs COMMAND while holding it, releases the
lock when COMMAND exits and exits with COMMAND's status.

Which lock (at most one of these; default: the mutex, Curator's
InterProcessMutex, whose waiters are served in the order they asked):
  --read                   the read half of the read/write lock at PATH (Curator's
                           InterProcessReadWriteLock): held by any number of readers
                           at once, never while a writer holds it or waits ahead
  --write                  the write half of that lock: held by one writer, with no reader
  --exclusive              the herd-style exclusive lock: one node PATH/lock; waiters
                           watch PATH and race for it when it goes (not fair, no queue;
                           not compatible with any Curator lock)
  --leader                 leadership of the election at PATH (Curator's LeaderLatch):
                           COMMAND runs only while this zklock leads; --data is its id
  --semaphore N            one of N leases of the semaphore at PATH (Curator's
                           InterProcessSemaphoreV2): at most N COMMANDs run at once
Every process locking one PATH must take the same kind of lock (--read and
--write together are one lock): an --exclusive lock and a queued lock at the
same PATH do not see each other.

Where the lock lives (default: ZooKeeper):
  --backend zk|redis|redis-cluster|redis-sentinel|redlock|memcached|postgres|mysql
  --redis SERVER,...       Redis servers, HOST:PORT or redis://[USER@]HOST:PORT[/DB]
                           (rediss:// for TLS): one for --backend redis (several:
                           Redlock); redis-cluster: some nodes of the cluster
  --sentinel SERVER,...    redis-sentinel: the sentinels (same forms: the user is the
                           sentinels' and the master's); --master NAME
  --sentinel-password-file FILE  redis-sentinel: the sentinels' own password: FILE's
                           first line (default $ZKLOCK_SENTINEL_AUTH, not $REDISCLI_AUTH:
                           the sentinels' password usually differs from the master's)
  --sentinel-user USER     redis-sentinel: the sentinels' ACL user when not the URLs'
                           ("default" for sentinels with requirepass alone)
  --replica-ack N          redis, redis-cluster, redis-sentinel: count an acquisition
                           or renewal once N replicas acknowledged it (WAIT,
                           best-effort); --replica-ack-timeout DUR (default 100ms)
  --redis-password-file FILE  the Redis password: FILE's first line (default
                           $REDISCLI_AUTH, as for redis-cli; the file wins)
  --key-prefix P           redis backends, memcached: prefix of the lock's keys and
                           channels, for a Redis ACL (see zklock's doc: ACLRule)
  --memcached HOST:PORT    the memcached server for --backend memcached
  --dsn DSN                the database for --backend postgres or mysql, as its
                           driver takes it, without a password:
                           postgres://USER@HOST:PORT/DB?... or "host=... user=..."
                           (pgx); USER@tcp(HOST:PORT)/DB (go-sql-driver/mysql)
  --dsn-file FILE          the DSN, password included: FILE's first line (not with
                           --dsn); else $ZKLOCK_DSN, which either flag overrides
  --listen-dsn DSN         postgres: the connection waiters LISTEN on for releases
                           (default: --dsn); a direct one when --dsn goes through
                           PgBouncer in transaction mode, which cannot LISTEN;
                           also --listen-dsn-file FILE or $ZKLOCK_LISTEN_DSN, alike
  --table NAME             the lock table, NAME or SCHEMA.NAME (default
                           zkrecipes_locks); created if missing (when the user may)
  --ttl DUR                how long the lock outlives a zklock that dies (redis,
                           redlock, postgres, mysql: default 10s; memcached: whole
                           seconds from 3s, default 10s); a Redis or memcached
                           server that restarted grants nothing for a TTL, since
                           it may have forgotten a holder
  --without-eviction-check do not refuse a server that may evict the lock (Redis:
                           maxmemory-policy other than noeviction; memcached
                           without -M): where it refuses the check, or to accept
                           that risk
  --without-durability-check  do not refuse a PostgreSQL with synchronous_commit
                           off or a MySQL with innodb_flush_log_at_trx_commit 0:
                           to accept that a crash may forget a grant
On Redis and PostgreSQL the lock is fair (FIFO) and fenced; Redlock has no
fencing token; memcached waiters poll; MySQL waiters wait in GET_LOCK. Through
PgBouncer in transaction mode, add default_query_exec_mode=simple_protocol to
a pgx --dsn. Messages never show a DSN's password. --read, --write,
--exclusive, --servers, --namespace, --session-timeout, --auth-file and
--acl are for ZooKeeper only, as is zklock ls.

Secured servers (no secret is taken on the command line, which ps shows, and
none is printed):
  --auth-file FILE         ZooKeeper: authenticate with its "digest USER:PASSWORD"
                           lines (# comments and blank lines left out)
  --acl creator|open|read  ZooKeeper: the ACL of the nodes zklock creates. creator:
                           the --auth-file identity alone (the default with
                           --auth-file: no one else may delete a holder's node
                           and take its lock); open: anyone (the default without:
                           ZooKeeper refuses creator to a session with no
                           identity); read: creator, and anyone may read (ls)
  --tls-ca FILE            ZooKeeper (TLS on), rediss://, mysql (TLS on): trust only
                           the CAs in FILE (postgres: the DSN's sslrootcert)
  --tls-cert FILE, --tls-key FILE  the client certificate and key (PEM), together
A refused password or certificate exits 69, naming the server and what failed.
COMMAND inherits the environment, secrets included: $REDISCLI_AUTH,
$ZKLOCK_SENTINEL_AUTH, $ZKLOCK_DSN, $ZKLOCK_LISTEN_DSN and $PGPASSWORD when
they are set.

Flags (before PATH, or between PATH and --):
  --servers HOST:PORT,...  ZooKeeper servers (default $ZK_SERVERS, else 127.0.0.1:2181)
  --namespace PATH         prefix of every path on the server (default: none)
  --session-timeout DUR    ZooKeeper session timeout (default 15s)
  --timeout DUR            stop waiting (connecting included) after DUR, exit 75 (default 0: forever)
  --try                    fail at once with exit 75 if the lock is held
  --grace DUR              after the lock is lost, wait DUR between SIGTERM and SIGKILL (default 5s)
  --data STRING            stored in the lock node, of any kind; shown by ls (default HOSTNAME:PID)
  -q, --quiet              print no messages (the exit status tells)
  -v, --verbose            report connecting, waiting, acquiring, releasing, connection trouble;
                           how long the wait took and whether the lock was held or queued
                           for (contended); at the end how long the lock was held and why
                           the lease ended: released, or the cause of a loss (session lost,
                           TTL lapsed, ...) with how long before the server could let the
                           lock go zklock was told, when the backend knows it
DUR is a Go duration (500ms, 10s, 2m) or plain seconds (10, 0.5).

COMMAND runs in its own process group with these in its environment:
  ZKLOCK_PATH   the lock path
  ZKLOCK_NODE   the path of its lock node (ZooKeeper only)
  ZKLOCK_TOKEN  the lease's fencing token (decimal; grows from holder to holder);
                absent on Redlock, which has none
SIGINT, SIGTERM and SIGHUP while waiting stop the wait. While COMMAND runs,
SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are forwarded to its
process group. If the lock is lost while COMMAND runs, its process group gets
SIGTERM, then SIGKILL after --grace, and zklock exits 76.

zklock ls [--servers ...] [--namespace ...] PATH
  prints the holders and the waiters in queue order, one per line, tab separated:
  POSITION (nodes listed ahead: 0, 1, ...)  ROLE (holder|waiter|unknown)
  KIND (mutex|read|write|exclusive|unknown)  NODE  SESSION (0x...)  DATA
  HELD (a holder's "held 3.2s": since its node was made, any wait in the
  queue included; "-" for the others)
  The kind is told from the node names. Several readers hold at once when no
  writer is ahead of them. The exclusive lock shows its holder only: its
  waiters have no nodes. A free lock prints nothing. 'zklock ls --help' for more.

Exit status:
  COMMAND's   COMMAND ran (128+N if it was killed by signal N)
  64          usage error (a password on the command line included)
  69          the backend unreachable, failing or refusing zklock (authentication
              refused, certificate not trusted); COMMAND did not run
  75          lock not taken: --timeout passed or --try found it held
  76          lock lost while COMMAND ran; COMMAND was terminated
  126, 127    COMMAND could not be run / was not found
  130, 143    interrupted (SIGINT, SIGTERM) while waiting

Examples:
  zklock /jobs/backup -- /usr/local/bin/backup.sh --full
  zklock --timeout 30s --servers zk1:2181,zk2:2181 /deploy -- make deploy
  zklock --try /cron/report -- ./report.sh || echo "another report is running"
  zklock -v /jobs/batch -- sh -c 'run-batch --fencing-token "$ZKLOCK_TOKEN"'
  zklock --read /data/catalog -- ./export-catalog.sh      # many readers at once
  zklock --write /data/catalog -- ./rebuild-catalog.sh    # alone: no reader, no other writer
  zklock --write --timeout 10m /data/catalog -- ./rebuild-catalog.sh
  zklock --exclusive --try /cron/cleanup -- ./cleanup.sh
  zklock --leader --data "$(hostname)" /services/scheduler -- ./scheduler   # one active instance
  zklock --semaphore 4 /pools/encoders -- ./encode.sh                        # at most 4 at once
  zklock --backend redis --redis 10.0.0.5:6379 /jobs/backup -- ./backup.sh
  zklock --backend redlock --redis r1:6379,r2:6379,r3:6379 --ttl 30s /jobs/x -- ./x.sh
  zklock --backend postgres --dsn "postgres://app@db1:5432/app" /jobs/report -- ./report.sh
  zklock --backend postgres --dsn "postgres://app@pgbouncer:6432/app?default_query_exec_mode=simple_protocol" \
         --listen-dsn "postgres://app@db1:5432/app" /jobs/report -- ./report.sh
  ZKLOCK_DSN="app:$DB_PASSWORD@tcp(db1:3306)/app" zklock --backend mysql --try /jobs/x -- ./x.sh
  zklock --auth-file /etc/zklock/zk-auth --tls-ca ca.pem --servers zk1:2281 /jobs/x -- ./x.sh
  REDISCLI_AUTH=... zklock --backend redis --redis rediss://locker@r1:6380 --tls-ca ca.pem \
         --key-prefix app: /jobs/x -- ./x.sh
  zklock --backend redis-sentinel --sentinel s1:26379,s2:26379,s3:26379 --master mymaster \
         --sentinel-password-file /etc/zklock/sentinel-pw /jobs/x -- ./x.sh
  zklock ls /jobs/backup
  zklock --servers zk1:2181 ls /data/catalog
`

// usageError reports a usage error and returns exitUsage. It is printed even
// with -q: the invocation itself is wrong.
func usageError(stderr io.Writer, format string, args ...any) int {
	msg := longFlag.ReplaceAllString(fmt.Sprintf(format, args...), "$1--$2")
	fmt.Fprintf(stderr, "zklock: %s\n%sRun 'zklock --help' for more.\n", msg, usageLine)
	return exitUsage
}

// longFlag finds the flag package's "-name" for a long flag in its error
// messages, to show it as "--name", as the usage spells it.
var longFlag = regexp.MustCompile(`((?:^|flag|: ) ?)-([a-z][a-z-]+)\b`)

// version is set at build time with -ldflags "-X main.version=..."; without
// it the module version from the build info is shown.
var version = ""

func printVersion(w io.Writer) {
	v := version
	if v == "" {
		v = "(devel)"
		if bi, ok := debug.ReadBuildInfo(); ok {
			if bi.Main.Version != "" {
				v = bi.Main.Version
			}
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" && len(s.Value) >= 12 {
					v += " " + s.Value[:12]
				}
			}
		}
	}
	fmt.Fprintf(w, "zklock %s (%s %s/%s)\n", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// leadingFlags splits off the connection and output flags that come before
// the first other argument; nil when there are none or they do not parse.
func leadingFlags(args []string) (global, rest []string) {
	fs := newFlagSet("zklock")
	var conn connOptions
	var out outputOptions
	conn.register(fs)
	out.register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, args
	}
	rest = fs.Args()
	global = args[:len(args)-len(rest)]
	if len(global) > 0 && global[len(global)-1] == "--" {
		return nil, args // an explicit end of flags: not a subcommand
	}
	return global, rest
}
