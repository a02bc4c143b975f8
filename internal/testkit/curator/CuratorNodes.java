// CuratorNodes is the nodes half of the agent (CuratorLock runs its
// commands): Curator's PersistentNode and GroupMember, for the interop
// tests of package nodes. Each is known by its path; several may run at
// once (HEX: data in hex, "-" for none; MS: milliseconds):
//
//	pnode PATH MODE HEX [protected] [MS]  path ACTUAL: a PersistentNode on
//	                        PATH, started, after waitForInitialCreate (MS,
//	                        default NODE_WAIT_MS; "path -" when it did not
//	                        come). MODE is persistent, ephemeral,
//	                        persistent-sequential or ephemeral-sequential;
//	                        "protected" is useProtection.
//	pnode-path PATH         path ACTUAL | path -  (getActualPath)
//	pnode-set PATH HEX      ok  (setData: written now, or at the next create)
//	pnode-close PATH        closed  (close: Curator deletes the node)
//	group PATH ID HEX       ok: a GroupMember of PATH as ID, started
//	group-members PATH      members ID,HEX... : getCurrentMembers, by id,
//	                        each ID escaped as CuratorCaches.escape does
//	group-set PATH HEX      ok  (setThisData)
//	group-close PATH        closed
//
// What is left open when the agent ends goes with its client's session.

import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.nodes.GroupMember;
import org.apache.curator.framework.recipes.nodes.PersistentNode;
import org.apache.zookeeper.CreateMode;

final class CuratorNodes {
    // NODE_WAIT_MS bounds pnode's wait for the initial create by default.
    private static final long NODE_WAIT_MS = 30_000;

    private static final HexFormat HEX = HexFormat.of();
    private static final Map<String, PersistentNode> nodes = new HashMap<>();
    private static final Map<String, GroupMember> groups = new HashMap<>();

    private CuratorNodes() {}

    // run runs f if it is a command of this file, else returns null.
    static String run(CuratorFramework client, String[] f) throws Exception {
        switch (f[0]) {
            case "pnode":
                return start(client, f);
            case "pnode-path": {
                String p = node(CuratorLock.arg(f)).getActualPath();
                return "path " + (p == null ? "-" : CuratorCaches.escape(p));
            }
            case "pnode-set":
                args(f, 3, "pnode-set takes a path and data in hex");
                node(f[1]).setData(CuratorCaches.data(f[2]));
                return "ok";
            case "pnode-close":
                node(CuratorLock.arg(f)).close();
                nodes.remove(f[1]);
                return "closed";

            case "group": {
                args(f, 4, "group takes a path, an id and data in hex");
                if (groups.containsKey(f[1])) {
                    throw new IllegalStateException("a group member on " + f[1] + " already runs");
                }
                GroupMember g = new GroupMember(client, f[1], f[2], CuratorCaches.data(f[3]));
                g.start();
                groups.put(f[1], g);
                return "ok";
            }
            case "group-members": {
                StringBuilder b = new StringBuilder("members");
                for (Map.Entry<String, byte[]> e : new TreeMap<>(group(CuratorLock.arg(f)).getCurrentMembers()).entrySet()) {
                    byte[] d = e.getValue();
                    b.append(' ').append(CuratorCaches.escape(e.getKey())).append(',')
                            .append(d == null || d.length == 0 ? "-" : HEX.formatHex(d));
                }
                return b.toString();
            }
            case "group-set":
                args(f, 3, "group-set takes a path and data in hex");
                group(f[1]).setThisData(CuratorCaches.data(f[2]));
                return "ok";
            case "group-close":
                group(CuratorLock.arg(f)).close();
                groups.remove(f[1]);
                return "closed";

            default:
                return null;
        }
    }

    // start: pnode PATH MODE HEX [protected] [MS].
    private static String start(CuratorFramework client, String[] f) throws Exception {
        if (f.length < 4 || f.length > 6) {
            throw new IllegalArgumentException("pnode takes a path, a mode, data in hex, optionally protected and milliseconds");
        }
        if (nodes.containsKey(f[1])) {
            throw new IllegalStateException("a persistent node on " + f[1] + " already runs");
        }
        boolean prot = false;
        long ms = NODE_WAIT_MS;
        for (int i = 4; i < f.length; i++) {
            if (f[i].equals("protected") && !prot) {
                prot = true;
            } else if (i == f.length - 1) {
                ms = Long.parseLong(f[i]);
            } else {
                throw new IllegalArgumentException("pnode: unexpected " + f[i]);
            }
        }
        PersistentNode n = new PersistentNode(client, mode(f[2]), prot, f[1], CuratorCaches.data(f[3]));
        n.start();
        nodes.put(f[1], n);
        if (!n.waitForInitialCreate(ms, TimeUnit.MILLISECONDS)) {
            return "path -";
        }
        return "path " + CuratorCaches.escape(n.getActualPath());
    }

    private static CreateMode mode(String s) {
        switch (s) {
            case "persistent":
                return CreateMode.PERSISTENT;
            case "ephemeral":
                return CreateMode.EPHEMERAL;
            case "persistent-sequential":
                return CreateMode.PERSISTENT_SEQUENTIAL;
            case "ephemeral-sequential":
                return CreateMode.EPHEMERAL_SEQUENTIAL;
            default:
                throw new IllegalArgumentException("mode " + s + ": want persistent, ephemeral, persistent-sequential or ephemeral-sequential");
        }
    }

    private static void args(String[] f, int n, String usage) {
        if (f.length != n) {
            throw new IllegalArgumentException(usage);
        }
    }

    private static PersistentNode node(String path) {
        PersistentNode n = nodes.get(path);
        if (n == null) {
            throw new IllegalStateException("no persistent node on " + path + ": send pnode first");
        }
        return n;
    }

    private static GroupMember group(String path) {
        GroupMember g = groups.get(path);
        if (g == null) {
            throw new IllegalStateException("no group member on " + path + ": send group first");
        }
        return g;
    }
}
