// CuratorQueues is the queue half of the agent (CuratorLock runs its
// commands): Curator's DistributedQueue family and SimpleDistributedQueue
// on a path, as producer and as consumer, for the tests of the Go queues
// beside Curator. Items are raw bytes (an identity QueueSerializer).
//
// Commands (run, like CuratorLock's, one at a time on the agent's thread;
// KIND: fifo | priority | delay | id; HEX: an item in hex, "-" for none):
//
//	queue-start KIND PATH LOCKPATH|-  ok: a consumer of a KIND queue on
//	                        PATH (QueueBuilder.lockPath LOCKPATH, or none),
//	                        started; one at a time: a new one closes the
//	                        last. It records each item it is given.
//	queue-consumed          consumed HEX... : the items given since the
//	                        last queue-consumed, in order of arrival
//	queue-close             closed
//	queue-put KIND PATH ARG HEX...  put: one put (one HEX) or putMulti
//	                        (several; not for id) by a producer-only queue,
//	                        putInBackground(false), closed after. ARG is
//	                        the priority (priority), the due epoch in
//	                        milliseconds (delay), the id (id), "-" (fifo).
//	sq-offer PATH HEX       offered: SimpleDistributedQueue.offer
//	sq-poll PATH            item HEX | empty: SimpleDistributedQueue.poll

import java.io.Closeable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.queue.DistributedDelayQueue;
import org.apache.curator.framework.recipes.queue.DistributedIdQueue;
import org.apache.curator.framework.recipes.queue.DistributedPriorityQueue;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.MultiItem;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.recipes.queue.SimpleDistributedQueue;
import org.apache.curator.framework.state.ConnectionState;

final class CuratorQueues {
    private static final QueueSerializer<byte[]> RAW = new QueueSerializer<byte[]>() {
        @Override
        public byte[] serialize(byte[] item) {
            return item;
        }

        @Override
        public byte[] deserialize(byte[] bytes) {
            return bytes;
        }
    };

    private static final List<String> consumed = new ArrayList<>();
    private static Closeable current;

    private CuratorQueues() {}

    // run runs one queue command; null when f is not one of them.
    static String run(CuratorFramework client, String[] f) throws Exception {
        switch (f[0]) {
            case "queue-start": {
                if (f.length != 4) {
                    throw new IllegalArgumentException("queue-start takes a kind, a path and a lock path (or -)");
                }
                closeCurrent();
                QueueConsumer<byte[]> consumer = new QueueConsumer<byte[]>() {
                    @Override
                    public void consumeMessage(byte[] item) {
                        synchronized (consumed) {
                            consumed.add(hex(item));
                        }
                    }

                    @Override
                    public void stateChanged(CuratorFramework unused, ConnectionState state) {}
                };
                QueueBuilder<byte[]> b = QueueBuilder.builder(client, consumer, RAW, f[2]);
                if (!f[3].equals("-")) {
                    b = b.lockPath(f[3]);
                }
                current = start(b, f[1]);
                return "ok";
            }
            case "queue-consumed": {
                CuratorLock.noArgs(f);
                StringBuilder r = new StringBuilder("consumed");
                synchronized (consumed) {
                    for (String s : consumed) {
                        r.append(' ').append(s);
                    }
                    consumed.clear();
                }
                return r.toString();
            }
            case "queue-close":
                CuratorLock.noArgs(f);
                closeCurrent();
                return "closed";
            case "queue-put":
                return put(client, f);
            case "sq-offer":
                if (f.length != 3) {
                    throw new IllegalArgumentException("sq-offer takes a path and an item");
                }
                new SimpleDistributedQueue(client, f[1]).offer(unhex(f[2]));
                return "offered";
            case "sq-poll": {
                byte[] item = new SimpleDistributedQueue(client, CuratorLock.arg(f)).poll();
                return item == null ? "empty" : "item " + hex(item);
            }
            default:
                return null;
        }
    }

    // start builds the queue of kind from b and starts it.
    private static Closeable start(QueueBuilder<byte[]> b, String kind) throws Exception {
        switch (kind) {
            case "fifo": {
                DistributedQueue<byte[]> q = b.buildQueue();
                q.start();
                return q;
            }
            case "priority": {
                DistributedPriorityQueue<byte[]> q = b.buildPriorityQueue(0);
                q.start();
                return q;
            }
            case "delay": {
                DistributedDelayQueue<byte[]> q = b.buildDelayQueue();
                q.start();
                return q;
            }
            case "id": {
                DistributedIdQueue<byte[]> q = b.buildIdQueue();
                q.start();
                return q;
            }
            default:
                throw new IllegalArgumentException("unknown queue kind " + kind);
        }
    }

    private static String put(CuratorFramework client, String[] f) throws Exception {
        if (f.length < 5) {
            throw new IllegalArgumentException("queue-put takes a kind, a path, an argument and items");
        }
        String kind = f[1];
        String arg = f[3];
        List<byte[]> items = new ArrayList<>();
        for (String h : Arrays.copyOfRange(f, 4, f.length)) {
            items.add(unhex(h));
        }
        QueueBuilder<byte[]> b = QueueBuilder.builder(client, null, RAW, f[2]).putInBackground(false);
        Closeable q = start(b, kind);
        try {
            boolean multi = items.size() > 1;
            switch (kind) {
                case "fifo":
                    if (multi) {
                        ((DistributedQueue<byte[]>) q).putMulti(multi(items));
                    } else {
                        ((DistributedQueue<byte[]>) q).put(items.get(0));
                    }
                    break;
                case "priority":
                    if (multi) {
                        ((DistributedPriorityQueue<byte[]>) q).putMulti(multi(items), Integer.parseInt(arg));
                    } else {
                        ((DistributedPriorityQueue<byte[]>) q).put(items.get(0), Integer.parseInt(arg));
                    }
                    break;
                case "delay":
                    if (multi) {
                        ((DistributedDelayQueue<byte[]>) q).putMulti(multi(items), Long.parseLong(arg));
                    } else {
                        ((DistributedDelayQueue<byte[]>) q).put(items.get(0), Long.parseLong(arg));
                    }
                    break;
                default: // id: no putMulti in Curator
                    if (multi) {
                        throw new IllegalArgumentException("an id queue puts one item at a time");
                    }
                    ((DistributedIdQueue<byte[]>) q).put(items.get(0), arg);
            }
        } finally {
            q.close();
        }
        return "put";
    }

    private static MultiItem<byte[]> multi(List<byte[]> items) {
        Iterator<byte[]> it = items.iterator();
        return () -> it.hasNext() ? it.next() : null;
    }

    private static void closeCurrent() throws Exception {
        if (current != null) {
            current.close();
            current = null;
        }
    }

    private static String hex(byte[] b) {
        return b.length == 0 ? "-" : HexFormat.of().formatHex(b);
    }

    private static byte[] unhex(String h) {
        return h.equals("-") ? new byte[0] : HexFormat.of().parseHex(h);
    }
}
