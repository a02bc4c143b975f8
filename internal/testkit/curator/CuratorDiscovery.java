// CuratorDiscovery is the service discovery half of the agent (CuratorLock
// runs its commands): curator-x-discovery 5.4's ServiceDiscovery,
// JsonInstanceSerializer and ServiceCache, for the tests of the Go
// discovery package beside Curator.
//
// An instance is given as KEY=VALUE words, each VALUE URL-encoded
// (java.net.URLDecoder; "-" for null where a field may be null):
//
//	base=PATH name=N id=ID address=A port=P sslPort=P time=MS
//	type=DYNAMIC|DYNAMIC_SEQUENTIAL|STATIC|PERMANENT uri=SPEC (UriSpec's
//	template) payload=none|spring|map|string pid=ID pname=NAME
//	meta.KEY=VALUE... (spring: a ZookeeperInstance(pid, pname, metadata);
//	map: a LinkedHashMap of the meta entries; string: the String pid)
//	enabled=true|false (written only with mode=full)
//	mode=compat|full (JsonInstanceSerializer's compatibleSerializationMode
//	true, the default, or false)
//
// Commands (HEX: bytes in hex; JSON: an instance as JsonInstanceSerializer
// writes it in full mode, in hex, so every field Java read is in it):
//
//	disc-serialize INSTANCE   json HEX: the bytes the serializer writes
//	disc-register INSTANCE    registered: ServiceDiscovery.registerService
//	disc-unregister BASE ID   unregistered: unregisterService of the
//	                          instance registered with that id
//	disc-names BASE           names NAME...: queryForNames
//	disc-query BASE NAME      instances JSON...: queryForInstances, in id
//	                          order
//	disc-cache BASE NAME      ok: a ServiceCache of NAME, started (one at a
//	                          time: a new one closes the last)
//	disc-cache-view           instances JSON...: its getInstances, in id
//	                          order
//	disc-cache-close          closed

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceType;
import org.apache.curator.x.discovery.UriSpec;
import org.apache.curator.x.discovery.details.JsonInstanceSerializer;
import org.springframework.cloud.zookeeper.discovery.ZookeeperInstance;

final class CuratorDiscovery {
    private static final HexFormat HEX = HexFormat.of();
    // FULL writes every field Java read, enabled included (replies).
    private static final JsonInstanceSerializer<Object> FULL = new JsonInstanceSerializer<>(Object.class, false);

    // discoveries: one started ServiceDiscovery per base path.
    private static final Map<String, ServiceDiscovery<Object>> discoveries = new HashMap<>();
    // registered: what disc-register registered, by base and id.
    private static final Map<String, ServiceInstance<Object>> registered = new HashMap<>();
    private static ServiceCache<Object> cache;

    private CuratorDiscovery() {}

    // run runs f if it is a command of this file, else returns null.
    static String run(CuratorFramework client, String[] f) throws Exception {
        switch (f[0]) {
            case "disc-serialize": {
                Map<String, String> kv = pairs(f);
                boolean compat = !"full".equals(kv.getOrDefault("mode", "compat"));
                byte[] b = new JsonInstanceSerializer<>(Object.class, compat).serialize(instance(kv));
                return "json " + HEX.formatHex(b);
            }
            case "disc-register": {
                Map<String, String> kv = pairs(f);
                ServiceInstance<Object> inst = instance(kv);
                discovery(client, need(kv, "base")).registerService(inst);
                registered.put(need(kv, "base") + " " + inst.getId(), inst);
                return "registered";
            }
            case "disc-unregister": {
                args(f, 3, "disc-unregister takes a base path and an id");
                ServiceInstance<Object> inst = registered.remove(f[1] + " " + f[2]);
                if (inst == null) {
                    throw new IllegalArgumentException("no instance " + f[2] + " registered under " + f[1]);
                }
                discovery(client, f[1]).unregisterService(inst);
                return "unregistered";
            }
            case "disc-names": {
                args(f, 2, "disc-names takes a base path");
                List<String> names = new ArrayList<>(discovery(client, f[1]).queryForNames());
                names.sort(null);
                return ("names " + String.join(" ", names)).trim();
            }
            case "disc-query":
                args(f, 3, "disc-query takes a base path and a name");
                return instances(discovery(client, f[1]).queryForInstances(f[2]));
            case "disc-cache": {
                args(f, 3, "disc-cache takes a base path and a name");
                ServiceCache<Object> c = discovery(client, f[1]).serviceCacheBuilder().name(f[2]).build();
                closeCache();
                cache = c;
                c.start();
                return "ok";
            }
            case "disc-cache-view":
                CuratorLock.noArgs(f);
                if (cache == null) {
                    throw new IllegalStateException("no disc-cache");
                }
                return instances(cache.getInstances());
            case "disc-cache-close":
                CuratorLock.noArgs(f);
                closeCache();
                return "closed";
            default:
                return null;
        }
    }

