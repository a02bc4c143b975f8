// CuratorCaches is the cache half of the agent (CuratorLock runs its
// commands): Curator's CuratorCache and TreeCache on a path, a writer, and
// the caches' benchmarks, for the tests of the Go cache beside Curator.
//
// Commands (run, like CuratorLock's, one at a time on the agent's thread;
// MS: milliseconds; DEPTH: levels below PATH, or "all"; HEX: data in hex,
// "-" for none):
//
//	cache PATH DEPTH [compressed]  ok: a CuratorCache on PATH, started (one
//	                        cache at a time: a new one closes the last).
//	                        DEPTH 0 is Options.SINGLE_NODE_CACHE; otherwise
//	                        Curator caches the whole tree and the view and
//	                        events are limited to DEPTH levels below PATH
//	                        (as Curator's forPathChildrenCache listener
//	                        filters its events). "compressed" is
//	                        Options.COMPRESSED_DATA.
//	treecache PATH DEPTH [compressed]  ok: a TreeCache (setMaxDepth DEPTH,
//	                        setDataIsCompressed), started
//	cache-await [MS]        initialized | not-initialized: waits for the
//	                        cache's initialized event
//	cache-view              view NODE... : the cache's current view in path
//	                        order, each node PATH,CZXID,MZXID,VERSION,HEX with
//	                        PATH escaped (%XX for '%', ',' and every byte
//	                        outside printable ASCII). Read node by node, not
//	                        atomically: compare it once writes are quiet.
//	cache-events            events EVENT... : the events seen since the last
//	                        cache-events, in order of arrival, each
//	                        created|changed|deleted,PATH,CZXID,MZXID,VERSION
//	                        (a deleted node's last stat) or "initialized"
//	cache-close             closed
//
// Writer (on the agent's session; parents are created persistent, empty):
//
//	create PATH HEX [ephemeral] [sequential] [compressed]
//	                        stat PATH CZXID MZXID VERSION (PATH is the node
//	                        made: sequential adds its suffix)
//	set PATH HEX [compressed]  stat PATH CZXID MZXID VERSION
//	delete PATH             deleted (its children first)
//
// "compressed" writes with Curator's compression (its default
// GzipCompressionProvider: gzip, magic 1f 8b).
//
// Benchmarks (timed inside the JVM with System.nanoTime):
//
//	cache-load curator|tree PATH  loaded NODES NANOS BYTES: a new
//	                        CuratorCache (whole tree) or TreeCache (no depth
//	                        limit) on PATH, beside the current one if any;
//	                        NANOS from start() to its initialized event;
//	                        BYTES the heap it retains: the median of
//	                        GC_SAMPLES readings of the used heap, each after
//	                        System.gc(), with the loaded cache less that
//	                        before it was built. Then it is closed.
//	cache-latency N RATE PATH...  latency MISSED NANOS... : a writer on a
//	                        session of its own (the first of contend's) sets
//	                        DATA_BYTES of new data N times, RATE per second,
//	                        on the PATHs in turn (asynchronously, paced from
//	                        one start), while the current cache (initialized)
//	                        watches; NANOS, in write order, is from the
//	                        moment each write is sent to the arrival of the
//	                        cache's changed event with that write's mzxid.
//	                        MISSED counts the writes that got no event of
//	                        their own (a watch cache folds writes made
//	                        before it re-reads a node into one event) within
//	                        LATENCY_QUIET_MS of the last event.

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.cache.TreeCache;
import org.apache.curator.framework.recipes.cache.TreeCacheEvent;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.data.Stat;

final class CuratorCaches {
    // GC_SAMPLES readings of the used heap make one median (cache-load).
    private static final int GC_SAMPLES = 5;
    // LOAD_WAIT_MS bounds cache-load's wait for the initialized event.
    private static final long LOAD_WAIT_MS = 300_000;
    // DATA_BYTES is the size of each write of cache-latency (the issue's
    // 100 B nodes).
    static final int DATA_BYTES = 100;
    // LATENCY_QUIET_MS: cache-latency stops waiting for events once every
    // write has one or none has come for this long.
    private static final long LATENCY_QUIET_MS = 2_000;
    // ACK_WAIT_MS bounds cache-latency's wait for its writes' replies.
    private static final long ACK_WAIT_MS = 60_000;

