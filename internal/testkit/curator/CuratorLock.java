// CuratorLock is the Java side of package curator: a line-oriented agent that
// drives Apache Curator's lock, semaphore and leader-election recipes for
// interoperability tests.
//
// Usage: java -cp CLASSPATH CuratorLock CONNECT_STRING SESSION_TIMEOUT_MS
//
// With CURATOR_AGENT_DIGEST=user:password in its environment (never on its
// command line, which every local user can read), every CuratorFramework it
// makes authenticates with the digest scheme as that user and creates every
// node, parents included, with the creator-only ACL (CREATOR_ALL_ACL).
//
// It connects one CuratorFramework, prints "ready <session id in hex>" (or
// "error <message>" and exits), then reads one command a line from stdin and
// runs the commands strictly in order on one thread (Curator's locks belong to
// the thread that took them), printing exactly one reply line for each. A
// blocking command (acquire, an await) therefore holds back the replies of the
// commands sent after it. Failures reply "error <message>". End of stdin
// closes the client (its ephemeral nodes go at once) and exits, even while a
// command blocks.
//
// Commands (MS: milliseconds; a command given MS waits at most that long,
// without it blocks until done):
//
//	ping                    pong
//	session                 session <hex id>  (the current session)
//	quit                    bye, then the client is closed and the JVM exits
//
// InterProcessMutex (one at a time: "mutex" and "revocable" replace it):
//
//	mutex PATH              ok             (an InterProcessMutex on PATH)
//	acquire [MS]            acquired       (blocks; with MS: acquired | locked)
//	tryacquire [MS]         acquired | locked   (MS defaults to 0)
//	release                 released
//	held                    held true|false     (isOwnedByCurrentThread)
//	node                    node PATH | node none (this thread's lock node)
//
// InterProcessReadWriteLock:
//
//	rw PATH                 ok             (an InterProcessReadWriteLock on PATH)
//	read-acquire [MS]       like acquire, on the read lock
//	read-tryacquire [MS]    like tryacquire, on the read lock
//	read-release            released
//	read-node               node PATH | node none
//	write-acquire [MS], write-tryacquire [MS], write-release, write-node
//	participants            participants NAME... : the nodes of the lock made
//	                        last, in Curator's queue order, names without the
//	                        path. For a mutex its getParticipantNodes; for a
//	                        read/write lock every read and write node.
//	read-participants       participants NAME... : ReadLock.getParticipantNodes
//	                        (Curator lists only the read nodes)
//	write-participants      participants NAME... : WriteLock.getParticipantNodes
//
// Revocation (Curator's Revocable and Revoker):
//
//	revocable PATH          ok: an InterProcessMutex on PATH made revocable
//	                        (makeRevocable), used by acquire, release, node...
//	                        like "mutex". Its listener only counts the
//	                        requests: the holder releases when told ("release").
//	await-revoked [MS]      revoked | not-revoked: waits for a revocation
//	                        request not yet reported by an earlier await-revoked
//	revocations             revocations N  (requests heard so far)
//	revoke PATH             sent  (Revoker.attemptRevoke: writes __REVOKE__
//	                        into the lock node PATH; none there is no error)
//
// InterProcessSemaphoreV2 (leases taken are kept until sem-release):
//
//	semaphore PATH MAX      ok             (an InterProcessSemaphoreV2, MAX leases)
//	semaphore PATH count    ok             (one whose max is the SharedCount)
//	sem-acquire [N [MS]]    acquired | locked  (acquire(N), N defaults to 1;
//	                        blocks without MS)
//	sem-release             released K     (returns all K leases held)
//	sem-held                held K         (leases held)
//	sem-nodes               nodes NAME...  (the held leases' nodes)
//	sem-participants        participants NAME... (getParticipantNodes: every
//	                        lease node, held or waiting for room)
//
// SharedCount (one at a time):
//
//	count PATH SEED         ok             (a SharedCount, started)
//	count-get               count V        (getCount: the value last seen)
//	count-set V             ok             (setCount)
//
// InterProcessSemaphoreMutex:
//
//	semmutex PATH           ok
//	semmutex-acquire [MS]   acquired | locked  (blocks without MS)
//	semmutex-release        released
//	semmutex-held           held true|false    (isAcquiredInThisProcess)
//
// LeaderLatch (one at a time; a closed latch cannot start again, so "latch"
// makes a new one):
//
//	latch PATH ID           ok             (a LeaderLatch with id ID, started)
//	latch-await [MS]        leading | not-leading   (await; once closed:
//	                        not-leading with MS, else error EOFException)
//	latch-has               leadership true|false   (hasLeadership)
//	latch-leader            leader ID | leader none (getLeader)
//	latch-participants      participants ID... (getParticipants, leader first)
//	latch-node              node PATH | node none   (getOurPath)
//	latch-close             closed         (close: our node is deleted)
//
// LeaderSelector (one at a time). Its takeLeadership holds leadership until
// the test says selector-release (or the selector is closed, or its
// connection is SUSPENDED or LOST: LeaderSelectorListenerAdapter):
//
//	selector PATH ID [requeue]  ok         (a LeaderSelector with id ID,
//	                        started; with "requeue", autoRequeue)
//	selector-await [MS]     leading | not-leading: waits until takeLeadership runs
//	selector-has            leadership true|false   (hasLeadership)
//	selector-release        released: takeLeadership returns (and Curator
//	                        releases its mutex; with autoRequeue it queues
//	                        again); replies once takeLeadership has returned
//	                        and hasLeadership is false (or, with autoRequeue,
//	                        leadership came back), within 10s
//	selector-requeue        requeued true|false     (requeue)
//	selector-leader         leader ID | leader none (getLeader)
//	selector-participants   participants ID... (getParticipants, leader first)
//	selector-close          closed         (close: takeLeadership is
//	                        interrupted; replies once it has returned, or
//	                        after 10s)
//
// Benchmarks (timed inside the JVM, so the pipe to the test costs nothing):
//
//	contend KIND PATH SESSIONS N [MAX]  done NANOS: SESSIONS threads, each
//	                        on a session of its own (made on first use, kept
//	                        for later runs), take turns until N acquisitions
//	                        in all are made, each acquire then release at
//	                        once. KIND is mutex (InterProcessMutex) or
//	                        semaphore (InterProcessSemaphoreV2 with MAX
//	                        leases, one lease per acquisition). NANOS runs
//	                        from the threads' start to the last release.
//
// Connection state changes are logged to stderr, never to stdout.

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.ACLProvider;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.locks.LockInternals;
import org.apache.curator.framework.recipes.locks.LockInternalsSorter;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.framework.recipes.locks.StandardLockInternalsDriver;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;

