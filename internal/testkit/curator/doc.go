// Package curator runs Apache Curator's recipes in a separate JVM so that
// tests can check that the Go recipes of zkrecipes interoperate with Curator
// on the same ZooKeeper paths.
//
// An Agent is one java process running CuratorLock.java (embedded in this
// package), which connects one CuratorFramework (its own ZooKeeper session)
// and is driven line by line over stdin and stdout: the test sends a command
// ("mutex /p", "acquire", "release", ...) and reads its one-line reply
// ("ok", "acquired", "released", "error <message>"). The commands and replies
// are listed in CuratorLock.java; in short:
//
//   - InterProcessMutex: mutex PATH, acquire [MS], tryacquire [MS], release,
//     held, node, participants.
//   - InterProcessReadWriteLock: rw PATH, read-acquire, write-acquire, ...
//   - Revocation: revocable PATH (an InterProcessMutex made revocable, used
//     by the mutex commands), await-revoked [MS] (revoked | not-revoked),
//     revocations, and revoke PATH (Revoker.attemptRevoke).
//   - InterProcessSemaphoreV2: semaphore PATH MAX (or "count": the max is
//     the SharedCount), sem-acquire [N [MS]] (acquired | locked),
//     sem-release (released K), sem-held, sem-nodes, sem-participants.
//   - SharedCount: count PATH SEED, count-get (count V), count-set V.
//   - InterProcessSemaphoreMutex: semmutex PATH, semmutex-acquire [MS],
//     semmutex-release, semmutex-held.
//   - LeaderLatch: latch PATH ID, latch-await [MS] (leading | not-leading),
//     latch-has (leadership true|false), latch-leader (leader ID | leader
//     none), latch-participants (participants ID...), latch-node,
//     latch-close.
//   - LeaderSelector, whose takeLeadership holds until told: selector PATH
//     ID [requeue] (autoRequeue), selector-await [MS], selector-has,
//     selector-release, selector-requeue, selector-leader,
//     selector-participants, selector-close.
//   - Benchmarks: contend mutex|semaphore PATH SESSIONS N [MAX] (done
//     NANOS), timed in the JVM; Contend runs it.
//   - Caches (CuratorCaches.java): cache PATH DEPTH [compressed] (a
//     CuratorCache) or treecache PATH DEPTH [compressed] (a TreeCache),
//     cache-await [MS], cache-view (every node: path, czxid, mzxid, version,
//     data), cache-events (created, changed, deleted, initialized since the
//     last call), cache-close; StartCache, AwaitCache, CacheView,
//     CacheEvents and CloseCache run them.
//   - Queues (CuratorQueues.java): queue-start KIND PATH LOCKPATH|- (a
//     consumer of DistributedQueue, its Priority, Delay or Id variant),
//     queue-consumed, queue-close, queue-put KIND PATH ARG HEX... (put or
//     putMulti), sq-offer PATH HEX and sq-poll PATH
//     (SimpleDistributedQueue); StartQueueConsumer, QueueConsumed,
//     CloseQueueConsumer, QueuePut, SimpleOffer and SimplePoll run them.
//   - Shared values and atomic counters (CuratorValues.java): atomic-long
//     PATH RETRIES [LOCKPATH] (a DistributedAtomicLong, PromotedToLock with
//     a lock path), atomic-inc N (incremented S F), atomic-get (long V),
//     atomic-cas EXPECTED NEW (applied PRE | not-applied PRE); sharedvalue
//     PATH HEX (a SharedValue), sharedvalue-get (value HEX VERSION),
//     sharedvalue-set HEX, sharedvalue-tryset HEX (true | false),
//     sharedvalue-seen (the values its listener was told).
//   - A writer: create PATH HEX [ephemeral] [sequential] [compressed], set
//     PATH HEX [compressed], delete PATH (with its children), compressed
//     with Curator's gzip; Create, SetData and Delete run them.
//   - Barriers (CuratorBarriers.java), each member's wait on a thread of
//     its own so that several wait at once: dbarrier NAME PATH QTY (a
//     DistributedDoubleBarrier), denter NAME, dleave NAME; barrier NAME
//     PATH (a DistributedBarrier), barrier-set NAME, barrier-remove NAME,
//     barrier-wait NAME; barrier-state NAME and barrier-await NAME MS
//     (waiting, through, or error:<exception>); DoubleBarrier, Enter, Leave, Barrier,
//     SetBarrier, RemoveBarrier, WaitOnBarrier, BarrierState and
//     AwaitBarrier run them.
//   - Cache benchmarks, timed in the JVM: cache-load curator|tree PATH (the
//     initial load of a new cache and the heap it retains) and
//     cache-latency N RATE PATH... (from a write, by a session of its own,
//     to its event in the running cache); LoadCache, MeasureCacheLatency
//     and BenchCache run them.
//   - Nodes (CuratorNodes.java), each known by its path: pnode PATH MODE
//     HEX [protected] [MS] (a PersistentNode, started, after its initial
//     create: path ACTUAL), pnode-path, pnode-set, pnode-close; group PATH
//     ID HEX (a GroupMember), group-members (members ID,HEX...), group-set,
//     group-close; StartPersistentNode, PersistentNodePath,
//     SetPersistentNodeData, ClosePersistentNode, JoinGroup, GroupMembers,
//     SetGroupData and LeaveGroup run them.
//
// WithDigestAuth starts an agent whose CuratorFrameworks authenticate as a
// digest user and create every node with the creator-only ACL, as a Go
// client with session.WithDigestAuth and
// session.WithACL(session.AuthACL(session.PermAll)) does; the credentials reach the
// JVM through its environment, never its command line. An agent without
// them, on paths such a client made, gets "error NoAuthException: ..."
// replies.
//
// The agent runs the commands strictly in order on one Java thread, so a
// blocking command (acquire, an await) holds back the replies of the
// commands sent after it; use Send for it and Expect for its reply. List and
// Value parse the replies that carry a list or a value.
//
// The program (every .java file of this package) is compiled with javac
// once per test process (and cached across processes under the user's
// cache dir, keyed by the sources and classpath),
// against Curator, ZooKeeper and their dependencies found in $CURATOR_LIB (a
// directory of jars) or Debian's /usr/share/java (apt-get install
// libcurator-recipes-java libcurator-discovery-java openjdk-17-jdk-headless). java and javac come from
// $JAVA_HOME/bin or PATH. When something is missing, Available says what;
// tests then call harness.Unavailable:
//
//	if err := curator.Available(); err != nil {
//		harness.Unavailable(t, "curator: %v; %s", err, curator.Hint)
//	}
//	a := curator.Start(t, servers)
//	a.Do(t, "mutex /locks/x") // "ok"
//	a.Expect(t, "acquired", ...)
//
// Every wait is bounded. The JVM runs in its own process group, gets SIGKILL
// if the test binary dies, and is stopped at the test's cleanup: end of stdin
// first (Curator closes its session, so its ephemeral nodes go at once), then
// SIGKILL to the group. Kill simulates a crash: the session stays on the
// server until it expires. The agent's stderr (Curator's and ZooKeeper's
// warnings) and the last commands and replies are logged when the test fails.
package curator
