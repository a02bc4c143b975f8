// CuratorValues is the shared-values and atomic-counters half of the agent
// (CuratorLock runs its commands): Curator's SharedValue and
// DistributedAtomicLong, for the interop tests of the Go shared and
// counter packages (SharedCount is CuratorLock's count commands).
//
// Commands (run, like CuratorLock's, one at a time on the agent's thread;
// HEX: data in hex, "-" for none):
//
//	atomic-long PATH RETRIES [LOCKPATH]  ok: a DistributedAtomicLong on
//	                        PATH whose optimistic tries are retried RETRIES
//	                        times (RetryNTimes, 10 ms apart), promoted to an
//	                        InterProcessMutex on LOCKPATH when given
//	                        (PromotedToLock, its own RetryNTimes(10, 10 ms))
//	atomic-inc N            incremented S F: N increments, S of them
//	                        succeeded(), F not
//	atomic-get              long V (get().postValue())
//	atomic-cas EXPECTED NEW applied PRE | not-applied PRE (compareAndSet)
//	sharedvalue PATH HEX    ok: a SharedValue on PATH with seed HEX, started
//	                        (one at a time: a new one closes the last); its
//	                        listener notes every value it is told
//	sharedvalue-get         value HEX VERSION (getVersionedValue: the value
//	                        last seen)
//	sharedvalue-set HEX     ok (setValue)
//	sharedvalue-tryset HEX  true | false (trySetValue against the value
//	                        and version last seen)
//	sharedvalue-seen        seen HEX... : the values the listener was told
//	                        since the last sharedvalue-seen, in order

import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.atomic.PromotedToLock;
import org.apache.curator.framework.recipes.shared.SharedValue;
import org.apache.curator.framework.recipes.shared.SharedValueListener;
import org.apache.curator.framework.recipes.shared.SharedValueReader;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;

final class CuratorValues {
    // RETRY_SLEEP_MS is the sleep between retries of the atomic's tries.
    private static final int RETRY_SLEEP_MS = 10;
    // LOCK_RETRIES are the tries under the promoted lock.
    private static final int LOCK_RETRIES = 10;
    // LOCK_WAIT_S bounds the wait for the promoted lock.
    private static final long LOCK_WAIT_S = 60;

    private static final HexFormat HEX = HexFormat.of();

    private static DistributedAtomicLong atomic;
    private static SharedValue value;
    private static final List<byte[]> seen = new ArrayList<>();

    private CuratorValues() {}

    // run runs f if it is a command of this file, else returns null.
    static String run(CuratorFramework client, String[] f) throws Exception {
        switch (f[0]) {
            case "atomic-long": {
                if (f.length != 3 && f.length != 4) {
                    throw new IllegalArgumentException("atomic-long takes a path, the retries and optionally a lock path");
                }
                RetryNTimes retry = new RetryNTimes(Integer.parseInt(f[2]), RETRY_SLEEP_MS);
                atomic = f.length == 3
                        ? new DistributedAtomicLong(client, f[1], retry)
                        : new DistributedAtomicLong(client, f[1], retry, PromotedToLock.builder()
                                .lockPath(f[3])
                                .retryPolicy(new RetryNTimes(LOCK_RETRIES, RETRY_SLEEP_MS))
                                .timeout(LOCK_WAIT_S, TimeUnit.SECONDS)
                                .build());
                return "ok";
            }
            case "atomic-inc": {
                if (f.length != 2) {
                    throw new IllegalArgumentException("atomic-inc takes one argument, the count");
                }
                int n = Integer.parseInt(f[1]);
                int ok = 0;
                for (int i = 0; i < n; i++) {
                    if (atomic().increment().succeeded()) {
                        ok++;
                    }
                }
                return "incremented " + ok + " " + (n - ok);
            }
            case "atomic-get":
                CuratorLock.noArgs(f);
                return "long " + atomic().get().postValue();
            case "atomic-cas": {
                if (f.length != 3) {
                    throw new IllegalArgumentException("atomic-cas takes two arguments, the expected and the new value");
                }
                AtomicValue<Long> r = atomic().compareAndSet(Long.parseLong(f[1]), Long.parseLong(f[2]));
                return (r.succeeded() ? "applied " : "not-applied ") + r.preValue();
            }

            case "sharedvalue": {
                if (f.length != 3) {
                    throw new IllegalArgumentException("sharedvalue takes two arguments, a path and the seed in hex");
                }
                SharedValue v = new SharedValue(client, f[1], data(f[2]));
                v.getListenable().addListener(new SharedValueListener() {
                    @Override
                    public void valueHasChanged(SharedValueReader r, byte[] newValue) {
                        synchronized (seen) {
                            seen.add(newValue);
                        }
                    }

                    @Override
                    public void stateChanged(CuratorFramework c, ConnectionState s) {}
                });
                v.start();
                if (value != null) {
                    value.close();
                }
                value = v;
                synchronized (seen) {
                    seen.clear();
                }
                return "ok";
            }
            case "sharedvalue-get": {
                CuratorLock.noArgs(f);
                VersionedValue<byte[]> v = value().getVersionedValue();
                return "value " + hex(v.getValue()) + " " + v.getVersion();
            }
            case "sharedvalue-set":
                if (f.length != 2) {
                    throw new IllegalArgumentException("sharedvalue-set takes one argument, the data in hex");
                }
                value().setValue(data(f[1]));
                return "ok";
            case "sharedvalue-tryset":
                if (f.length != 2) {
                    throw new IllegalArgumentException("sharedvalue-tryset takes one argument, the data in hex");
                }
                return Boolean.toString(value().trySetValue(value().getVersionedValue(), data(f[1])));
            case "sharedvalue-seen": {
                CuratorLock.noArgs(f);
                StringBuilder b = new StringBuilder("seen");
                synchronized (seen) {
                    for (byte[] d : seen) {
                        b.append(' ').append(hex(d));
                    }
                    seen.clear();
                }
                return b.toString();
            }

            default:
                return null;
        }
    }

    private static DistributedAtomicLong atomic() {
        if (atomic == null) {
            throw new IllegalStateException("no atomic long: send atomic-long PATH RETRIES [LOCKPATH] first");
        }
        return atomic;
    }

    private static SharedValue value() {
        if (value == null) {
            throw new IllegalStateException("no shared value: send sharedvalue PATH HEX first");
        }
        return value;
    }

    private static byte[] data(String hex) {
        return hex.equals("-") ? new byte[0] : HEX.parseHex(hex);
    }

    private static String hex(byte[] d) {
        return d == null || d.length == 0 ? "-" : HEX.formatHex(d);
    }
}