public final class CuratorLock {
    private static final int CONNECT_WAIT_SECONDS = 30;

    // DIGEST_ENV names the environment variable of the digest credentials.
    private static final String DIGEST_ENV = "CURATOR_AGENT_DIGEST";

    private static final Object REPLY = new Object();
    private static final Object SHUTDOWN = new Object();

    private static PrintStream out;
    private static String connectString;
    private static int sessionMs;
    private static CuratorFramework client;
    private static final List<CuratorFramework> benchClients = new ArrayList<>();

    private static InterProcessMutex mutex;
    private static InterProcessReadWriteLock rw;
    private static String rwPath;
    private static boolean rwMadeLast; // "participants" lists the rw lock's nodes
    private static Revocations revocations; // of the revocable mutex, if it is one

    private static InterProcessSemaphoreV2 semaphore;
    private static final List<Lease> leases = new ArrayList<>();
    private static InterProcessSemaphoreMutex semMutex;
    private static SharedCount count;

    private static LeaderLatch latch;
    private static LeaderSelector selector;
    private static boolean selectorOpen;
    private static Leading leading; // the selector's takeLeadership

    // SELECTOR_CLOSE_WAIT_MS bounds selector-close's wait for takeLeadership to return.
    private static final long SELECTOR_CLOSE_WAIT_MS = 10_000;

    // Curator's node names for the read/write lock.
    private static final String READ = "__READ__";
    private static final String WRITE = "__WRIT__";

    // rwOrder sorts the nodes of a read/write lock as Curator does: by the
    // sequence after the node's kind.
    private static final LockInternalsSorter rwOrder = (name, unused) ->
            StandardLockInternalsDriver.standardFixForSorting(name, name.contains(READ) ? READ : WRITE);

    private CuratorLock() {}

