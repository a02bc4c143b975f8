// CuratorLock is the Java side of package curator: a line-oriented agent that
// drives Apache Curator's lock recipes for interoperability tests.
//
// Usage: java -cp CLASSPATH CuratorLock CONNECT_STRING SESSION_TIMEOUT_MS
//
// It connects one CuratorFramework, prints "ready <session id in hex>" (or
// "error <message>" and exits), then reads one command a line from stdin and
// runs the commands strictly in order on one thread (Curator's locks belong to
// the thread that took them), printing exactly one reply line for each. A
// blocking acquire therefore holds back the replies of the commands sent after
// it. Failures reply "error <message>". End of stdin closes the client (its
// ephemeral nodes go at once) and exits, even while a command blocks.
//
// Commands (MS: milliseconds):
//
//	ping                    pong
//	session                 session <hex id>  (the current session)
//	mutex PATH              ok             (an InterProcessMutex on PATH)
//	acquire [MS]            acquired       (blocks; with MS: acquired | locked)
//	tryacquire [MS]         acquired | locked   (MS defaults to 0)
//	release                 released
//	held                    held true|false     (isOwnedByCurrentThread)
//	node                    node PATH | node none (this thread's lock node)
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
//	quit                    bye, then the client is closed and the JVM exits
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
import java.util.Collection;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.LockInternals;
import org.apache.curator.framework.recipes.locks.LockInternalsSorter;
import org.apache.curator.framework.recipes.locks.StandardLockInternalsDriver;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.utils.ZKPaths;

public final class CuratorLock {
    private static final int CONNECT_WAIT_SECONDS = 30;

    private static final Object REPLY = new Object();
    private static final Object SHUTDOWN = new Object();

    private static PrintStream out;
    private static CuratorFramework client;

    private static InterProcessMutex mutex;
    private static InterProcessReadWriteLock rw;
    private static String rwPath;
    private static boolean rwMadeLast; // "participants" lists the rw lock's nodes

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
        int sessionMs = Integer.parseInt(args[1]);
        client = CuratorFrameworkFactory.builder()
                .connectString(args[0])
                .sessionTimeoutMs(sessionMs)
                .connectionTimeoutMs(15000)
                .retryPolicy(new ExponentialBackoffRetry(100, 5))
                .build();
        client.getConnectionStateListenable().addListener(
                (c, state) -> System.err.println("curator-agent: connection state " + state));
        client.start();
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

    private static void shutdown(int status) {
        synchronized (SHUTDOWN) {
            try {
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
                rwMadeLast = false;
                return "ok";
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
            default:
                return "error unknown command " + f[0];
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

    private static String arg(String[] f) {
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

    private static InterProcessReadWriteLock rw() {
        if (rw == null) {
            throw new IllegalStateException("no read/write lock: send rw PATH first");
        }
        return rw;
    }

    // acquire blocks without MS (unless try), else waits at most MS.
    private static String acquire(InterProcessMutex lock, String[] f, boolean tryOnly) throws Exception {
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

    private static String describe(Throwable e) {
        String msg = e.getClass().getSimpleName();
        if (e.getMessage() != null) {
            msg += ": " + e.getMessage();
        }
        return msg.replace('\r', ' ').replace('\n', ' ');
    }
}
