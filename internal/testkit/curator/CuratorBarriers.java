// CuratorBarriers is the barrier half of the agent (CuratorLock runs its
// commands): Curator's DistributedBarrier and DistributedDoubleBarrier, for
// the tests of the Go barriers beside Curator.
//
// A barrier's wait blocks, so each member's wait runs on a thread of its
// own and the agent's thread only starts it and reads its state: several
// members, each a DistributedDoubleBarrier of the agent's one session, can
// wait at once in one JVM. Commands (NAME names a member; MS: milliseconds):
//
//	dbarrier NAME PATH QTY  ok: a DistributedDoubleBarrier on PATH for QTY
//	                        members (replaces NAME's, which must be idle)
//	denter NAME             started: enter() runs on NAME's thread
//	dleave NAME             started: leave() runs on NAME's thread
//	barrier NAME PATH       ok: a DistributedBarrier on PATH
//	barrier-set NAME        ok (setBarrier)
//	barrier-remove NAME     ok (removeBarrier)
//	barrier-wait NAME       started: waitOnBarrier() runs on NAME's thread
//	barrier-state NAME      state S: what NAME's last wait did so far:
//	                        waiting, through, or error:<exception class>
//	barrier-await NAME MS   state S: waits at most MS for NAME's wait to end
//
// A double barrier member goes from "denter" through "waiting" to
// "through", and again with "dleave".

import java.util.concurrent.ConcurrentHashMap;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.barriers.DistributedBarrier;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;

final class CuratorBarriers {
    private static final ConcurrentHashMap<String, Member> members = new ConcurrentHashMap<>();

    private CuratorBarriers() {}

    // Waiter is one blocking call of a barrier.
    private interface Waiter {
        void run() throws Exception;
    }

    // Member is one named barrier and the state of its last wait.
    private static final class Member {
        final DistributedDoubleBarrier doubleBarrier;
        final DistributedBarrier barrier;
        private String state = "idle";
        private Thread thread;

        Member(DistributedDoubleBarrier d, DistributedBarrier b) {
            doubleBarrier = d;
            barrier = b;
        }

        synchronized void start(Waiter w) {
            if (state.equals("waiting")) {
                throw new IllegalStateException("a wait of this member is running");
            }
            state = "waiting";
            thread = new Thread(() -> {
                String s;
                try {
                    w.run();
                    s = "through";
                } catch (Exception e) {
                    s = "error:" + e.getClass().getSimpleName();
                }
                synchronized (this) {
                    state = s;
                    notifyAll();
                }
            });
            thread.setDaemon(true);
            thread.start();
        }

        synchronized String state() {
            return state;
        }

        synchronized String await(long ms) throws InterruptedException {
            long end = System.nanoTime() + ms * 1_000_000L;
            while (state.equals("waiting")) {
                long left = (end - System.nanoTime()) / 1_000_000L;
                if (left <= 0) {
                    break;
                }
                wait(left);
            }
            return state;
        }
    }

    // run runs f if it is a command of this file, else returns null.
    static String run(CuratorFramework client, String[] f) throws Exception {
        switch (f[0]) {
            case "dbarrier": {
                args(f, 4, "dbarrier takes a name, a path and a member count");
                put(f[1], new Member(new DistributedDoubleBarrier(client, f[2], Integer.parseInt(f[3])), null));
                return "ok";
            }
            case "denter": {
                args(f, 2, "denter takes a name");
                Member m = doubleOf(f[1]);
                m.start(m.doubleBarrier::enter);
                return "started";
            }
            case "dleave": {
                args(f, 2, "dleave takes a name");
                Member m = doubleOf(f[1]);
                m.start(m.doubleBarrier::leave);
                return "started";
            }
            case "barrier": {
                args(f, 3, "barrier takes a name and a path");
                put(f[1], new Member(null, new DistributedBarrier(client, f[2])));
                return "ok";
            }
            case "barrier-set":
                args(f, 2, "barrier-set takes a name");
                barrierOf(f[1]).barrier.setBarrier();
                return "ok";
            case "barrier-remove":
                args(f, 2, "barrier-remove takes a name");
                barrierOf(f[1]).barrier.removeBarrier();
                return "ok";
            case "barrier-wait": {
                args(f, 2, "barrier-wait takes a name");
                Member m = barrierOf(f[1]);
                m.start(m.barrier::waitOnBarrier);
                return "started";
            }
            case "barrier-state":
                args(f, 2, "barrier-state takes a name");
                return "state " + member(f[1]).state();
            case "barrier-await": {
                args(f, 3, "barrier-await takes a name and milliseconds");
                long ms = CuratorLock.millis(f, 2);
                return "state " + member(f[1]).await(ms);
            }
            default:
                return null;
        }
    }

    private static void args(String[] f, int n, String usage) {
        if (f.length != n) {
            throw new IllegalArgumentException(usage);
        }
    }

    private static void put(String name, Member m) {
        Member old = members.get(name);
        if (old != null && old.state().equals("waiting")) {
            throw new IllegalStateException(name + " is waiting");
        }
        members.put(name, m);
    }

    private static Member member(String name) {
        Member m = members.get(name);
        if (m == null) {
            throw new IllegalArgumentException("no member " + name);
        }
        return m;
    }

    private static Member doubleOf(String name) {
        Member m = member(name);
        if (m.doubleBarrier == null) {
            throw new IllegalArgumentException(name + " is not a double barrier");
        }
        return m;
    }

    private static Member barrierOf(String name) {
        Member m = member(name);
        if (m.barrier == null) {
            throw new IllegalArgumentException(name + " is not a barrier");
        }
        return m;
    }
}
