// Command zklock runs a command while holding a lock on ZooKeeper (or, with
// --backend, on Redis, memcached, PostgreSQL or MySQL), as flock(1) does
// with a file lock, for processes on different machines.
//
// Usage:
//
//	zklock [flags] PATH -- COMMAND [ARGS...]
//	zklock ls [flags] PATH
//	zklock version
//	zklock --help
//
// zklock takes the lock at PATH (by default the module's mutex: Curator's
// InterProcessMutex, so Java processes using Curator on the same path
// exclude and queue with it), runs COMMAND with stdin, stdout and stderr
// passed through, releases the lock when COMMAND exits and exits with
// COMMAND's status. Waiters are served in the order they asked.
//
// Other locks (at most one of these flags; more is a usage error):
//
//	--read       the read half of the read/write lock at PATH (package rwlock:
//	             Curator's InterProcessReadWriteLock): any number of readers hold
//	             it at once, never while a writer holds it or waits ahead of them
//	--write      the write half of that lock: one writer, and no reader, holds it
//	--exclusive  the herd-style exclusive lock (package exclusive): one ephemeral
//	             node PATH/lock; waiters watch PATH's children and race for the
//	             node when it goes (no queue, not fair, not compatible with Curator)
//	--leader     leadership of the election at PATH (package leader:
//	             Curator's LeaderLatch): COMMAND runs only while leading; --data
//	             is the participant id others see
//	--semaphore N  one of N leases of the semaphore at PATH (package
//	             semaphore: Curator's InterProcessSemaphoreV2)
//
// Every process locking one PATH must take the same kind of lock (--read and
// --write together make one lock): the exclusive lock's node and the queued
// locks' nodes do not see each other. Whatever the kind, --data is stored in
// the lock node, ZKLOCK_PATH, ZKLOCK_NODE and ZKLOCK_TOKEN are set, and a
// lost lock ends the run as described below. Readers' fencing tokens order
// them among the writers, not among themselves.
//
// Other backends, for services with no ZooKeeper (package compat):
//
//	--backend zk|redis|redis-cluster|redis-sentinel|redlock|memcached|postgres|mysql
//	                         where the lock lives (default zk)
//	--redis SERVER,...       Redis servers, each HOST:PORT or a URL
//	                         redis://[USER@]HOST[:PORT][/DB] (rediss:// for TLS): one for
//	                         --backend redis; several, or --backend redlock, take the
//	                         lock by Redlock; redis-cluster: some nodes of the cluster
//	--sentinel SERVER,...    redis-sentinel: the sentinels, in the same forms (the user
//	                         and TLS of the URLs are the sentinels' and the master's, the
//	                         database the master's)
//	--master NAME            redis-sentinel: the master the sentinels monitor
//	--sentinel-password-file FILE  redis-sentinel: the sentinels' own password: FILE's
//	                         first line (default $ZKLOCK_SENTINEL_AUTH, not $REDISCLI_AUTH:
//	                         the sentinels' password usually differs; the file wins)
//	--sentinel-user USER     redis-sentinel: the sentinels' ACL user, when not the URLs'
//	                         user ("default" for sentinels with requirepass alone)
//	--replica-ack N          redis, redis-cluster, redis-sentinel: count an acquisition
//	                         or renewal only once N replicas acknowledged it (WAIT;
//	                         best-effort); --replica-ack-timeout DUR bounds the wait
//	                         (default 100ms)
//	--redis-password-file FILE  the Redis password: FILE's first line (default
//	                         $REDISCLI_AUTH, as for redis-cli; the file wins)
//	--key-prefix P           redis backends and memcached: prefix of every key (and
//	                         channel) of the lock, so a Redis ACL can grant it those alone
//	--memcached HOST:PORT    the memcached server
//	--dsn DSN                the database of --backend postgres (package sqllock over
//	                         pgx: postgres://USER@HOST:PORT/DB?... or
//	                         "host=... user=... dbname=...") or mysql (over
//	                         go-sql-driver/mysql: USER@tcp(HOST:PORT)/DB), passed to
//	                         the driver as it is; it may not hold a password
//	--dsn-file FILE          the DSN, password included: FILE's first line (not
//	                         with --dsn); else $ZKLOCK_DSN, which either flag overrides
//	--listen-dsn DSN         postgres: the connection waiters LISTEN on, to learn of
//	                         releases at once (default: --dsn); also
//	                         --listen-dsn-file FILE or $ZKLOCK_LISTEN_DSN, alike
//	--table NAME             the lock table, NAME or SCHEMA.NAME (default zkrecipes_locks)
//	--ttl DUR                how long the lock outlives a zklock that dies (default 10s;
//	                         whole seconds from 3s for memcached; from 100ms for
//	                         postgres and mysql); a Redis or memcached server that
//	                         restarted grants nothing for a TTL
//	--without-eviction-check do not refuse a server that may evict the lock
//	                         (Redis maxmemory-policy other than noeviction,
//	                         memcached without -M)
//	--without-durability-check  do not refuse a PostgreSQL with synchronous_commit
//	                         off or a MySQL with innodb_flush_log_at_trx_commit 0
//	                         (a crash of the server may then forget a grant)
//
// On PostgreSQL and MySQL zklock creates the table (and, on PostgreSQL,
// its function) if it is missing, before it waits for the lock; a user who
// may not create it uses the table as it is, made by someone who may
// (zklock --backend ... once, or the statements of sqllock's Client.DDL).
// PostgreSQL waiters are served in order and learn of a release through
// LISTEN on a connection of their own, made with --listen-dsn: LISTEN is
// session state, which PgBouncer in transaction mode does not keep, so
// when --dsn goes through such a pooler (with
// default_query_exec_mode=simple_protocol added to it, as pgx needs
// there), give --listen-dsn a direct connection to the server (or one
// through a pooler in session mode). Without a working LISTEN connection
// waiters still get the lock, by their timers, within the holder's TTL of
// its release (-v reports the LISTEN connection's failures). MySQL
// waiters wait in GET_LOCK on a connection of --dsn. Messages never show
// a DSN's password: it is masked (postgres://USER:xxxxx@HOST/DB).
//
// # Secured servers
//
// zklock never takes a secret on its command line, which every user of
// the machine can read (ps, /proc/PID/cmdline): passwords come from the
// environment or from files, and no message (-v included) shows one.
//
// ZooKeeper:
//
//	--auth-file FILE   authenticate with the credentials in FILE: lines
//	                   "digest USER:PASSWORD" (several lines: several identities);
//	                   blank lines and lines starting with # are left out. Only
//	                   ZooKeeper's digest scheme is supported: another (sasl, ...)
//	                   is a usage error naming it
//	--acl creator|open|read  the ACL of the nodes zklock creates (lock nodes,
//	                   and the lock path and its parents when it creates them):
//	                   creator: the --auth-file identity alone may do anything
//	                   (ZooKeeper's CREATOR_ALL_ACL); open: anyone may
//	                   (OPEN_ACL_UNSAFE); read: the identity may do anything,
//	                   anyone may read (list and watch: zklock ls) but not
//	                   delete or join the queue. creator and read need --auth-file
//	--tls-ca FILE      connect over TLS (to the servers' secureClientPort), trusting
//	                   only the CA certificates (PEM) in FILE, and checking that
//	                   each server's certificate names the host --servers gives
//	--tls-cert FILE, --tls-key FILE  the client certificate and its key (PEM), for
//	                   servers that require one (ssl.clientAuth=need); both or
//	                   neither. Without --tls-ca they turn TLS on too, trusting
//	                   the system's CAs
//
// --acl defaults to creator when --auth-file is given: then no client
// without the credentials can delete a holder's node (ZooKeeper checks a
// delete against the parent's ACL, so the lock path zklock creates guards
// its nodes) and so take its lock, nor join its queue. Without
// --auth-file it defaults to open, as Curator does: ZooKeeper refuses a
// creator-only ACL from a session with no identity. A node that already
// exists keeps its ACL: let zklock create the lock path, or create it
// with the same ACL. Curator processes sharing the lock need the same
// credentials (authorization("digest", ...)). ls takes --auth-file and
// the --tls flags too (not --acl: it creates nothing); under creator it
// needs the credentials, under read it does not. ZooKeeper accepts any
// digest credentials at connection: a wrong password shows when a node
// is created or listed under the identity's ACL (NOAUTH).
//
// Redis (every redis backend): --redis takes URLs, redis://USER@HOST:PORT/DB
// for an ACL user, rediss://HOST:PORT for TLS (--tls-ca, --tls-cert and
// --tls-key then set the CA and the client certificate; with a redis:// or
// bare address they are a usage error). The password is the first line of
// --redis-password-file FILE, else $REDISCLI_AUTH (as for redis-cli); a
// password in a URL (redis://USER:PASSWORD@...) is refused, exit 64,
// without echoing it. All the servers of a list share one scheme, user and
// password; under redis-sentinel those are the master's (and its
// replicas'). A user limited by an ACL needs the lock's
// keys and commands: with --key-prefix P the rule is redislock.ACLRule(P)
// (redlock.ACLRule(P) for Redlock), for P = app::
//
//	~app:* &app:* +evalsha +eval +get +set +del +pexpire +pttl +rpush +lpop +lpos +lset +lrem +lrange +time +info +publish +spublish +pubsub|numsub +pubsub|shardnumsub +subscribe +ssubscribe +cluster|slots +command +asking +wait +script|load
//
// as in redis.conf: user locker on >PASSWORD ~app:* &app:* +evalsha ...
// zklock also sends PING, which such a user may be refused: a NOPERM
// reply to it counts as an answer.
//
// Sentinels that ask for a password themselves (requirepass, or Redis
// 6.2+ ACL users) get their own: the first line of
// --sentinel-password-file FILE, else $ZKLOCK_SENTINEL_AUTH; not
// $REDISCLI_AUTH, the master's, since the sentinels' password usually
// differs from the data nodes'. zklock gives it as the user of the
// --sentinel URLs (the master's user too) or, when --sentinel-user USER is
// given, as USER: --sentinel-user default suits sentinels with requirepass
// alone when the URLs name an ACL user of the data nodes. Without a
// sentinel password the sentinels are asked without credentials. A password in a --sentinel
// URL is refused as in a --redis URL. zklock asks every sentinel for the
// master before it connects, so that a refusal names the sentinel. A
// sentinel's ACL user needs
//
//	+sentinel|get-master-addr-by-name +sentinel|sentinels +subscribe &+switch-master &+replica-reconf-done
//
// as in sentinel.conf: user watcher on >PASSWORD +sentinel|get-master-addr-by-name ...
//
// SQL: the DSN is --dsn (no password: one there is refused, exit 64, its
// message showing the DSN masked) or --dsn-file FILE (its first line),
// else $ZKLOCK_DSN: a flag wins over the environment, as
// --redis-password-file wins over $REDISCLI_AUTH, so that a zklock in
// another's COMMAND, which inherits its $ZKLOCK_DSN, takes the DSN its
// own flags give. --dsn and --dsn-file together are a usage error naming
// both. The same for --listen-dsn, --listen-dsn-file and
// $ZKLOCK_LISTEN_DSN. pgx also reads PGPASSWORD and ~/.pgpass when the
// DSN has no password. TLS to PostgreSQL is the DSN's (sslmode=verify-full,
// sslrootcert, sslcert, sslkey). To MySQL, --tls-ca, --tls-cert and
// --tls-key make every connection TLS, the server's certificate checked
// for the DSN's host (a DSN whose tls is other than true is then a usage
// error); without them TLS is the DSN's tls setting (true: the system's
// CAs).
//
// COMMAND inherits zklock's environment, secrets included: $REDISCLI_AUTH,
// $ZKLOCK_SENTINEL_AUTH, $ZKLOCK_DSN, $ZKLOCK_LISTEN_DSN and $PGPASSWORD
// when they are set.
//
// A server that refuses zklock's credentials, or a TLS handshake that
// fails, ends the run with exit 69 and a message naming the server, what
// failed, the server's or crypto/tls's words and what to check:
//
//	zklock: redis 127.0.0.1:6380: authentication refused: WRONGPASS invalid username-password pair or user is disabled. (check the user of the URL and the password of $REDISCLI_AUTH)
//	zklock: redis 127.0.0.1:6380: permission refused by the server's ACL: NOPERM ... (the user needs the ACL rule ~* &* +evalsha ...)
//	zklock: sentinel 127.0.0.1:26379: authentication refused: NOAUTH Authentication required. (no sentinel password was given: $ZKLOCK_SENTINEL_AUTH or --sentinel-password-file)
//	zklock: sentinel 127.0.0.1:26379: authentication refused: WRONGPASS invalid username-password pair or user is disabled. (check --sentinel-user watcher and the password of $ZKLOCK_SENTINEL_AUTH)
//	zklock: zookeeper 127.0.0.1:2281: TLS: certificate not trusted: x509: certificate signed by unknown authority (the CA of --tls-ca did not sign it)
//	zklock: zookeeper localhost:2281: TLS: certificate not valid for the host name: x509: ...
//	zklock: zookeeper 127.0.0.1:2281: TLS: the server refused the connection: remote error: tls: bad certificate (does the server want a client certificate? --tls-cert and --tls-key)
//	zklock: zookeeper 127.0.0.1:2181: authentication refused: zk: not authenticated (the nodes' ACL does not grant the identity of --auth-file: a wrong user or password?)
//	zklock: postgres 127.0.0.1:5432: authentication refused: FATAL: password authentication failed for user "app" (SQLSTATE 28P01) (check the user and the password of the DSN)
//	zklock: mysql 127.0.0.1:3306: authentication refused: Error 1045 (28000): Access denied for user ... (check the user and the password of the DSN)
//
// zklock does not wait for ZooKeeper's connection timeout once a whole
// round of attempts has failed the TLS handshake: every address of every
// server of --servers (a name may resolve to several), each tried once,
// and one of them tried again. A server that could not be reached in the
// round (it may come back) keeps it waiting.
//
// The lock kinds, --servers, --namespace, --session-timeout and ls are
// ZooKeeper's only. On every backend the lease ends, and COMMAND is
// terminated with exit 76, before another process can be granted the lock;
// ZKLOCK_NODE is ZooKeeper's only, and ZKLOCK_TOKEN is absent with
// Redlock, which has no fencing token. --data is stored in ZooKeeper nodes
// only. Global flags may also come before a subcommand: zklock --servers
// HOST ls PATH.
//
// Flags (before PATH or between PATH and --):
//
//	--servers HOST:PORT,...  ZooKeeper servers (default $ZK_SERVERS, else 127.0.0.1:2181)
//	--namespace PATH         prefix of every path on the server (default: none)
//	--session-timeout DUR    ZooKeeper session timeout (default 15s)
//	--timeout DUR            stop waiting (connecting included) after DUR: exit 75 (default 0: forever)
//	--try                    fail at once with exit 75 if the lock is held (like flock -n)
//	--grace DUR              after the lock is lost, time between SIGTERM and SIGKILL (default 5s)
//	--data STRING            stored in the lock node (any kind), shown by ls (default HOSTNAME:PID)
//	-q, --quiet              print no messages; the exit status tells
//	-v, --verbose            report connecting, waiting, acquiring, releasing and connection trouble,
//	                         the wait's length and the hold's, and why the lease ended
//
// Durations are Go durations (500ms, 10s, 2m) or plain seconds (10, 0.5).
//
// COMMAND is looked up (PATH search) before the lock is taken. It runs in its
// own process group and finds in its environment ZKLOCK_PATH (the lock path),
// ZKLOCK_NODE (the path of its lock node; both without the namespace) and
// ZKLOCK_TOKEN (the fencing token of its lease, a positive decimal integer
// that increases from one holder to the next: hand it to what the lock
// protects so it can refuse a stale holder). When zklock runs in the
// foreground of a terminal, COMMAND's process group gets the terminal (so
// Ctrl-C, Ctrl-Z and interactive programs work) and zklock takes it back
// when COMMAND exits; when COMMAND is stopped (Ctrl-Z, or reading the
// terminal from the background), zklock stops too, so the shell's fg and bg
// work on the pair. A zklock stopped for longer than the session timeout
// loses its lock: nothing answers ZooKeeper's pings meanwhile.
//
// Signals: SIGINT, SIGTERM or SIGHUP while waiting stops the wait (nothing is
// left on the server; a PostgreSQL or MySQL that does not answer holds up
// the exit for up to ten seconds, then zklock says what it left to expire)
// and zklock exits 128+N as a shell would (130, 143, 129). While COMMAND runs, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and
// SIGUSR2 are forwarded to COMMAND's process group; zklock then waits for
// COMMAND, releases the lock and exits with COMMAND's status. If zklock
// itself dies, COMMAND gets SIGTERM (Linux parent-death signal).
//
// Lost lock: when the lock can no longer be trusted while COMMAND runs (the
// connection was suspended, which the session manager's default policy
// counts as lost, as Curator's does; or the session expired; or its node was
// deleted, e.g. by an operator breaking the lock: zklock watches the node),
// zklock sends SIGTERM (and SIGCONT) to COMMAND's process group, waits until
// the group has exited or --grace has passed, sends SIGKILL to what remains,
// reports the cause on stderr and exits 76. It also exits 76 when the lock is
// found lost after COMMAND exited but before it was released, since
// COMMAND's work may then not have been exclusive. When COMMAND exits
// normally, processes it left running in its group are not waited for.
//
// Exit status:
//
//	COMMAND's status  COMMAND ran (128+N if it was killed by signal N)
//	64                usage error: bad flag, missing PATH, --, or COMMAND, invalid PATH,
//	                  a password on the command line, an unreadable --auth-file,
//	                  --tls-ca, --redis-password-file, --sentinel-password-file or
//	                  --dsn-file
//	69                the backend unreachable, failing or refusing zklock (authentication
//	                  refused, a certificate not trusted; or, on PostgreSQL and MySQL,
//	                  the lock table missing and not creatable); COMMAND did not run
//	70                internal error (COMMAND's status could not be had)
//	75                lock not taken: --timeout passed, or --try found it held
//	76                lock lost while COMMAND ran; COMMAND was terminated
//	126, 127          COMMAND could not be run / was not found
//	128+N             zklock got signal N while waiting (130 SIGINT, 143 SIGTERM)
//
// Messages go to stderr, prefixed "zklock: ". Errors are printed unless -q is
// given; with -v zklock also prints "connected to ZooKeeper at SERVERS
// (session 0x...)", "waiting for mutex PATH", "acquired mutex PATH (token N,
// node X)" and "released mutex PATH", and the session's warnings (connection
// suspended, session lost). Messages name the lock as its package and its
// errors do: "mutex PATH", "rwlock PATH (read)" and "rwlock PATH (write)"
// with --read and --write, "exclusive PATH", "leader PATH", "semaphore PATH
// (1 lease)"; "redislock PATH", "redlock PATH", "memcachedlock PATH",
// "sqllock PATH" on the other backends.
//
// With -v zklock also says, on every backend, how long it waited for the
// lock and whether it had to (contended: the lock was held, or a waiter
// was ahead; on a Redis or memcached server just started, which grants
// nothing for a TTL, the first wait counts too), at the end how long it held the lock and why the
// lease ended, and each failed renewal of a TTL lease:
//
//	zklock: acquired mutex /jobs/x (token 8, node /jobs/x/_c_...-lock-0000000001) after waiting 2.314s (contended)
//	zklock: held mutex /jobs/x for 5.002s: released
//	zklock: released mutex /jobs/x
//
// or, for a loss, the cause (connection suspended, session lost, TTL
// lapsed, lock gone from the server, renewal failed, client closed) and,
// when the backend knows it, the told-first margin: how long before the
// server could let the lock go (to another holder) zklock was told ("told
// D after" when it was told late), then the error:
//
//	zklock: held mutex /jobs/x for 1.335s: lost (connection suspended; told 666ms before the server could let the lock go): recipes: lock lost: ...
//
// A wait that ends without the lock is reported as "waited D for LOCK:
// timeout (contended)" (or locked, for --try, or canceled). These come
// from a recipes.Trace that zklock attaches to its acquire's context
// (recipes.WithTrace): the loss is printed as the library tells it, before
// COMMAND is terminated. The time held is counted from the acquire's
// return.
//
// # zklock ls
//
// zklock ls prints the lock's holders and waiters in queue order, one per
// line, fields separated by a tab:
//
//	POSITION  ROLE  KIND  NODE  SESSION  DATA  HELD
//
// POSITION is the number of nodes listed ahead (0 for the first), ROLE is
// "holder" or "waiter" ("unknown" for a node of a kind zklock does not
// know), KIND is the lock the node belongs to, told from its name: "mutex"
// ("...lock-<seq>"), "read" ("...__READ__<seq>"), "write"
// ("...__WRIT__<seq>"), "exclusive" ("lock") or "unknown". NODE is the
// node's name, SESSION its owner's session id in hex (0x...) and DATA what
// the process stored (--data): printed as it is when it is printable
// single-line text without tabs, else quoted as a Go string. A seventh
// field, HELD, is "held 3.2s" for a holder (to a tenth of a second, and
// to the second from a minute on: "held 4m12s") and "-" for any other
// node: the time since the holder's node was made (its ctime, by the
// server's clock, against this machine's), so for a holder that queued
// its wait is counted too. ls is for ZooKeeper only: the other backends
// have no ls, and so no hold time. Holders are
// marked by the lock's own rules (the recipes' Participants): several
// readers are holders at once when no writer is ahead of them. The
// exclusive lock's node, its holder, is listed first; its waiters create no
// nodes and are not shown. Unknown nodes are listed in queue order when
// their names end in a sequence number, else last. A lock that is free, or
// a PATH that does not exist, prints nothing (no header) and exits 0. ls
// takes --servers, --namespace, --session-timeout, --auth-file, the --tls
// flags, -q and -v; ZooKeeper failures (a refusal included) exit 69,
// usage errors 64.
//
// # Examples
//
//	zklock /jobs/backup -- /usr/local/bin/backup.sh --full
//	zklock --timeout 30s --servers zk1:2181,zk2:2181 /deploy -- make deploy
//	zklock --try /cron/report -- ./report.sh || echo "another report is running"
//	zklock -v /jobs/batch -- sh -c 'run-batch --fencing-token "$ZKLOCK_TOKEN"'
//	zklock --read /data/catalog -- ./export-catalog.sh     # many readers at once
//	zklock --write /data/catalog -- ./rebuild-catalog.sh   # alone: no reader, no other writer
//	zklock --exclusive --try /cron/cleanup -- ./cleanup.sh
//	zklock --backend postgres --dsn "postgres://app@db1:5432/app" /jobs/report -- ./report.sh
//	ZKLOCK_DSN="app:$DB_PASSWORD@tcp(db1:3306)/app" zklock --backend mysql --try /jobs/x -- ./x.sh
//	zklock --backend postgres --dsn-file /etc/zklock/dsn /jobs/report -- ./report.sh
//	zklock --auth-file /etc/zklock/zk-auth --tls-ca /etc/zklock/ca.pem --servers zk1:2281 /jobs/x -- ./x.sh
//	REDISCLI_AUTH=... zklock --backend redis --redis rediss://locker@r1:6380 --tls-ca ca.pem --key-prefix app: /jobs/x -- ./x.sh
//	zklock --backend redis-sentinel --sentinel s1:26379,s2:26379,s3:26379 --master mymaster \
//	       --sentinel-password-file /etc/zklock/sentinel-pw --redis-password-file /etc/zklock/redis-pw /jobs/x -- ./x.sh
//	zklock ls /jobs/backup
package main