    private static final HexFormat HEX = HexFormat.of();

    private static Watched current;

    private CuratorCaches() {}

    // run runs f if it is a command of this file, else returns null.
    static String run(CuratorFramework client, String[] f) throws Exception {
        switch (f[0]) {
            case "cache":
            case "treecache": {
                if (f.length < 3 || f.length > 4 || (f.length == 4 && !f[3].equals("compressed"))) {
                    throw new IllegalArgumentException(f[0] + " takes a path, a depth (or all) and optionally compressed");
                }
                Watched w = new Watched(client, f[0].equals("treecache"), f[1], depth(f[2]), f.length == 4);
                closeCurrent();
                current = w;
                w.start();
                return "ok";
            }
            case "cache-await": {
                long ms = CuratorLock.millis(f, 1);
                return current().awaitInitialized(ms) ? "initialized" : "not-initialized";
            }
            case "cache-view":
                CuratorLock.noArgs(f);
                return current().view();
            case "cache-events":
                CuratorLock.noArgs(f);
                return current().drainEvents();
            case "cache-close":
                CuratorLock.noArgs(f);
                current();
                closeCurrent();
                return "closed";

            case "create":
                return create(client, f);
            case "set": {
                boolean compressed = flags(f, 3, "set takes a path, data in hex and optionally compressed", "compressed")[0];
                byte[] data = data(f[2]);
                Stat st = compressed
                        ? client.setData().compressed().forPath(f[1], data)
                        : client.setData().forPath(f[1], data);
                return stat(f[1], st);
            }
            case "delete":
                client.delete().deletingChildrenIfNeeded().forPath(CuratorLock.arg(f));
                return "deleted";

            case "cache-load":
                return load(client, f);
            case "cache-latency":
                return latency(f);

            default:
                return null;
        }
    }

    private static Watched current() {
        if (current == null) {
            throw new IllegalStateException("no cache: send cache PATH DEPTH or treecache PATH DEPTH first");
        }
        return current;
    }

    private static void closeCurrent() {
        if (current != null) {
            current.close();
            current = null;
        }
    }

    // depth parses DEPTH: a non-negative level count or "all".
    private static int depth(String s) {
        if (s.equals("all")) {
            return Integer.MAX_VALUE;
        }
        int d = Integer.parseInt(s);
        if (d < 0) {
            throw new IllegalArgumentException("negative depth " + d);
        }
        return d;
    }

    // flags parses the optional words of f from index first, each one of
    // allowed at most once, and says which are present.
    private static boolean[] flags(String[] f, int first, String usage, String... allowed) {
        if (f.length < first) {
            throw new IllegalArgumentException(usage);
        }
        boolean[] on = new boolean[allowed.length];
        for (int i = first; i < f.length; i++) {
            int k = Arrays.asList(allowed).indexOf(f[i]);
            if (k < 0 || on[k]) {
                throw new IllegalArgumentException(usage);
            }
            on[k] = true;
        }
        return on;
    }

    static byte[] data(String hex) {
        if (hex.equals("-")) {
            return new byte[0];
        }
        try {
            return HEX.parseHex(hex);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("data " + hex + ": want hex digits, or - for none");
        }
    }

