// Package harness is the real-server test harness of zkrecipes: it starts
// ZooKeeper (a standalone server or an ensemble), redis and memcached servers
// on 127.0.0.1 for a test, controls them (stop, start, kill, pause), and puts
// fault proxies in front of them. Tests of other packages import it; it
// imports no other package of this module, and only the standard library,
// so that the library's users never inherit test tooling.
//
// # Where the servers come from
//
// ZooKeeper, in this order:
//
//  1. ZK_SERVERS=host:port,host:port,... : those servers are used as they are.
//     ZK.External reports it, and member control (Stop, Start, Kill, Pause,
//     Resume) is Unavailable: the test is skipped with a message, or fails
//     when ZKR_REQUIRE_INTEGRATION=1, so that no fault goes untested
//     unnoticed. The same holds for servers of REDIS_ADDRS and
//     MEMCACHED_ADDRS.
//  2. A local install, run as java processes (QuorumPeerMain), one per member:
//     a release tarball named by ZOOKEEPER_HOME (its lib/*.jar), or Debian's
//     package (apt-get install zookeeper: /usr/share/java/zookeeper.jar, whose
//     manifest names its dependencies, plus slf4j-simple for the log). java
//     comes from JAVA_HOME or PATH. Each member gets free Loopback ports for
//     client, peer and election traffic and a data dir in a fresh temp dir,
//     with tickTime=200 (session timeouts 400ms to 60s are allowed), all
//     four-letter words, no admin server, forceSync=no, and
//     znode.container.checkIntervalMs=1000 so container nodes go quickly.
//     The JVM is kept small and quick to start (-Xmx256m, serial GC, C1 only).
//     Its stdout and stderr go to member<N>/stdout.log and its log to
//     member<N>/zookeeper.log; the end of both is in the error when a member
//     does not become ready, and in the test log when a test fails.
//  3. ZKSource, when a program links one: the integration module (a module
//     of its own, with testcontainers-go) sets it to one zookeeper:3.8
//     container with the same settings, its port 2181 bound to a free port
//     on 127.0.0.1, when a Docker daemon answers. Only a single member is
//     offered this way (an ensemble needs a local install). The core's own
//     tests never link it.
//  4. Otherwise Unavailable: the test is skipped with a message saying how to
//     get a server, or fails when ZKR_REQUIRE_INTEGRATION=1 (`make test` and
//     CI set it, so missing servers cannot pass unnoticed).
//
// Redis and memcached: REDIS_ADDRS or MEMCACHED_ADDRS (comma separated; the
// first n are used, and fewer than the test needs is Unavailable), else
// Debian's redis-server or memcached binaries (found on PATH or in /usr/bin,
// /usr/sbin), else Unavailable. Redis runs without persistence
// (--save "" --appendonly no), so a restarted server is empty.
//
// Secured servers, always local: NewCA makes a test CA and issues server
// and client certificates (PEM files); StartZKTLS adds a TLS client port
// (Netty) to a ZooKeeper member; StartRedisSecure runs Redis with
// requirepass, ACL users and a TLS port, and StartRedisClusterSecure and
// StartRedisSentinelSecure a cluster, or a primary and replicas behind
// sentinels, with requirepass (and masterauth) and ACL users on every data
// node (the harness authenticates its own commands to them);
// StartRedisSentinelAuth secures the sentinels too (requirepass, ACL
// users); StartMemcachedSecure runs memcached with TLS and ASCII
// authentication; StartPostgresSecure asks
// TCP clients for a password (scram-sha-256). Secrets go to the servers in
// files in their temp dirs, not on their command lines.
//
// # Lifetimes and hygiene
//
// StartZK, StartRedis(N) and StartMemcached register t.Cleanup to stop what
// they started and remove its temp dirs, also when the test fails. LaunchZK
// does the same for a TestMain, which must call Close. Every process runs in
// its own process group, is signalled as a group, and gets SIGKILL if the
// test binary dies (Pdeathsig). Every wait is bounded in time and count; a
// server that does not become ready fails the test with the end of its log.
//
// # Faults
//
// Member control kills (SIGKILL), stops (SIGTERM, then SIGKILL after 15s),
// pauses (SIGSTOP) and resumes (SIGCONT) a server. Proxy, a TCP proxy in the
// test process written on package net alone, sits between clients and one
// server: Cut closes every connection and refuses new ones; Blackhole
// partitions both ways, and HoldToServer or HoldToClient one way (nothing
// passes, not even a close, and nothing is lost: Restore delivers what was
// held); Latency delays both ways, LatencyToServer or LatencyToClient one
// way; ResetAfter closes connections after n more bytes toward the server;
// and Restore undoes them all. ProxiedServers puts one in front of each
// member of an ensemble.
//
// # Example
//
//	func TestFailover(t *testing.T) {
//		z := harness.StartZK(t, 3)
//		servers, proxies := harness.ProxiedServers(t, z)
//		// ... connect a client to servers ...
//		z.Leader(t).Kill(t)
//		proxies[0].Blackhole(t)
//		// ... assert on the client ...
//	}
//
// Run with `ZKR_REQUIRE_INTEGRATION=1 go test -race ./...`.
package harness
