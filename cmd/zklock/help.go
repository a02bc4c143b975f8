package main

import "github.com/zkrecipes/zkrecipes/compat/redislock"

//go:generate env ZKLOCK_WRITE_DOC=1 go test -run ^TestDocIsTheHelp$ .

// zklock's help is written once, here: `zklock --help` prints usageText,
// `zklock ls --help` lsUsage (ls.go), `zklock watch --help` watchUsage
// (watch.go), `zklock services --help` servicesUsage (services.go),
// `zklock register --help` registerUsage (register.go), and doc.go is
// generated from them (go generate;
// TestDocIsTheHelp fails when it is not).

const usageLine = `Usage: zklock [flags] PATH -- COMMAND [ARGS...]
       zklock ls [flags] PATH
       zklock watch [flags] PATH
       zklock services [flags] [NAME]
       zklock register [flags] --service NAME --address A --port P -- COMMAND [ARGS...]
       zklock completion bash|zsh
       zklock version (or zklock --version)
`

// usageText is what zklock --help prints. The ACL rules are the ones the
// lock packages give.
var usageText = usageLine + `
zklock takes the lock PATH (on ZooKeeper, or with --backend on Redis,
memcached, PostgreSQL or MySQL), runs COMMAND while holding it (stdin,
stdout and stderr passed through), releases the lock when COMMAND exits
and exits with COMMAND's status, as flock(1) does with a file lock, for
processes on different machines. By default the lock is the mutex
(Curator's InterProcessMutex, so Java processes using Curator on the same
path exclude and queue with it): waiters are served in the order they
asked.

Which lock (at most one of these; more is a usage error):
  --read                   the read half of the read/write lock at PATH (Curator's
                           InterProcessReadWriteLock): held by any number of readers
                           at once, never while a writer holds it or waits ahead
  --write                  the write half of that lock: held by one writer, with no reader
  --exclusive              the herd-style exclusive lock: one node PATH/lock; waiters
                           watch PATH and race for it when it goes (not fair, no queue;
                           not compatible with any Curator lock)
  --leader                 leadership of the election at PATH (Curator's LeaderLatch):
                           COMMAND runs only while this zklock leads; --data is the
                           participant id others see
  --semaphore N            one of N leases of the semaphore at PATH (Curator's
                           InterProcessSemaphoreV2): at most N COMMANDs run at once
Every process locking one PATH must take the same kind of lock (--read and
--write together are one lock): an --exclusive lock and a queued lock at the
same PATH do not see each other. Readers' fencing tokens order them among
the writers, not among themselves.

Where the lock lives (default: ZooKeeper):
  --backend zk|redis|redis-cluster|redis-sentinel|redlock|memcached|postgres|mysql
  --redis SERVER,...       Redis servers, HOST:PORT or redis://[USER@]HOST:PORT[/DB]
                           (rediss:// for TLS): one for --backend redis (several, or
                           --backend redlock: Redlock); redis-cluster: some nodes of
                           the cluster
  --sentinel SERVER,...    redis-sentinel: the sentinels, in the same forms (the user
                           and TLS of the URLs are the sentinels' and the master's, the
                           database the master's); --master NAME: the master they monitor
  --sentinel-password-file FILE  redis-sentinel: the sentinels' own password: FILE's
                           first line (default $ZKLOCK_SENTINEL_AUTH, not $REDISCLI_AUTH:
                           the sentinels' password usually differs; the file wins)
  --sentinel-user USER     redis-sentinel: the sentinels' ACL user when not the URLs'
                           ("default" for sentinels with requirepass alone)
  --replica-ack N          redis, redis-cluster, redis-sentinel: count an acquisition
                           or renewal once N replicas acknowledged it (WAIT,
                           best-effort); --replica-ack-timeout DUR (default 100ms)
  --redis-password-file FILE  the Redis password: FILE's first line (default
                           $REDISCLI_AUTH, as for redis-cli; the file wins)
  --key-prefix P           redis backends, memcached: prefix of every key (and
                           channel) of the lock, so a Redis ACL can grant it those alone
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
  --ttl DUR                how long the lock outlives a zklock that dies (default 10s;
                           memcached: whole seconds from 3s; postgres, mysql: from
                           100ms); a Redis or memcached server that restarted grants
                           nothing for a TTL, since it may have forgotten a holder
  --without-eviction-check do not refuse a server that may evict the lock (Redis:
                           maxmemory-policy other than noeviction; memcached
                           without -M): where it refuses the check, or to accept
                           that risk
  --without-durability-check  do not refuse a PostgreSQL with synchronous_commit
                           off or a MySQL with innodb_flush_log_at_trx_commit 0:
                           to accept that a crash may forget a grant
On Redis and PostgreSQL the lock is fair (FIFO) and fenced; Redlock has no
fencing token; memcached waiters poll; MySQL waiters wait in GET_LOCK on a
connection of --dsn.

On PostgreSQL and MySQL zklock creates the table (and, on PostgreSQL, its
function) if it is missing, before it waits for the lock; a user who may
not create it uses the table as it is, made by someone who may (zklock
--backend ... once, or the statements of sqllock's Client.DDL), with
SELECT, INSERT, UPDATE and DELETE on the table. PostgreSQL
waiters learn of a release through LISTEN on a connection of their own,
made with --listen-dsn: LISTEN is session state, which PgBouncer in
transaction mode does not keep, so when --dsn goes through such a pooler
(with default_query_exec_mode=simple_protocol added to it, as pgx needs
there), give --listen-dsn a direct connection to the server (or one
through a pooler in session mode). Without a working LISTEN connection
waiters still get the lock, by their timers, within the holder's TTL of
its release (-v reports the LISTEN connection's failures).

The lock kinds, --servers, --namespace, --session-timeout, --auth-file,
--acl, zklock ls and zklock watch are ZooKeeper's only. On every backend
the lease ends, and COMMAND is terminated with exit 76, before another
process can be granted the lock.

On the other backends PATH is the lock's name exactly as the library's
New takes it, the leading / included: zklock --backend redis /orders is
redislock.New(c, "/orders") (the Redis key "{/orders}", after
--key-prefix), not redislock.New(c, "orders"), a lock of its own; so for
redlock, memcachedlock and sqllock. A program that shares a lock with
zklock passes New the PATH given to zklock.

Secured servers (no secret is taken on the command line, which every user
of the machine can read in ps and /proc/PID/cmdline; passwords come from
the environment or from files, and no message, -v included, shows one):
  --auth-file FILE         ZooKeeper: authenticate with its "digest USER:PASSWORD"
                           lines (several lines: several identities; # comments and
                           blank lines left out). Only the digest scheme: another
                           (sasl, ...) is a usage error naming it
  --acl creator|open|read  ZooKeeper: the ACL of the nodes zklock creates (lock nodes,
                           and the lock path and its parents when it creates them).
                           creator: the --auth-file identity alone may do anything
                           (the default with --auth-file); open: anyone may (the
                           default without: ZooKeeper refuses creator to a session
                           with no identity); read: creator, and anyone may read
                           (list and watch: zklock ls) but not delete or queue.
                           creator and read need --auth-file
  --tls-ca FILE            ZooKeeper (TLS on, to the servers' secureClientPort),
                           rediss://, mysql (TLS on): trust only the CAs (PEM) in
                           FILE, checking that each server's certificate names the
                           host given (postgres: the DSN's sslrootcert)
  --tls-cert FILE, --tls-key FILE  the client certificate and its key (PEM), for
                           servers that require one: both or neither. Without
                           --tls-ca they turn TLS on too, trusting the system's CAs

ZooKeeper: under --acl creator no client without the credentials can
delete a holder's node (ZooKeeper checks a delete against the parent's
ACL, so the lock path zklock creates guards its nodes) and so take its
lock, nor join its queue. A node that already exists keeps its ACL: let
zklock create the lock path, or create it with the same ACL. Curator
processes sharing the lock need the same credentials (authorization
("digest", ...)). ls takes --auth-file and the --tls flags too (not --acl:
it creates nothing); under creator it needs the credentials, under read
it does not. ZooKeeper accepts any digest credentials at connection: a
wrong password shows when a node is created or listed under the
identity's ACL (NOAUTH). zklock does not wait for ZooKeeper's connection
timeout once a whole round of attempts has failed the TLS handshake:
every address of every server of --servers (a name may resolve to
several), each tried once, and one of them tried again. A server that
could not be reached in the round (it may come back) keeps it waiting.

Redis (every redis backend): --redis takes URLs, redis://USER@HOST:PORT/DB
for an ACL user, rediss://HOST:PORT for TLS (--tls-ca, --tls-cert and
--tls-key then set the CA and the client certificate; with a redis:// or
bare address they are a usage error). The password is the first line of
--redis-password-file FILE, else $REDISCLI_AUTH; a password in a URL
(redis://USER:PASSWORD@...) is refused, exit 64, without echoing it. All
the servers of a list share one scheme, user and password; under
redis-sentinel those are the master's (and its replicas'). A user limited
by an ACL needs the lock's keys and commands: with --key-prefix P the rule
is redislock.ACLRule(P) (redlock.ACLRule(P) for Redlock), for P = app::
  ` + redislock.ACLRule("app:") + `
as in redis.conf: user locker on >PASSWORD ~app:* &app:* +evalsha ...
zklock also sends PING, which such a user may be refused: a NOPERM reply
to it counts as an answer.

Sentinels that ask for a password themselves (requirepass, or ACL users)
get their own: the first line of --sentinel-password-file FILE, else
$ZKLOCK_SENTINEL_AUTH. zklock gives it as the user of the --sentinel URLs
(the master's user too) or, when --sentinel-user USER is given, as USER:
--sentinel-user default suits sentinels with requirepass alone when the
URLs name an ACL user of the data nodes. Without a sentinel password the
sentinels are asked without credentials. A password in a --sentinel URL
is refused as in a --redis URL. zklock asks every sentinel for the master
before it connects, so that a refusal names the sentinel. A sentinel's ACL
user needs
  ` + sentinelACLRule + `
as in sentinel.conf: user watcher on >PASSWORD +sentinel|get-master-addr-by-name ...

SQL: the DSN is --dsn (no password: one there is refused, exit 64, its
message showing the DSN masked) or --dsn-file FILE (its first line), else
$ZKLOCK_DSN: a flag wins over the environment, as --redis-password-file
wins over $REDISCLI_AUTH, so that a zklock in another's COMMAND, which
inherits its $ZKLOCK_DSN, takes the DSN its own flags give. --dsn and
--dsn-file together are a usage error naming both. The same for
--listen-dsn, --listen-dsn-file and $ZKLOCK_LISTEN_DSN. pgx also reads
PGPASSWORD and ~/.pgpass when the DSN has no password. TLS to PostgreSQL
is the DSN's (sslmode=verify-full, sslrootcert, sslcert, sslkey). To
MySQL, --tls-ca, --tls-cert and --tls-key make every connection TLS, the
server's certificate checked for the DSN's host (a DSN whose tls is other
than true is then a usage error); without them TLS is the DSN's tls
setting (true: the system's CAs). Messages never show a DSN's password:
it is masked (postgres://USER:xxxxx@HOST/DB).

COMMAND inherits zklock's environment, secrets included: $REDISCLI_AUTH,
$ZKLOCK_SENTINEL_AUTH, $ZKLOCK_DSN, $ZKLOCK_LISTEN_DSN and $PGPASSWORD
when they are set.

A server that refuses zklock's credentials, or a TLS handshake that fails,
ends the run with exit 69 and a message naming the server, what failed,
the server's or crypto/tls's words and what to check, for example:
  zklock: redis 127.0.0.1:6380: authentication refused: WRONGPASS invalid
    username-password pair or user is disabled. (check the user of the URL
    and the password of $REDISCLI_AUTH)
  zklock: sentinel 127.0.0.1:26379: authentication refused: NOAUTH
    Authentication required. (no sentinel password was given:
    $ZKLOCK_SENTINEL_AUTH or --sentinel-password-file)
  zklock: zookeeper 127.0.0.1:2281: TLS: certificate not trusted: x509:
    certificate signed by unknown authority (the CA of --tls-ca did not sign it)
  zklock: postgres 127.0.0.1:5432: authentication refused: FATAL: password
    authentication failed for user "app" (SQLSTATE 28P01) (check the user
    and the password of the DSN)
  zklock: redis 127.0.0.1:6380: permission refused by the server's ACL: NOPERM ...
    (the user needs the ACL rule ~* &* +evalsha ...)
  zklock: sentinel 127.0.0.1:26379: authentication refused: WRONGPASS invalid
    username-password pair or user is disabled. (check --sentinel-user watcher
    and the password of $ZKLOCK_SENTINEL_AUTH)
  zklock: zookeeper localhost:2281: TLS: certificate not valid for the host
    name: x509: ...
  zklock: zookeeper 127.0.0.1:2281: TLS: the server refused the connection:
    remote error: tls: bad certificate (does the server want a client
    certificate? --tls-cert and --tls-key)
  zklock: zookeeper 127.0.0.1:2181: authentication refused: zk: not
    authenticated (the nodes' ACL does not grant the identity of --auth-file:
    a wrong user or password?)
  zklock: mysql 127.0.0.1:3306: authentication refused: Error 1045 (28000):
    Access denied for user ... (check the user and the password of the DSN)

Flags (before PATH, or between PATH and --):
  --servers HOST:PORT,...  ZooKeeper servers (default $ZK_SERVERS, else 127.0.0.1:2181)
  --namespace PATH         prefix of every path on the server (default: none)
  --session-timeout DUR    ZooKeeper session timeout (default 15s)
  --timeout DUR            stop waiting (connecting included) after DUR: exit 75 when the
                           lock was waited for, 69 when the servers were not reached, or
                           did not answer (ZooKeeper out of reach, the last attempt on the
                           other backends failed) when DUR passed (default 0: forever)
  --try                    fail at once with exit 75 if the lock is held (like flock -n)
  --progress DUR           with -v: while waiting, report every DUR the time waited and,
                           on ZooKeeper, the position in the queue and the holders with
                           how long each has held (default 10s; 0: never)
  --grace DUR              after the lock is lost, wait DUR between SIGTERM and SIGKILL (default 5s)
  --data STRING            stored in the lock node, of any kind; shown by ls (default HOSTNAME:PID);
                           ZooKeeper's only
  -q, --quiet              print no messages (the exit status tells)
  -v, --verbose            report connecting, waiting, acquiring, releasing, connection trouble,
                           the wait's length and the hold's, and why the lease ended (below)
DUR is a Go duration (500ms, 10s, 2m) or plain seconds (10, 0.5). Global
flags may also come before a subcommand: zklock --servers HOST ls PATH.

COMMAND is looked up (PATH search) before the lock is taken. It runs in its
own process group with these in its environment:
  ZKLOCK_PATH   the lock path
  ZKLOCK_NODE   the path of its lock node (ZooKeeper only; both without the namespace)
  ZKLOCK_TOKEN  the lease's fencing token (a positive decimal integer that grows
                from holder to holder: hand it to what the lock protects so it can
                refuse a stale holder); absent on Redlock, which has none
When zklock runs in the foreground of a terminal, COMMAND's process group
gets the terminal (so Ctrl-C, Ctrl-Z and interactive programs work) and
zklock takes it back when COMMAND exits; when COMMAND is stopped (Ctrl-Z,
or reading the terminal from the background), zklock stops too, so the
shell's fg and bg work on the pair. A zklock stopped for longer than the
session timeout loses its lock: nothing answers ZooKeeper's pings
meanwhile.

Signals: SIGINT, SIGTERM or SIGHUP while waiting stop the wait (nothing is
left on the server; a PostgreSQL or MySQL that does not answer holds up the
exit for up to ten seconds, then zklock says what it left to expire) and
zklock exits 128+N as a shell would (130, 143, 129). While COMMAND runs,
SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are forwarded to its
process group; zklock then waits for COMMAND, releases the lock and exits
with COMMAND's status. If zklock itself dies, COMMAND gets SIGTERM (Linux
parent-death signal).

Lost lock: when the lock can no longer be trusted while COMMAND runs (the
connection was suspended, which the session manager's default policy
counts as lost, as Curator's does; the session expired; a TTL lapsed; or
its ZooKeeper node was deleted, e.g. by an operator breaking the lock:
zklock watches the node), zklock sends SIGTERM (and SIGCONT) to COMMAND's
process group, waits until the group has exited or --grace has passed,
sends SIGKILL to what remains, reports the cause on stderr and exits 76.
It also exits 76 when the lock is found lost after COMMAND exited but
before it was released, since COMMAND's work may then not have been
exclusive. When COMMAND exits normally, processes it left running in its
group are not waited for.

Messages go to stderr, prefixed "zklock: ". Errors are printed unless -q
is given; with -v zklock also prints "connected to ZooKeeper at SERVERS
(session 0x...)", "waiting for mutex PATH", "acquired mutex PATH (token N,
node X)", "released mutex PATH" and the session's warnings (connection
suspended, session lost). Messages name the lock as its package and its
errors do: "mutex PATH", "rwlock PATH (read)" and "rwlock PATH (write)",
"exclusive PATH", "leader PATH", "semaphore PATH (1 lease)"; "redislock
PATH", "redlock PATH", "memcachedlock PATH", "sqllock PATH" on the other
backends. With -v zklock also says, on every backend, how long it waited
for the lock and whether it had to (contended: the lock was held, or a
waiter was ahead; on a Redis or memcached server just started, which
grants nothing for a TTL, the first wait counts too), at the end how long
it held the lock (from the acquire's return) and why the lease ended, and
each failed renewal of a TTL lease:
  zklock: acquired mutex /jobs/x (token 8, node /jobs/x/_c_...-lock-0000000001)
    after waiting 2.314s (contended)
  zklock: held mutex /jobs/x for 5.002s: released
or, for a loss, the cause (connection suspended, session lost, TTL lapsed,
lock gone from the server, renewal failed, client closed) and, when the
backend knows it, how long before the server could let the lock go zklock
was told ("told D after" when it was told late), then the error:
  zklock: held mutex /jobs/x for 1.335s: lost (connection suspended; told 666ms
    before the server could let the lock go): recipes: lock lost: ...
A wait that ends without the lock is reported as "waited D for LOCK:
timeout (contended)" (or locked, for --try, or canceled). These come from
a locktrace.Trace that zklock attaches to its acquire's context: the loss is
printed as the library tells it, before COMMAND is terminated.

zklock ls [flags] PATH prints the holders and the waiters of the ZooKeeper
lock at PATH, one per line, with how long each holder has held it: see
zklock ls --help.

zklock watch [flags] PATH prints the ZooKeeper nodes at and below PATH
(--depth N, --children, --node), then one line per change (created,
changed, deleted), until interrupted, across reconnections and new
sessions; --json prints JSON Lines: see zklock watch --help.

zklock services [flags] [NAME] lists the services registered in
curator-x-discovery's format under --base (default /services, Spring
Cloud's root), or the instances of NAME (--json: as stored): see zklock
services --help.

zklock register [flags] --service NAME --address A --port P -- COMMAND
registers an instance of NAME in that format while COMMAND runs, as zklock
holds a lock: unregistered when COMMAND ends or zklock is interrupted,
registered again after a new session, and COMMAND stopped with exit 76 if
it stays unregistered longer than the session timeout: see zklock
register --help.

Exit status:
  COMMAND's   COMMAND ran (128+N if it was killed by signal N)
  64          usage error: bad flag, missing PATH, --, or COMMAND, invalid PATH,
              a password on the command line, an unreadable --auth-file,
              --tls-ca, --redis-password-file, --sentinel-password-file or --dsn-file
  69          the backend unreachable (--timeout passing while connecting, or
              while the servers do not answer a wait, too),
              failing or refusing zklock (authentication refused, certificate not
              trusted; or, on PostgreSQL and MySQL, the lock table missing and not
              creatable), the last error named; COMMAND did not run
  70          internal error (COMMAND's status could not be had)
  75          lock not taken: --timeout passed while waiting for it (the servers
              answering), or --try found it held
  79          --try: the lock not granted to anyone, in the quiet period after a
              restart of its Redis or memcached server (it may have forgotten a
              holder, and grants nothing for a TTL): nobody may hold it
  76          lock lost while COMMAND ran; COMMAND was terminated
  126, 127    COMMAND could not be run / was not found
  128+N       zklock got signal N while waiting (130 SIGINT, 143 SIGTERM)

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
  zklock --backend postgres --dsn-file /etc/zklock/dsn /jobs/report -- ./report.sh
  ZKLOCK_DSN="app:$DB_PASSWORD@tcp(db1:3306)/app" zklock --backend mysql --try /jobs/x -- ./x.sh
  zklock --auth-file /etc/zklock/zk-auth --tls-ca ca.pem --servers zk1:2281 /jobs/x -- ./x.sh
  REDISCLI_AUTH=... zklock --backend redis --redis rediss://locker@r1:6380 --tls-ca ca.pem \
         --key-prefix app: /jobs/x -- ./x.sh
  zklock --backend redis-sentinel --sentinel s1:26379,s2:26379,s3:26379 --master mymaster \
         --sentinel-password-file /etc/zklock/sentinel-pw /jobs/x -- ./x.sh
  zklock ls /jobs/backup
  zklock --servers zk1:2181 ls /data/catalog
`