    // create: create PATH HEX [ephemeral] [sequential] [compressed].
    private static String create(CuratorFramework client, String[] f) {
        boolean[] on = flags(f, 3, "create takes a path, data in hex and optionally ephemeral, sequential, compressed",
                "ephemeral", "sequential", "compressed");
        CreateMode mode = on[0]
                ? (on[1] ? CreateMode.EPHEMERAL_SEQUENTIAL : CreateMode.EPHEMERAL)
                : (on[1] ? CreateMode.PERSISTENT_SEQUENTIAL : CreateMode.PERSISTENT);
        byte[] data = data(f[2]);
        Stat st = new Stat();
        try {
            String made = on[2]
                    ? client.create().compressed().storingStatIn(st).creatingParentsIfNeeded().withMode(mode).forPath(f[1], data)
                    : client.create().storingStatIn(st).creatingParentsIfNeeded().withMode(mode).forPath(f[1], data);
            return stat(made, st);
        } catch (Exception e) {
            throw new IllegalStateException(CuratorLock.describe(e), e);
        }
    }

    private static String stat(String path, Stat st) {
        return "stat " + escape(path) + " " + st.getCzxid() + " " + st.getMzxid() + " " + st.getVersion();
    }

    // escape makes a path one field of a reply: %XX (UTF-8) for '%', ',' and
    // every byte outside printable ASCII, so that spaces and commas in node
    // names cannot split it (Go's url.PathUnescape reverses it).
    static String escape(String path) {
        StringBuilder b = new StringBuilder(path.length());
        for (byte c : path.getBytes(java.nio.charset.StandardCharsets.UTF_8)) {
            if (c > ' ' && c < 0x7f && c != '%' && c != ',') {
                b.append((char) c);
            } else {
                b.append('%').append(HEX.toHexDigits(c).toUpperCase());
            }
        }
        return b.toString();
    }

    // load: cache-load curator|tree PATH.
    private static String load(CuratorFramework client, String[] f) throws Exception {
        if (f.length != 3 || !(f[1].equals("curator") || f[1].equals("tree"))) {
            throw new IllegalArgumentException("cache-load takes curator or tree and a path");
        }
        long before = usedHeap();
        Watched w = new Watched(client, f[1].equals("tree"), f[2], Integer.MAX_VALUE, false);
        long start = System.nanoTime();
        w.start();
        try {
            if (!w.awaitInitialized(LOAD_WAIT_MS)) {
                throw new IllegalStateException("cache-load: not initialized within " + LOAD_WAIT_MS + "ms");
            }
            long took = System.nanoTime() - start;
            w.dropEvents(); // what is measured is the cache, not this file's log of its load
            long after = usedHeap();
            return "loaded " + w.size() + " " + took + " " + (after - before);
        } finally {
            w.close();
        }
    }

    // usedHeap is the median of GC_SAMPLES readings of the used heap, each
    // right after a full collection.
    private static long usedHeap() {
        Runtime rt = Runtime.getRuntime();
        long[] used = new long[GC_SAMPLES];
        for (int i = 0; i < used.length; i++) {
            System.gc();
            used[i] = rt.totalMemory() - rt.freeMemory();
        }
        Arrays.sort(used);
        return used[used.length / 2];
    }