    private static void closeCache() throws Exception {
        if (cache != null) {
            cache.close();
            cache = null;
        }
    }

    private static ServiceDiscovery<Object> discovery(CuratorFramework client, String base) throws Exception {
        ServiceDiscovery<Object> d = discoveries.get(base);
        if (d == null) {
            d = ServiceDiscoveryBuilder.builder(Object.class).client(client).basePath(base).build();
            d.start();
            discoveries.put(base, d);
        }
        return d;
    }

    private static String instances(java.util.Collection<ServiceInstance<Object>> all) throws Exception {
        List<ServiceInstance<Object>> sorted = new ArrayList<>(all);
        sorted.sort(Comparator.comparing(ServiceInstance::getId));
        StringBuilder b = new StringBuilder("instances");
        for (ServiceInstance<Object> i : sorted) {
            b.append(' ').append(HEX.formatHex(FULL.serialize(i)));
        }
        return b.toString();
    }

    private static void args(String[] f, int n, String usage) {
        if (f.length != n) {
            throw new IllegalArgumentException(usage);
        }
    }

    // pairs reads the KEY=VALUE words after the command, VALUE URL-decoded.
    private static Map<String, String> pairs(String[] f) {
        Map<String, String> kv = new LinkedHashMap<>();
        for (int i = 1; i < f.length; i++) {
            int eq = f[i].indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("not KEY=VALUE: " + f[i]);
            }
            kv.put(f[i].substring(0, eq), URLDecoder.decode(f[i].substring(eq + 1), StandardCharsets.UTF_8));
        }
        return kv;
    }

    private static String need(Map<String, String> kv, String key) {
        String v = kv.get(key);
        if (v == null) {
            throw new IllegalArgumentException("missing " + key + "=");
        }
        return v;
    }

    // nullable is kv's value, null for "-" or absent.
    private static String nullable(Map<String, String> kv, String key) {
        String v = kv.get(key);
        return v == null || v.equals("-") ? null : v;
    }

    private static Integer port(Map<String, String> kv, String key) {
        String v = nullable(kv, key);
        return v == null ? null : Integer.valueOf(v);
    }

    private static ServiceInstance<Object> instance(Map<String, String> kv) {
        Map<String, String> meta = new HashMap<>(); // Spring Cloud's is a HashMap
        Map<String, String> ordered = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : kv.entrySet()) {
            if (e.getKey().startsWith("meta.")) {
                meta.put(e.getKey().substring(5), e.getValue());
                ordered.put(e.getKey().substring(5), e.getValue());
            }
        }
        Object payload;
        switch (kv.getOrDefault("payload", "none")) {
            case "none":
                payload = null;
                break;
            case "spring":
                payload = new ZookeeperInstance(nullable(kv, "pid"), nullable(kv, "pname"), meta);
                break;
            case "map":
                payload = ordered;
                break;
            case "string":
                payload = need(kv, "pid");
                break;
            default:
                throw new IllegalArgumentException("payload=" + kv.get("payload") + ": want none, spring, map or string");
        }
        String uri = nullable(kv, "uri");
        String type = nullable(kv, "type");
        return new ServiceInstance<Object>(need(kv, "name"), need(kv, "id"), nullable(kv, "address"),
                port(kv, "port"), port(kv, "sslPort"), payload, Long.parseLong(kv.getOrDefault("time", "0")),
                type == null ? null : ServiceType.valueOf(type), uri == null ? null : new UriSpec(uri),
                Boolean.parseBoolean(kv.getOrDefault("enabled", "true")));
    }
}
