package harness

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Settings and bounds of a RedisSentinel.
const (
	// sentinelMasterName is the name the sentinels monitor the primary by.
	sentinelMasterName = "zkr-primary"
	// sentinelDownAfter is the sentinels' down-after-milliseconds: a
	// primary that answers nothing for this long is subjectively down.
	sentinelDownAfter = 1000
	// sentinelFailoverTimeout is the sentinels' failover-timeout in
	// milliseconds; a failover that failed is tried again after twice it.
	sentinelFailoverTimeout = 4000
	// sentinelReadyTimeout bounds the wait, at the start, for the replicas'
	// links and for every sentinel to see the whole setup.
	sentinelReadyTimeout = 60 * time.Second
	// sentinelFailoverWait bounds WaitFailover, and Primary's wait for the
	// sentinels to agree.
	sentinelFailoverWait = 60 * time.Second
	// sentinelPoll is how often the waits look.
	sentinelPoll = 50 * time.Millisecond
)

// RedisSentinel is a primary, its replicas and the sentinels that watch
// them, for a test: redis-server and redis-sentinel processes on 127.0.0.1
// ports, without persistence. Each replica replicates from the primary
// through a Proxy of its own (ReplicationProxy), so that a test can delay or
// cut one replication link. The sentinels see the replicas at their own
// addresses (the primary learns a replica's port from REPLCONF
// listening-port and its IP, 127.0.0.1, from the connection), and promote
// them there. After a failover the sentinels point the other replicas at
// the new primary directly: only the links set up at the start pass
// through proxies, and a restarted replica goes back to its proxy. The
// sentinels also point a replica that replicates from another address than
// the primary's (its proxy) at the primary itself, a failover-timeout (4 s)
// after they see it, about 8 s after the start: a test that needs the
// proxies longer raises it first (SENTINEL SET <name> failover-timeout).
type RedisSentinel struct {
	data      []*RedisNode // the first primary, then the replicas
	sentinels []*RedisNode
	proxies   map[*RedisNode]*Proxy // replica → the proxy of its link
}

// StartRedisSentinel gives t one primary, replicas replicas and sentinels
// sentinels monitoring the primary as MasterName with a quorum of a majority
// of them (2 of 3), down-after-milliseconds 1000 and failover-timeout 4000,
// and waits (bounded) until every replica's link is up and every sentinel
// sees the primary, every replica and every other sentinel. Sentinels run
// redis-sentinel, or redis-server --sentinel when that is not installed,
// each with a config file of its own that it rewrites. t.Cleanup kills the
// processes, closes the proxies and removes the dirs. Without redis-server
// installed t is ended by Unavailable; REDIS_ADDRS is never used.
func StartRedisSentinel(t testing.TB, replicas, sentinels int) *RedisSentinel {
	t.Helper()
	return startRedisSentinel(t, replicas, sentinels, nil, nil)
}

// StartRedisSentinelSecure is StartRedisSentinel with the primary and
// its replicas secured by sec: their password (requirepass; a replica
// gives it to its primary, masterauth) and ACL users, in a config file of
// each (mode 0600), as StartRedisSecure writes it. The sentinels, which
// ask for no password themselves, monitor and reconfigure them with it
// (sentinel auth-pass, in their own config files, mode 0600). The
// harness's own commands to the data nodes authenticate with it. TLS is
// not supported here: t fails.
func StartRedisSentinelSecure(t testing.TB, replicas, sentinels int, sec RedisSecurity) *RedisSentinel {
	t.Helper()
	if err := sec.checkPlain("StartRedisSentinelSecure"); err != nil {
		t.Fatal(err)
	}
	return startRedisSentinel(t, replicas, sentinels, &sec, nil)
}