    // latency: cache-latency N RATE PATH...
    private static String latency(String[] f) throws Exception {
        if (f.length < 4) {
            throw new IllegalArgumentException("cache-latency takes a count, a rate per second and paths");
        }
        int n = Integer.parseInt(f[1]);
        int rate = Integer.parseInt(f[2]);
        if (n < 1 || rate < 1) {
            throw new IllegalArgumentException("cache-latency: N and RATE must be positive");
        }
        Watched w = current();
        if (!w.awaitInitialized(0)) {
            throw new IllegalStateException("cache-latency: the cache is not initialized (cache-await first)");
        }
        String[] paths = Arrays.copyOfRange(f, 3, f.length);
        CuratorFramework writer = CuratorLock.benchClients(1).get(0);
        int mark = w.eventCount();

        long[] sent = new long[n];
        ConcurrentHashMap<Long, Integer> byZxid = new ConcurrentHashMap<>();
        CountDownLatch acked = new CountDownLatch(n);
        AtomicReference<String> failed = new AtomicReference<>();
        long start = System.nanoTime();
        for (int i = 0; i < n; i++) {
            long due = start + (long) i * 1_000_000_000L / rate;
            for (long left = due - System.nanoTime(); left > 0; left = due - System.nanoTime()) {
                LockSupport.parkNanos(left);
            }
            byte[] data = new byte[DATA_BYTES];
            for (int k = 0; k < 8; k++) {
                data[k] = (byte) (i >>> (8 * k)); // new data every write
            }
            final int write = i;
            sent[i] = System.nanoTime();
            writer.setData().inBackground((unused, e) -> {
                if (e.getResultCode() == 0) {
                    byZxid.put(e.getStat().getMzxid(), write);
                } else {
                    failed.compareAndSet(null, e.getPath() + ": result code " + e.getResultCode());
                }
                acked.countDown();
            }).forPath(paths[i % paths.length], data);
        }
        if (!acked.await(ACK_WAIT_MS, TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("cache-latency: writes not answered within " + ACK_WAIT_MS + "ms");
        }
        if (failed.get() != null) {
            throw new IllegalStateException("cache-latency: write failed: " + failed.get());
        }
        long[] arrived = w.awaitChanges(mark, n, byZxid);
        int missed = 0;
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < n; i++) {
            if (arrived[i] == 0) {
                missed++;
            } else {
                b.append(' ').append(arrived[i] - sent[i]);
            }
        }
        return "latency " + missed + b;
    }

    // Event is one event a cache delivered, with its arrival time.
    private record Event(String type, ChildData node, long nanos) {
        @Override
        public String toString() {
            if (node == null) {
                return type;
            }
            Stat st = node.getStat();
            return type + "," + escape(node.getPath()) + "," + st.getCzxid() + "," + st.getMzxid() + "," + st.getVersion();
        }
    }

    // Watched is a started CuratorCache or TreeCache with its initialized
    // latch and its log of events (the listeners run on Curator's threads).
    private static final class Watched {
        private final String root;
        private final int maxDepth;
        private final CuratorCache curator;
        private final TreeCache tree;
        private final CountDownLatch initialized = new CountDownLatch(1);
        private final List<Event> events = new ArrayList<>(); // guarded by this
        private int dropped; // events removed from the front, guarded by this

        Watched(CuratorFramework client, boolean treeCache, String root, int maxDepth, boolean compressed) {
            this.root = root;
            this.maxDepth = maxDepth;
            if (treeCache) {
                curator = null;
                tree = TreeCache.newBuilder(client, root).setMaxDepth(maxDepth).setDataIsCompressed(compressed).build();
                tree.getListenable().addListener((unused, e) -> treeEvent(e));
                return;
            }
            List<CuratorCache.Options> opts = new ArrayList<>();
            if (maxDepth == 0) {
                opts.add(CuratorCache.Options.SINGLE_NODE_CACHE);
            }
            if (compressed) {
                opts.add(CuratorCache.Options.COMPRESSED_DATA);
            }
            tree = null;
            curator = CuratorCache.build(client, root, opts.toArray(new CuratorCache.Options[0]));
            curator.listenable().addListener(new CuratorCacheListener() {
                @Override
                public void event(Type type, ChildData oldData, ChildData data) {
                    switch (type) {
                        case NODE_CREATED -> add("created", data);
                        case NODE_CHANGED -> add("changed", data);
                        case NODE_DELETED -> add("deleted", oldData);
                        default -> System.err.println("curator-agent: cache event " + type);
                    }
                }

                @Override
                public void initialized() {
                    add("initialized", null);
                }
            });
        }

        void start() throws Exception {
            if (curator != null) {
                curator.start();
            } else {
                tree.start();
            }
        }

        void close() {
            if (curator != null) {
                curator.close();
            } else {
                tree.close();
            }
        }

        private void treeEvent(TreeCacheEvent e) {
            switch (e.getType()) {
                case NODE_ADDED -> add("created", e.getData());
                case NODE_UPDATED -> add("changed", e.getData());
                case NODE_REMOVED -> add("deleted", e.getData());
                case INITIALIZED -> add("initialized", null);
                default -> System.err.println("curator-agent: tree cache event " + e.getType());
            }
        }