    public static void main(String[] args) throws Exception {
        // Replies go to the real stdout; anything a library prints goes to
        // stderr so that it cannot be mistaken for a reply.
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        if (args.length != 2) {
            reply("error usage: CuratorLock CONNECT_STRING SESSION_TIMEOUT_MS");
            System.exit(2);
        }
        connectString = args[0];
        sessionMs = Integer.parseInt(args[1]);
        client = newClient();
        if (!client.blockUntilConnected(CONNECT_WAIT_SECONDS, TimeUnit.SECONDS)) {
            reply("error not connected to " + args[0] + " within " + CONNECT_WAIT_SECONDS + "s");
            client.close();
            System.exit(1);
        }
        reply("ready " + Long.toHexString(client.getZookeeperClient().getZooKeeper().getSessionId()));

        BlockingQueue<String> commands = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> readCommands(commands), "curator-agent-stdin");
        reader.setDaemon(true);
        reader.start();

        while (true) {
            String line = commands.take().trim();
            String r;
            try {
                r = line.isEmpty() ? "error empty command" : run(line.split("\\s+"));
            } catch (Exception | LinkageError | AssertionError e) {
                r = "error " + describe(e);
            }
            reply(r);
            if (r.equals("bye")) {
                shutdown(0);
            }
        }
    }

    // readCommands queues stdin's lines; at end of input it shuts down, also
    // when the main thread is blocked in an acquire.
    private static void readCommands(BlockingQueue<String> commands) {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                commands.add(line);
            }
        } catch (Exception e) {
            System.err.println("curator-agent: reading stdin: " + describe(e));
        }
        System.err.println("curator-agent: end of input, closing");
        shutdown(0);
    }

    // newClient starts a CuratorFramework of its own session on the agent's
    // connect string, authenticated and creating creator-only nodes when
    // DIGEST_ENV gives credentials.
    private static CuratorFramework newClient() {
        CuratorFrameworkFactory.Builder b = CuratorFrameworkFactory.builder()
                .connectString(connectString)
                .sessionTimeoutMs(sessionMs)
                .connectionTimeoutMs(15000)
                .retryPolicy(new ExponentialBackoffRetry(100, 5));
        String digest = System.getenv(DIGEST_ENV);
        if (digest != null && !digest.isEmpty()) {
            b.authorization("digest", digest.getBytes(StandardCharsets.UTF_8)).aclProvider(new CreatorOnly());
        }
        CuratorFramework c = b.build();
        c.getConnectionStateListenable().addListener(
                (unused, state) -> System.err.println("curator-agent: connection state " + state));
        c.start();
        return c;
    }

    private static void shutdown(int status) {
        synchronized (SHUTDOWN) {
            try {
                synchronized (benchClients) {
                    benchClients.forEach(CuratorFramework::close);
                }
                client.close();
            } catch (Exception e) {
                System.err.println("curator-agent: close: " + describe(e));
            }
            System.exit(status);
        }
    }

    private static void reply(String line) {
        synchronized (REPLY) {
            out.println(line);
            out.flush();
        }
    }

    private static String run(String[] f) throws Exception {
        switch (f[0]) {
            case "ping":
                return "pong";
            case "session": // the current one: Curator starts a new one after expiry
                return "session " + Long.toHexString(client.getZookeeperClient().getZooKeeper().getSessionId());
            case "quit":
                return "bye";

            case "mutex":
                mutex = new InterProcessMutex(client, arg(f));
                revocations = null;
                rwMadeLast = false;
                return "ok";
            case "revocable": {
                InterProcessMutex m = new InterProcessMutex(client, arg(f));
                Revocations r = new Revocations();
                m.makeRevocable(unused -> r.requested());
                mutex = m;
                revocations = r;
                rwMadeLast = false;
                return "ok";
            }
            case "await-revoked":
                return revocations().await(millis(f, 1)) ? "revoked" : "not-revoked";
            case "revocations":
                noArgs(f);
                return "revocations " + revocations().count();
            case "revoke":
                Revoker.attemptRevoke(client, arg(f));
                return "sent";
            case "acquire":
                return acquire(mutex(), f, false);
            case "tryacquire":
                return acquire(mutex(), f, true);
            case "release":
                mutex().release();
                return "released";
            case "held":
                return "held " + mutex().isOwnedByCurrentThread();
            case "node":
                return node(mutex());

            case "rw":
                rwPath = arg(f);
                rw = new InterProcessReadWriteLock(client, rwPath);
                rwMadeLast = true;
                return "ok";
            case "read-acquire":
                return acquire(rw().readLock(), f, false);
            case "read-tryacquire":
                return acquire(rw().readLock(), f, true);
            case "read-release":
                rw().readLock().release();
                return "released";
            case "read-node":
                return node(rw().readLock());
            case "write-acquire":
                return acquire(rw().writeLock(), f, false);
            case "write-tryacquire":
                return acquire(rw().writeLock(), f, true);
            case "write-release":
                rw().writeLock().release();
                return "released";
            case "write-node":
                return node(rw().writeLock());

            case "participants":
                if (rwMadeLast) {
                    return participants(LockInternals.getSortedChildren(client, rwPath, WRITE, rwOrder));
                }
                if (mutex == null) {
                    throw new IllegalStateException("no lock: send mutex PATH or rw PATH first");
                }
                return participants(mutex.getParticipantNodes());
            case "read-participants":
                return participants(rw().readLock().getParticipantNodes());
            case "write-participants":
                return participants(rw().writeLock().getParticipantNodes());

            case "semaphore": {
                if (f.length != 3) {
                    throw new IllegalArgumentException("semaphore takes two arguments, a path and the max leases (or count)");
                }
                if (f[2].equals("count")) {
                    semaphore = new InterProcessSemaphoreV2(client, f[1], count());
                } else {
                    semaphore = new InterProcessSemaphoreV2(client, f[1], Integer.parseInt(f[2]));
                }
                return "ok";
            }
            case "count": {
                if (f.length != 3) {
                    throw new IllegalArgumentException("count takes two arguments, a path and the seed");
                }
                SharedCount c = new SharedCount(client, f[1], Integer.parseInt(f[2]));
                c.start();
                if (count != null) {
                    count.close();
                }
                count = c;
                return "ok";
            }
            case "count-get":
                noArgs(f);
                return "count " + count().getCount();
            case "count-set":
                if (f.length != 2) {
                    throw new IllegalArgumentException("count-set takes one argument, the value");
                }
                count().setCount(Integer.parseInt(f[1]));
                return "ok";
            case "sem-acquire":
                return semAcquire(f);
            case "sem-release": {
                noArgs(f);
                int n = leases.size();
                semaphore().returnAll(new ArrayList<>(leases));
                leases.clear();
                return "released " + n;
            }
            case "sem-held":
                noArgs(f);
                return "held " + leases.size();
            case "sem-nodes": {
                noArgs(f);
                StringBuilder b = new StringBuilder("nodes");
                for (Lease l : leases) {
                    String n = l.getNodeName();
                    b.append(' ').append(n.startsWith("/") ? ZKPaths.getNodeFromPath(n) : n);
                }
                return b.toString();
            }
            case "sem-participants":
                noArgs(f);
                return participants(semaphore().getParticipantNodes());

            case "semmutex":
                semMutex = new InterProcessSemaphoreMutex(client, arg(f));
                return "ok";
            case "semmutex-acquire":
                return acquire(semMutex(), f, false);
            case "semmutex-release":
                noArgs(f);
                semMutex().release();
                return "released";
            case "semmutex-held":
                noArgs(f);
                return "held " + semMutex().isAcquiredInThisProcess();

            case "latch": {
                if (f.length != 3) {
                    throw new IllegalArgumentException("latch takes two arguments, a path and an id");
                }
                if (latch != null && latch.getState() == LeaderLatch.State.STARTED) {
                    throw new IllegalStateException("a latch is running: send latch-close first");
                }
                LeaderLatch l = new LeaderLatch(client, f[1], f[2]);
                l.start();
                latch = l;
                return "ok";
            }
            case "latch-await": {
                long ms = millis(f, 1);
                if (ms < 0) {
                    latch().await();
                    return "leading";
                }
                return latch().await(ms, TimeUnit.MILLISECONDS) ? "leading" : "not-leading";
            }
            case "latch-has":
                noArgs(f);
                return "leadership " + latch().hasLeadership();
            case "latch-leader":
                noArgs(f);
                return leader(latch().getLeader());
            case "latch-participants":
                noArgs(f);
                return ids(latch().getParticipants());
            case "latch-node": {
                noArgs(f);
                String p = latch().getOurPath();
                return "node " + (p == null ? "none" : p);
            }
            case "latch-close":
                noArgs(f);
                latch().close();
                return "closed";

            case "selector":
                return newSelector(f);
            case "selector-await":
                return leading().await(millis(f, 1)) ? "leading" : "not-leading";
            case "selector-has":
                noArgs(f);
                return "leadership " + selector().hasLeadership();
            case "selector-release": {
                noArgs(f);
                long term = leading().release();
                // Curator clears its queued flag and then hasLeadership after
                // takeLeadership returns (and then releases its mutex): wait
                // for that, so that a selector-requeue that follows is not
                // refused as already queued; unless a new term has begun.
                long end = deadline(SELECTOR_CLOSE_WAIT_MS);
                while (selector.hasLeadership() && !leading.begunAfter(term) && System.nanoTime() < end) {
                    Thread.sleep(2);
                }
                return "released";
            }
            case "selector-requeue":
                noArgs(f);
                return "requeued " + selector().requeue();
            case "selector-leader":
                noArgs(f);
                return leader(selector().getLeader());
            case "selector-participants":
                noArgs(f);
                return ids(selector().getParticipants());
            case "selector-close":
                noArgs(f);
                if (!selectorOpen) {
                    throw new IllegalStateException("the selector is not running");
                }
                selectorOpen = false;
                selector.close();
                leading.awaitOut(SELECTOR_CLOSE_WAIT_MS);
                return "closed";

            case "contend":
                return contend(f);

            default: {
                String r = CuratorCaches.run(client, f);
                if (r == null) r = CuratorDiscovery.run(client, f);
                if (r == null) r = CuratorNodes.run(client, f);
                return r != null ? r : "error unknown command " + f[0];
            }
        }
    }

    // participants replies with node names, given paths or names.
    private static String participants(Collection<String> nodes) {
        StringBuilder b = new StringBuilder("participants");
        for (String p : nodes) {
            b.append(' ').append(p.startsWith("/") ? ZKPaths.getNodeFromPath(p) : p);
        }
        return b.toString();
    }

    static String arg(String[] f) {
        if (f.length != 2) {
            throw new IllegalArgumentException(f[0] + " takes one argument, a path");
        }
        return f[1];
    }

    private static InterProcessMutex mutex() {
        if (mutex == null) {
            throw new IllegalStateException("no mutex: send mutex PATH first");
        }
        return mutex;
    }

    private static Revocations revocations() {
        if (revocations == null) {
            throw new IllegalStateException("no revocable mutex: send revocable PATH first");
        }
        return revocations;
    }

    private static InterProcessSemaphoreV2 semaphore() {
        if (semaphore == null) {
            throw new IllegalStateException("no semaphore: send semaphore PATH MAX first");
        }
        return semaphore;
    }

    private static SharedCount count() {
        if (count == null) {
            throw new IllegalStateException("no shared count: send count PATH SEED first");
        }
        return count;
    }

    private static InterProcessSemaphoreMutex semMutex() {
        if (semMutex == null) {
            throw new IllegalStateException("no semaphore mutex: send semmutex PATH first");
        }
        return semMutex;
    }

    private static LeaderLatch latch() {
        if (latch == null) {
            throw new IllegalStateException("no latch: send latch PATH ID first");
        }
        return latch;
    }

    private static LeaderSelector selector() {
        if (selector == null) {
            throw new IllegalStateException("no selector: send selector PATH ID first");
        }
        return selector;
    }

    private static Leading leading() {
        selector();
        return leading;
    }

    static void noArgs(String[] f) {
        if (f.length != 1) {
            throw new IllegalArgumentException(f[0] + " takes no arguments");
        }
    }

    // millis parses the optional milliseconds at f[i] (the last argument):
    // -1 when absent (wait for ever).
    static long millis(String[] f, int i) {
        if (f.length > i + 1) {
            throw new IllegalArgumentException(f[0] + " takes at most " + i + " argument(s), the last milliseconds");
        }
        if (f.length <= i) {
            return -1;
        }
        long ms = Long.parseLong(f[i]);
        if (ms < 0) {
            throw new IllegalArgumentException(f[0] + ": negative milliseconds " + ms);
        }
        return ms;
    }

    // semAcquire: sem-acquire [N [MS]].
    private static String semAcquire(String[] f) throws Exception {
        if (f.length > 3) {
            throw new IllegalArgumentException("sem-acquire takes at most two arguments, leases and milliseconds");
        }
        int n = f.length >= 2 ? Integer.parseInt(f[1]) : 1;
        long ms = millis(f, 2);
        Collection<Lease> got = ms < 0
                ? semaphore().acquire(n)
                : semaphore().acquire(n, ms, TimeUnit.MILLISECONDS);
        if (got == null) {
            return "locked";
        }
        leases.addAll(got);
        return "acquired";
    }

    // contend: contend KIND PATH SESSIONS N [MAX].
    private static String contend(String[] f) throws Exception {
        if (f.length < 5 || f.length > 6 || !(f[1].equals("mutex") || f[1].equals("semaphore"))
                || f[1].equals("semaphore") != (f.length == 6)) {
            throw new IllegalArgumentException("contend takes mutex PATH SESSIONS N or semaphore PATH SESSIONS N MAX");
        }
        String path = f[2];
        int sessions = Integer.parseInt(f[3]);
        int n = Integer.parseInt(f[4]);
        int max = f.length == 6 ? Integer.parseInt(f[5]) : 0;
        if (sessions < 1 || n < 1 || (f.length == 6 && max < 1)) {
            throw new IllegalArgumentException("contend: SESSIONS, N and MAX must be positive");
        }
        List<Runnable> turns = new ArrayList<>();
        java.util.concurrent.atomic.AtomicInteger next = new java.util.concurrent.atomic.AtomicInteger();
        for (CuratorFramework c : benchClients(sessions)) {
            InterProcessMutex m = max == 0 ? new InterProcessMutex(c, path) : null;
            InterProcessSemaphoreV2 s = max == 0 ? null : new InterProcessSemaphoreV2(c, path, max);
            turns.add(() -> {
                try {
                    while (next.getAndIncrement() < n) {
                        if (m != null) {
                            m.acquire();
                            m.release();
                        } else {
                            s.returnLease(s.acquire());
                        }
                    }
                } catch (Exception e) {
                    throw new IllegalStateException(describe(e), e);
                }
            });
        }
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(sessions);
        try {
            long start = System.nanoTime();
            List<java.util.concurrent.Future<?>> done = new ArrayList<>();
            for (Runnable r : turns) {
                done.add(pool.submit(r));
            }
            for (java.util.concurrent.Future<?> d : done) {
                d.get();
            }
            return "done " + (System.nanoTime() - start);
        } finally {
            pool.shutdownNow();
        }
    }

    // benchClients returns the first k of the benchmark's sessions, starting
    // the missing ones.
    static List<CuratorFramework> benchClients(int k) throws InterruptedException {
        synchronized (benchClients) {
            while (benchClients.size() < k) {
                CuratorFramework c = newClient();
                benchClients.add(c);
                if (!c.blockUntilConnected(CONNECT_WAIT_SECONDS, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("benchmark session not connected within " + CONNECT_WAIT_SECONDS + "s");
                }
            }
            return new ArrayList<>(benchClients.subList(0, k));
        }
    }

    // newSelector: selector PATH ID [requeue].
    private static String newSelector(String[] f) {
        if (f.length < 3 || f.length > 4 || (f.length == 4 && !f[3].equals("requeue"))) {
            throw new IllegalArgumentException("selector takes a path, an id and optionally requeue");
        }
        if (selectorOpen) {
            throw new IllegalStateException("a selector is running: send selector-close first");
        }
        Leading l = new Leading();
        LeaderSelector s = new LeaderSelector(client, f[1], new LeaderSelectorListenerAdapter() {
            @Override
            public void takeLeadership(CuratorFramework unused) throws Exception {
                l.lead();
            }
        });
        s.setId(f[2]);
        if (f.length == 4) {
            s.autoRequeue();
        }
        s.start();
        selector = s;
        leading = l;
        selectorOpen = true;
        return "ok";
    }

    private static String leader(Participant p) {
        return "leader " + (p.isLeader() ? p.getId() : "none");
    }

    private static String ids(Collection<Participant> ps) {
        StringBuilder b = new StringBuilder("participants");
        for (Participant p : ps) {
            b.append(' ').append(p.getId());
        }
        return b.toString();
    }

    // deadline is System.nanoTime()'s value ms from now, or Long.MAX_VALUE
    // for ms < 0.
    private static long deadline(long ms) {
        return ms < 0 ? Long.MAX_VALUE : System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
    }

    // waitUntil waits on monitor (whose lock the caller holds) until
    // deadline; false once it has passed.
    private static boolean waitUntil(Object monitor, long deadline) throws InterruptedException {
        if (deadline == Long.MAX_VALUE) {
            monitor.wait();
            return true;
        }
        long left = deadline - System.nanoTime();
        if (left <= 0) {
            return false;
        }
        TimeUnit.NANOSECONDS.timedWait(monitor, left);
        return true;
    }

    // CreatorOnly gives every node Curator creates, parents included, to
    // the identities of the session that creates it.
    private static final class CreatorOnly implements ACLProvider {
        @Override
        public List<ACL> getDefaultAcl() {
            return ZooDefs.Ids.CREATOR_ALL_ACL;
        }

        @Override
        public List<ACL> getAclForPath(String path) {
            return ZooDefs.Ids.CREATOR_ALL_ACL;
        }
    }

    // Revocations counts the revocation requests a revocable mutex heard
    // (its listener runs on a Curator thread).
    private static final class Revocations {
        private long heard, reported;

        synchronized void requested() {
            heard++;
            System.err.println("curator-agent: revocation requested");
            notifyAll();
        }

        synchronized long count() {
            return heard;
        }

        // await waits for a request not yet reported; ms < 0: for ever.
        synchronized boolean await(long ms) throws InterruptedException {
            long end = deadline(ms);
            while (heard <= reported) {
                if (!waitUntil(this, end)) {
                    return false;
                }
            }
            reported++;
            return true;
        }
    }

    // Leading is the selector's takeLeadership, driven by the test: each
    // term (a call of takeLeadership) lasts until selector-release, or until
    // Curator interrupts it.
    private static final class Leading {
        private boolean in;      // takeLeadership is running
        private long terms;      // takeLeadership calls begun
        private long ended;      // and returned
        private long releasedTo; // terms up to this one are told to return

        void lead() throws InterruptedException {
            long term;
            synchronized (this) {
                in = true;
                term = ++terms;
                notifyAll();
            }
            try {
                synchronized (this) {
                    while (releasedTo < term) {
                        wait();
                    }
                }
            } finally {
                synchronized (this) {
                    in = false;
                    ended++;
                    notifyAll();
                }
            }
        }

        // await waits until takeLeadership runs; ms < 0: for ever.
        synchronized boolean await(long ms) throws InterruptedException {
            long end = deadline(ms);
            while (!in) {
                if (!waitUntil(this, end)) {
                    return false;
                }
            }
            return true;
        }

        // release tells the running takeLeadership to return, waits until it
        // has, and returns its term.
        synchronized long release() throws InterruptedException {
            if (!in) {
                throw new IllegalStateException("not leading: takeLeadership is not running");
            }
            releasedTo = terms;
            notifyAll();
            while (ended < releasedTo) {
                wait();
            }
            return releasedTo;
        }

        synchronized boolean begunAfter(long term) {
            return terms > term;
        }

        // awaitOut waits, at most ms, until takeLeadership is not running.
        synchronized void awaitOut(long ms) throws InterruptedException {
            long end = deadline(ms);
            while (in && waitUntil(this, end)) {
                // wait
            }
        }
    }

    private static InterProcessReadWriteLock rw() {
        if (rw == null) {
            throw new IllegalStateException("no read/write lock: send rw PATH first");
        }
        return rw;
    }

    // acquire blocks without MS (unless try), else waits at most MS.
    private static String acquire(InterProcessLock lock, String[] f, boolean tryOnly) throws Exception {
        if (f.length > 2) {
            throw new IllegalArgumentException(f[0] + " takes at most one argument, milliseconds");
        }
        if (f.length == 1 && !tryOnly) {
            lock.acquire();
            return "acquired";
        }
        long ms = f.length == 2 ? Long.parseLong(f[1]) : 0;
        return lock.acquire(ms, TimeUnit.MILLISECONDS) ? "acquired" : "locked";
    }

    // node reports the lock node this thread holds: Curator keeps it in
    // InterProcessMutex.getLockPath, which is protected.
    private static String node(InterProcessMutex lock) throws Exception {
        Method m = InterProcessMutex.class.getDeclaredMethod("getLockPath");
        m.setAccessible(true);
        Object p;
        try {
            p = m.invoke(lock);
        } catch (InvocationTargetException e) {
            throw (e.getCause() instanceof Exception) ? (Exception) e.getCause() : e;
        }
        return "node " + (p == null ? "none" : p);
    }

    static String describe(Throwable e) {
        String msg = e.getClass().getSimpleName();
        if (e.getMessage() != null) {
            msg += ": " + e.getMessage();
        }
        return msg.replace('\r', ' ').replace('\n', ' ');
    }
}