// StartRedisSentinelAuth is StartRedisSentinelSecure with the sentinels
// secured too, by sentinel: its Password is their requirepass (a client
// must authenticate before any command, and the sentinels give it to each
// other, as Redis does when "sentinel sentinel-pass" is not set), its
// Users their ACL users, in each sentinel's config file (mode 0600). data
// secures the primary and its replicas as StartRedisSentinelSecure does;
// a zero data leaves them open. The harness's own commands to the
// sentinels authenticate with sentinel.Password (as the default user), to
// the data nodes with data.Password. TLS is not supported here: t fails.
func StartRedisSentinelAuth(t testing.TB, replicas, sentinels int, data, sentinel RedisSecurity) *RedisSentinel {
	t.Helper()
	if err := data.checkPlain("StartRedisSentinelAuth: data"); err != nil {
		t.Fatal(err)
	}
	if err := sentinel.checkPlain("StartRedisSentinelAuth: sentinel"); err != nil {
		t.Fatal(err)
	}
	var sec *RedisSecurity
	if data.Password != "" || len(data.Users) > 0 {
		sec = &data
	}
	return startRedisSentinel(t, replicas, sentinels, sec, &sentinel)
}

// startRedisSentinel is StartRedisSentinel, its data nodes secured by sec
// and its sentinels by guard when they are not nil.
func startRedisSentinel(t testing.TB, replicas, sentinels int, sec, guard *RedisSecurity) *RedisSentinel {
	t.Helper()
	if replicas < 0 || sentinels < 1 {
		t.Fatalf("StartRedisSentinel(%d, %d): want no negative replicas and a sentinel or more", replicas, sentinels)
	}
	s := &RedisSentinel{proxies: map[*RedisNode]*Proxy{}}
	primary := s.startData(t, "redis-primary", nil, sec)
	for range replicas {
		p := NewProxy(t, primary.Addr())
		s.proxies[s.startData(t, "redis-replica", p, sec)] = p
	}
	password := ""
	if sec != nil {
		password = sec.Password
	}
	if err := waitFor(nil, "redis replicas in sync", sentinelReadyTimeout, sentinelPoll, s.replicated); err != nil {
		t.Fatal(err)
	}

	bin := "redis-sentinel"
	if _, err := findBinary(bin); err != nil {
		bin = "redis-server" // the same program: --sentinel makes it one
	}
	quorum := sentinels/2 + 1
	probe := redisPing
	if guard != nil {
		probe = redisSecurePing(nil) // NOAUTH: up, and asking for the password
	}
	servers := startServers(t, sentinels, "redis-sentinel", "", bin, redisLocalHint,
		func(bin string, port int, dir string) []string {
			conf := sentinelConf(port, dir, primary.Addr(), quorum, replicas, password)
			if guard != nil {
				conf += guard.accessConfig() // no masterauth: a sentinel replicates nothing
				rememberPassword(t, hostPort(port), guard.Password)
			}
			path := filepath.Join(dir, "sentinel.conf")
			if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
				t.Errorf("redis sentinel config: %v", err) // the sentinel then fails to start, saying so
			}
			argv := []string{bin, path}
			if filepath.Base(bin) != "redis-sentinel" {
				argv = append(argv, "--sentinel")
			}
			return argv
		}, probe)
	s.sentinels = wrapServers(servers, func(x Server) *RedisNode { return &RedisNode{x} })
	for _, n := range s.sentinels {
		err := waitFor(n.s.proc, "redis sentinel "+n.Addr()+" seeing the whole setup", sentinelReadyTimeout,
			sentinelPoll, func() error { return s.sees(n.Addr(), primary.Addr()) })
		if err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// startData starts a primary (through nil) or a replica of the primary
// through the proxy through, secured by sec when it is not nil.
func (s *RedisSentinel) startData(t testing.TB, kind string, through *Proxy, sec *RedisSecurity) *RedisNode {
	t.Helper()
	argv := func(bin string, port int, dir string) []string {
		argv := replicatedArgv(bin, port, dir)
		if through != nil {
			proxyHost, proxyPort, _ := net.SplitHostPort(through.Addr())
			argv = append(argv, "--replicaof", proxyHost, proxyPort)
		}
		return argv
	}
	probe := redisPing
	if sec != nil {
		argv, probe = securedArgv(t, *sec, argv), redisSecurePing(nil)
	}
	n := &RedisNode{Server{startServers(t, 1, kind, "", "redis-server", redisLocalHint, argv, probe)[0]}}
	s.data = append(s.data, n)
	return n
}

// sentinelConf is a sentinel's config file; password is the data
// nodes' ("" for none).
func sentinelConf(port int, dir, primary string, quorum, replicas int, password string) string {
	host, primaryPort, _ := net.SplitHostPort(primary)
	lines := []string{
		"bind " + Loopback,
		"port " + strconv.Itoa(port),
		"dir " + dir,
		"daemonize no",
		`logfile ""`,
		"sentinel resolve-hostnames no",
		"sentinel announce-hostnames no",
		fmt.Sprintf("sentinel monitor %s %s %s %d", sentinelMasterName, host, primaryPort, quorum),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", sentinelMasterName, sentinelDownAfter),
		fmt.Sprintf("sentinel failover-timeout %s %d", sentinelMasterName, sentinelFailoverTimeout),
		fmt.Sprintf("sentinel parallel-syncs %s %d", sentinelMasterName, max(replicas, 1)),
	}
	if password != "" {
		lines = append(lines, fmt.Sprintf("sentinel auth-pass %s %s", sentinelMasterName, password))
	}
	return strings.Join(lines, "\n") + "\n"
}

// MasterName is the name the sentinels know the primary by
// (redis.FailoverOptions.MasterName).
func (s *RedisSentinel) MasterName() string { return sentinelMasterName }

// SentinelAddrs is the address of every sentinel
// (redis.FailoverOptions.SentinelAddrs).
func (s *RedisSentinel) SentinelAddrs() []string {
	out := make([]string, len(s.sentinels))
	for i, n := range s.sentinels {
		out[i] = n.Addr()
	}
	return out
}

// Nodes returns the data nodes: the first primary, then the replicas. Which
// is primary changes with failovers: ask Primary.
func (s *RedisSentinel) Nodes() []*RedisNode { return slices.Clone(s.data) }

// Sentinels returns the sentinels, in the order of SentinelAddrs.
func (s *RedisSentinel) Sentinels() []*RedisNode { return slices.Clone(s.sentinels) }

// Node returns the data node at addr (as Primary returns it), or nil.
func (s *RedisSentinel) Node(addr string) *RedisNode {
	for _, n := range s.data {
		if n.Addr() == addr {
			return n
		}
	}
	return nil
}

// Primary is the address of the primary as the live sentinels report it
// (SENTINEL GET-MASTER-ADDR-BY-NAME), waiting (bounded) until they agree.
func (s *RedisSentinel) Primary(t testing.TB) string {
	t.Helper()
	var primary string
	err := waitFor(nil, "the sentinels agreeing on the primary", sentinelFailoverWait, sentinelPoll,
		func() (err error) {
			primary, err = s.reported()
			return err
		})
	if err != nil {
		t.Fatal(err)
	}
	return primary
}

// WaitFailover waits (bounded) until the live sentinels agree on a primary
// other than oldPrimary and it answers ROLE as a master, and returns its
// address. It does not wait for the other replicas to follow it.
func (s *RedisSentinel) WaitFailover(t testing.TB, oldPrimary string) string {
	t.Helper()
	var primary string
	err := waitFor(nil, "a failover from "+oldPrimary, sentinelFailoverWait, sentinelPoll, func() (err error) {
		if primary, err = s.reported(); err != nil {
			return err
		}
		if primary == oldPrimary {
			return fmt.Errorf("the sentinels report %s still", primary)
		}
		role, err := redisRole(primary)
		if err == nil && role != "master" {
			err = fmt.Errorf("the new primary %s says it is a %s", primary, role)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return primary
}

// ReplicationProxy is the proxy that replica's link to the first primary
// passes through, while replica still replicates through it; nil for the
// first primary, and once the sentinels have pointed replica elsewhere (or
// made it primary). replica must answer INFO.
func (s *RedisSentinel) ReplicationProxy(t testing.TB, replica *RedisNode) *Proxy {
	t.Helper()
	p := s.proxies[replica]
	if p == nil {
		return nil
	}
	info, err := redisFields(replica.Addr(), "INFO", "replication")
	if err != nil {
		t.Fatal(err)
	}
	if info["role"] != "slave" || net.JoinHostPort(info["master_host"], info["master_port"]) != p.Addr() {
		return nil
	}
	return p
}

// reported returns the primary the live sentinels report, or an error when
// they do not all answer the same.
func (s *RedisSentinel) reported() (string, error) {
	var primary, from string
	for _, n := range s.sentinels {
		if !n.live() {
			continue
		}
		addr, err := sentinelPrimary(n.Addr())
		if err != nil {
			return "", err
		}
		if from != "" && addr != primary {
			return "", fmt.Errorf("sentinel %s reports %s, sentinel %s %s", from, primary, n.Addr(), addr)
		}
		primary, from = addr, n.Addr()
	}
	if from == "" {
		return "", errors.New("no live sentinel")
	}
	return primary, nil
}

// replicated reports nil when every replica's link to the primary is up
// and the primary counts them all.
func (s *RedisSentinel) replicated() error {
	for _, r := range s.data[1:] {
		info, err := redisFields(r.Addr(), "INFO", "replication")
		if err != nil {
			return err
		}
		if link := info["master_link_status"]; link != "up" {
			return fmt.Errorf("replica %s: master_link_status:%s", r.Addr(), link)
		}
	}
	info, err := redisFields(s.data[0].Addr(), "INFO", "replication")
	if err != nil {
		return err
	}
	if n := info["connected_slaves"]; n != strconv.Itoa(len(s.data)-1) {
		return fmt.Errorf("primary %s: connected_slaves:%s", s.data[0].Addr(), n)
	}
	return nil
}

// sees reports nil when the sentinel at addr reports primary as the
// primary, knows every replica at its own address with its link up, and
// knows every other sentinel, none of them down.
func (s *RedisSentinel) sees(addr, primary string) error {
	got, err := sentinelPrimary(addr)
	if err != nil {
		return err
	}
	if got != primary {
		return fmt.Errorf("sentinel %s reports the primary %s, want %s", addr, got, primary)
	}
	var want []string
	for _, r := range s.data[1:] {
		want = append(want, r.Addr())
	}
	replicas, err := sentinelPeers(addr, "REPLICAS", func(f map[string]string) error {
		if f["flags"] != "slave" || f["master-link-status"] != "ok" {
			return fmt.Errorf("flags %s, master-link-status %s", f["flags"], f["master-link-status"])
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !slices.Equal(replicas, slices.Sorted(slices.Values(want))) {
		return fmt.Errorf("sentinel %s knows the replicas %v, want %v", addr, replicas, want)
	}
	others, err := sentinelPeers(addr, "SENTINELS", func(f map[string]string) error {
		if f["flags"] != "sentinel" {
			return fmt.Errorf("flags %s", f["flags"])
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(others) != len(s.sentinels)-1 {
		return fmt.Errorf("sentinel %s knows the sentinels %v, want the %d others", addr, others, len(s.sentinels)-1)
	}
	return nil
}

// sentinelPrimary asks the sentinel at addr for the primary's address.
func sentinelPrimary(addr string) (string, error) {
	reply, err := redisDo(addr, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", sentinelMasterName)
	if err != nil {
		return "", err
	}
	hp, err := texts(reply)
	if err != nil || len(hp) != 2 {
		return "", fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME to %s: %v", addr, reply)
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}

// sentinelPeers asks the sentinel at addr for SENTINEL REPLICAS or
// SENTINELS and returns their addresses, sorted, after checking each with
// ok (its fields, e.g. "flags").
func sentinelPeers(addr, which string, ok func(fields map[string]string) error) ([]string, error) {
	reply, err := redisDo(addr, "SENTINEL", which, sentinelMasterName)
	if err != nil {
		return nil, err
	}
	entries, _ := reply.([]any)
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		flat, err := texts(e)
		if err != nil || len(flat)%2 != 0 {
			return nil, fmt.Errorf("SENTINEL %s to %s: %v", which, addr, e)
		}
		fields := map[string]string{}
		for i := 0; i < len(flat); i += 2 {
			fields[flat[i]] = flat[i+1]
		}
		peer := net.JoinHostPort(fields["ip"], fields["port"])
		if err := ok(fields); err != nil {
			return nil, fmt.Errorf("sentinel %s: %s %s: %w", addr, strings.ToLower(which), peer, err)
		}
		out = append(out, peer)
	}
	slices.Sort(out)
	return out, nil
}