        // add logs an event of a node within maxDepth, or initialized.
        private void add(String type, ChildData node) {
            if (node != null && depthOf(node.getPath()) > maxDepth) {
                return;
            }
            Event e = new Event(type, node, System.nanoTime());
            synchronized (this) {
                events.add(e);
                notifyAll();
            }
            if (node == null) {
                initialized.countDown();
            }
        }

        // depthOf is how many levels below root path is.
        private int depthOf(String path) {
            if (path.equals(root)) {
                return 0;
            }
            String rel = root.equals("/") ? path.substring(1) : path.substring(root.length() + 1);
            return (int) rel.chars().filter(c -> c == '/').count() + 1;
        }

        boolean awaitInitialized(long ms) throws InterruptedException {
            if (ms < 0) {
                initialized.await();
                return true;
            }
            return initialized.await(ms, TimeUnit.MILLISECONDS);
        }

        private Iterator<ChildData> nodes() {
            return curator != null ? curator.stream().iterator() : tree.iterator();
        }

        // snapshot is the cache's nodes. TreeCache's iterator throws
        // NoSuchElementException when a node it announced is removed
        // before it is read (a write racing the walk): walk again.
        private List<ChildData> snapshot() {
            for (int attempt = 1; ; attempt++) {
                try {
                    List<ChildData> all = new ArrayList<>();
                    nodes().forEachRemaining(all::add);
                    return all;
                } catch (java.util.NoSuchElementException e) {
                    if (attempt == 100) {
                        throw e;
                    }
                }
            }
        }

        int size() {
            return snapshot().size();
        }

        String view() {
            List<ChildData> all = new ArrayList<>();
            for (ChildData d : snapshot()) {
                if (depthOf(d.getPath()) <= maxDepth) {
                    all.add(d);
                }
            }
            all.sort((x, y) -> x.getPath().compareTo(y.getPath()));
            StringBuilder b = new StringBuilder("view");
            for (ChildData d : all) {
                Stat st = d.getStat();
                b.append(' ').append(escape(d.getPath())).append(',').append(st.getCzxid()).append(',')
                        .append(st.getMzxid()).append(',').append(st.getVersion()).append(',')
                        .append(d.getData() == null ? "-" : HEX.formatHex(d.getData()));
            }
            return b.toString();
        }

        synchronized String drainEvents() {
            StringBuilder b = new StringBuilder("events");
            for (Event e : events) {
                b.append(' ').append(e);
            }
            dropped += events.size();
            events.clear();
            return b.toString();
        }

        synchronized void dropEvents() {
            dropped += events.size();
            events.clear();
        }

        // eventCount is how many events have been logged so far, drained
        // or not: a mark for awaitChanges.
        synchronized int eventCount() {
            return dropped + events.size();
        }

        // awaitChanges waits until every write of byZxid (mzxid to write
        // index, below n) has a changed event logged after mark, or none has come
        // for LATENCY_QUIET_MS, and returns each write's event arrival (0:
        // none).
        synchronized long[] awaitChanges(int mark, int n, ConcurrentHashMap<Long, Integer> byZxid) throws InterruptedException {
            long[] arrived = new long[n];
            int matched = 0;
            int seen = Math.max(mark - dropped, 0);
            long quietSince = System.nanoTime();
            while (matched < byZxid.size()) {
                for (; seen < events.size(); seen++) {
                    Event e = events.get(seen);
                    Integer i = e.node == null || !e.type.equals("changed") ? null : byZxid.get(e.node.getStat().getMzxid());
                    if (i != null && arrived[i] == 0) {
                        arrived[i] = e.nanos;
                        matched++;
                    }
                    quietSince = System.nanoTime();
                }
                long left = quietSince + TimeUnit.MILLISECONDS.toNanos(LATENCY_QUIET_MS) - System.nanoTime();
                if (left <= 0) {
                    break;
                }
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
            return arrived;
        }
    }
}
