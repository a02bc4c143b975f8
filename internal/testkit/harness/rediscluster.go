package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Settings and bounds of a RedisCluster.
const (
	// clusterNodeTimeout is the nodes' cluster-node-timeout in milliseconds:
	// a master that answers nothing for this long is failed, and one of its
	// replicas takes its slots.
	clusterNodeTimeout = 2000
	// clusterSlots is how many hash slots a Redis Cluster has.
	clusterSlots = 16384
	// clusterCreateTimeout bounds `redis-cli --cluster create`.
	clusterCreateTimeout = 60 * time.Second
	// clusterHealthyTimeout bounds WaitHealthy, and the waits for a slot's
	// owner.
	clusterHealthyTimeout = 60 * time.Second
	// clusterFailoverTimeout bounds Failover's wait for the replica to be
	// master.
	clusterFailoverTimeout = 30 * time.Second
	// clusterMigrateBatch is how many keys MoveSlot moves with one MIGRATE.
	clusterMigrateBatch = 100
	// clusterMigrateMaxBatches bounds MoveSlot's loop: a slot with more
	// keys than clusterMigrateBatch × this fails the test.
	clusterMigrateMaxBatches = 1000
	// clusterMigrateTimeout is MIGRATE's own timeout in milliseconds, below
	// redisCommandTimeout so that the server gives up first.
	clusterMigrateTimeout = 2000
	// clusterPoll is how often the cluster's waits look.
	clusterPoll = 50 * time.Millisecond
)

// redisLocalHint says how to get what StartRedisCluster and
// StartRedisSentinel need.
const redisLocalHint = "install it (Debian/Ubuntu: apt-get install redis-server redis-sentinel); " +
	"clusters and sentinel setups are always started here, never taken from REDIS_ADDRS"

// RedisCluster is a Redis Cluster for a test: redis-server processes with
// cluster-enabled on 127.0.0.1 ports, no persistence, joined by
// `redis-cli --cluster create`. It never comes from REDIS_ADDRS.
type RedisCluster struct {
	nodes []*RedisClusterNode
}

// RedisNode is one redis-server process of a RedisCluster or a
// RedisSentinel (a sentinel too): a Server that can also be paused.
type RedisNode struct{ Server }

// Running reports whether the node's process runs (a paused one counts).
func (n *RedisNode) Running() bool { return n.s.proc.running() }

// Paused reports whether the node was paused with Pause and not resumed.
func (n *RedisNode) Paused() bool { return n.s.proc.isPaused() }

// Pause freezes the node with SIGSTOP: its connections stay open and the
// kernel still accepts new ones, but it answers nothing, as a server that
// hangs. Resume undoes it.
func (n *RedisNode) Pause(t testing.TB) { t.Helper(); n.signal(t, "pause", syscall.SIGSTOP) }

// Resume continues a paused node with SIGCONT.
func (n *RedisNode) Resume(t testing.TB) { t.Helper(); n.signal(t, "resume", syscall.SIGCONT) }

// live reports whether the node runs and is not paused: whether it can
// answer.
func (n *RedisNode) live() bool { return n.Running() && !n.Paused() }

// signal sends sig to the node's process group; what names it in messages.
func (n *RedisNode) signal(t testing.TB, what string, sig syscall.Signal) {
	t.Helper()
	n.s.local(t, what)
	if err := n.s.proc.signal(sig); err != nil {
		t.Fatal(err)
	}
}

// RedisClusterNode is one node of a RedisCluster, a master or a replica.
// Stop, Kill, Pause and Resume act on its process; Start starts it again on
// the same port with its nodes.conf, so it rejoins the cluster as the same
// node (same ID) but with no keys: a master that comes back before its
// replica took over serves its slots empty, and one that comes back after
// becomes a replica of the new master. Use WaitHealthy after Start.
type RedisClusterNode struct{ RedisNode }

// ID is the node's cluster ID (CLUSTER MYID); it survives Stop and Start.
func (n *RedisClusterNode) ID(t testing.TB) string {
	t.Helper()
	id, err := redisText(n.Addr(), "CLUSTER", "MYID")
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// Role is the node's role from ROLE: "master" or "slave".
func (n *RedisClusterNode) Role(t testing.TB) string {
	t.Helper()
	role, err := redisRole(n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	return role
}

// String describes the node for messages.
func (n *RedisClusterNode) String() string { return "redis cluster node " + n.Addr() }

// StartRedisCluster gives t a Redis Cluster of primaries masters (at least
// 3) with replicasPerPrimary replicas each, every node on its own free
// 127.0.0.1 port with its own temp dir and a cluster-node-timeout of 2s, and
// waits (bounded) until it is healthy (see WaitHealthy). t.Cleanup kills the
// processes and removes the dirs. Without redis-server or redis-cli
// installed t is ended by Unavailable.
func StartRedisCluster(t testing.TB, primaries, replicasPerPrimary int) *RedisCluster {
	t.Helper()
	return startRedisCluster(t, primaries, replicasPerPrimary, nil)
}

// StartRedisClusterSecure is StartRedisCluster with every node secured
// by sec: its password (requirepass; a replica gives it to its master,
// masterauth) and its ACL users, in a config file of the node's (mode
// 0600), as StartRedisSecure writes it. The harness's own commands to the
// nodes authenticate with the password, and redis-cli --cluster create
// gets it in REDISCLI_AUTH. TLS is not supported here: t fails.
func StartRedisClusterSecure(t testing.TB, primaries, replicasPerPrimary int, sec RedisSecurity) *RedisCluster {
	t.Helper()
	if err := sec.checkPlain("StartRedisClusterSecure"); err != nil {
		t.Fatal(err)
	}
	return startRedisCluster(t, primaries, replicasPerPrimary, &sec)
}

// startRedisCluster is StartRedisCluster, secured by sec when it is not
// nil.
func startRedisCluster(t testing.TB, primaries, replicasPerPrimary int, sec *RedisSecurity) *RedisCluster {
	t.Helper()
	if primaries < 3 || replicasPerPrimary < 0 {
		t.Fatalf("StartRedisCluster(%d, %d): a cluster needs at least 3 masters and no negative replicas",
			primaries, replicasPerPrimary)
	}
	cli, err := findBinary("redis-cli")
	if err != nil {
		Unavailable(t, "redis cluster: %v; %s", err, redisLocalHint)
	}
	argv, probe, env := clusterArgv, redisPing, os.Environ()
	if sec != nil {
		argv, probe = securedArgv(t, *sec, clusterArgv), redisSecurePing(nil)
		if sec.Password != "" {
			env = append(env, "REDISCLI_AUTH="+sec.Password)
		}
	}
	// No *_ADDRS variable: the harness must control and reshape the nodes.
	servers := startServers(t, primaries*(1+replicasPerPrimary), "redis-cluster", "", "redis-server",
		redisLocalHint, argv, probe)
	c := &RedisCluster{nodes: wrapServers(servers, func(s Server) *RedisClusterNode {
		return &RedisClusterNode{RedisNode{s}}
	})}
	ctx, cancel := context.WithTimeout(context.Background(), clusterCreateTimeout)
	defer cancel()
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicasPerPrimary), "--cluster-yes")
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	c.WaitHealthy(t)
	return c
}

// clusterArgv is replicatedArgv with cluster mode on, nodes.conf in dir,
// and a free port of its own for the cluster bus: by default it would be
// port+10000, which may be another server's port (a node of the same
// cluster failed with "Address already in use") or, above 55535, none.
func clusterArgv(bin string, port int, dir string) []string {
	argv := append(replicatedArgv(bin, port, dir),
		"--cluster-enabled", "yes",
		"--cluster-config-file", filepath.Join(dir, "nodes.conf"),
		"--cluster-node-timeout", strconv.Itoa(clusterNodeTimeout),
	)
	if bus, err := FreePorts(1); err == nil { // else port+10000, as before
		argv = append(argv, "--cluster-port", strconv.Itoa(bus[0]))
	}
	return argv
}

// replicatedArgv is redisArgv for a server with replicas: a replica is
// synced at once (no diskless-sync delay), and the primary pings its
// replicas every second rather than ten, so that a replica's offset moves
// even when nothing is written (a cluster lists a replica in CLUSTER SLOTS
// only once its offset is not 0).
func replicatedArgv(bin string, port int, dir string) []string {
	return append(redisArgv(bin, port, dir),
		"--repl-diskless-sync-delay", "0",
		"--repl-ping-replica-period", "1",
	)
}

// Addrs is the address of every node, masters and replicas, in the order
// of Nodes: the seed list of a cluster client (redis.ClusterOptions.Addrs).
func (c *RedisCluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Addr()
	}
	return out
}

// Nodes returns every node in a fixed order. Which are masters changes
// with failovers: ask Role or MasterOfSlot.
func (c *RedisCluster) Nodes() []*RedisClusterNode { return slices.Clone(c.nodes) }

// ReplicaOf returns a live replica of master whose replication link to it
// is up (from ROLE), the first in Nodes order; t fails when there is none.
func (c *RedisCluster) ReplicaOf(t testing.TB, master *RedisClusterNode) *RedisClusterNode {
	t.Helper()
	for _, n := range c.live() {
		if m, err := masterOf(n.Addr()); err == nil && m == master.Addr() {
			return n
		}
	}
	t.Fatalf("no live replica of %s", master)
	return nil
}

// KeySlot is the hash slot of key, as the server computes it (CLUSTER
// KEYSLOT), hash tags included.
func (c *RedisCluster) KeySlot(t testing.TB, key string) int {
	t.Helper()
	var slot int64
	err := c.onLiveNode(func(addr string) (err error) {
		slot, err = redisInt(addr, "CLUSTER", "KEYSLOT", key)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return int(slot)
}

// MasterOfSlot returns the master that serves slot, waiting (bounded) until
// every live node agrees on it and it is live itself.
func (c *RedisCluster) MasterOfSlot(t testing.TB, slot int) *RedisClusterNode {
	t.Helper()
	var owner *RedisClusterNode
	err := waitFor(nil, fmt.Sprintf("the nodes agreeing on the master of slot %d", slot), clusterHealthyTimeout,
		clusterPoll, func() (err error) {
			owner, err = c.slotOwner(slot)
			return err
		})
	if err != nil {
		t.Fatal(err)
	}
	return owner
}

// MoveSlot moves slot, with its keys, from the master that serves it to
// the master to, as `redis-cli --cluster reshard` does: to imports it and
// the owner migrates it (CLUSTER SETSLOT IMPORTING, MIGRATING), the keys go
// over in batches (CLUSTER GETKEYSINSLOT, MIGRATE, which keeps TTLs), then
// CLUSTER SETSLOT NODE gives the slot to to on to, the old owner and every
// other live master. Meanwhile clients are redirected with ASK (or told
// TRYAGAIN for a command over several keys split between the two), so
// keys may be in use while they move. When the old owner and its replicas
// learn that they lost the slot, they end their clients' subscriptions to
// sharded channels of the slot with a sunsubscribe message. MoveSlot
// returns once every live node agrees that to serves slot and the cluster
// is healthy.
func (c *RedisCluster) MoveSlot(t testing.TB, slot int, to *RedisClusterNode) {
	t.Helper()
	from := c.MasterOfSlot(t, slot)
	if from == to {
		t.Fatalf("MoveSlot(%d): %s serves it already", slot, to)
	}
	if role := to.Role(t); role != "master" {
		t.Fatalf("MoveSlot(%d) to %s: it is a %s", slot, to, role)
	}
	if err := c.moveSlot(slot, from, to, from.ID(t), to.ID(t)); err != nil {
		t.Fatalf("move slot %d from %s to %s: %v", slot, from, to, err)
	}
	err := waitFor(nil, fmt.Sprintf("the nodes agreeing that %s serves slot %d", to, slot), clusterHealthyTimeout,
		clusterPoll, func() error {
			owner, err := c.slotOwner(slot)
			if err == nil && owner != to {
				err = fmt.Errorf("%s serves it", owner)
			}
			return err
		})
	if err != nil {
		t.Fatal(err)
	}
	c.WaitHealthy(t)
}

// moveSlot runs the steps of MoveSlot from SETSLOT IMPORTING to SETSLOT NODE.
func (c *RedisCluster) moveSlot(slot int, from, to *RedisClusterNode, fromID, toID string) error {
	s := strconv.Itoa(slot)
	if _, err := redisDo(to.Addr(), "CLUSTER", "SETSLOT", s, "IMPORTING", fromID); err != nil {
		return err
	}
	if _, err := redisDo(from.Addr(), "CLUSTER", "SETSLOT", s, "MIGRATING", toID); err != nil {
		return err
	}
	host, port, err := net.SplitHostPort(to.Addr())
	if err != nil {
		return err
	}
	drained := false
	for range clusterMigrateMaxBatches {
		reply, err := redisDo(from.Addr(), "CLUSTER", "GETKEYSINSLOT", s, strconv.Itoa(clusterMigrateBatch))
		if err != nil {
			return err
		}
		keys, err := texts(reply)
		if err != nil {
			return fmt.Errorf("CLUSTER GETKEYSINSLOT: %w", err)
		}
		if len(keys) == 0 {
			drained = true
			break
		}
		// A key that expired or was deleted meanwhile makes MIGRATE answer
		// NOKEY, which is fine.
		args := append([]string{"MIGRATE", host, port, "", "0", strconv.Itoa(clusterMigrateTimeout), "KEYS"}, keys...)
		if _, err := redisDo(from.Addr(), args...); err != nil {
			return err
		}
	}
	if !drained {
		return fmt.Errorf("more than %d keys in the slot", clusterMigrateBatch*clusterMigrateMaxBatches)
	}
	// The importing node first, so that it bumps its config epoch and wins
	// against stale gossip; then the old owner, so that it redirects with
	// MOVED; then the other masters (replicas refuse SETSLOT and learn it
	// from gossip).
	masters := []*RedisClusterNode{to, from}
	for _, n := range c.nodes {
		if n != to && n != from && n.live() {
			if role, err := redisRole(n.Addr()); err == nil && role == "master" {
				masters = append(masters, n)
			}
		}
	}
	for _, n := range masters {
		if _, err := redisDo(n.Addr(), "CLUSTER", "SETSLOT", s, "NODE", toID); err != nil {
			return err
		}
	}
	return nil
}

// Failover promotes replica to master with CLUSTER FAILOVER (a manual
// failover: the replica first catches up with its master, then takes its
// slots, and the master becomes its replica and ends its clients'
// subscriptions to sharded channels with a sunsubscribe message), and waits
// (bounded) until the replica says it is master and the cluster is healthy.
func (c *RedisCluster) Failover(t testing.TB, replica *RedisClusterNode) {
	t.Helper()
	if role := replica.Role(t); role != "slave" {
		t.Fatalf("Failover(%s): it is a %s", replica, role)
	}
	if _, err := redisDo(replica.Addr(), "CLUSTER", "FAILOVER"); err != nil {
		t.Fatal(err)
	}
	err := waitFor(replica.s.proc, replica.String()+" master after CLUSTER FAILOVER", clusterFailoverTimeout,
		clusterPoll, func() error {
			role, err := redisRole(replica.Addr())
			if err == nil && role != "master" {
				err = fmt.Errorf("role %s", role)
			}
			return err
		})
	if err != nil {
		t.Fatal(err)
	}
	c.WaitHealthy(t)
}

// WaitHealthy waits (bounded) until every live node (running, not paused)
// says cluster_state:ok and knows every node, all of them agree on which
// master serves each of the 16384 slots, each of those masters is live, and
// every live replica's link to its master is up; t fails otherwise.
func (c *RedisCluster) WaitHealthy(t testing.TB) {
	t.Helper()
	if err := waitFor(nil, "redis cluster healthy", clusterHealthyTimeout, clusterPoll, c.healthy); err != nil {
		t.Fatal(err)
	}
}

// BusMessages sums cluster_stats_messages_sent and _received of CLUSTER
// INFO over the live nodes: the messages of the cluster bus (gossip,
// failure reports, classic PUBLISH fanned out to every node). A node's
// counters restart at zero when it restarts.
func (c *RedisCluster) BusMessages(t testing.TB) (sent, received int64) {
	t.Helper()
	for _, n := range c.live() {
		info, err := redisFields(n.Addr(), "CLUSTER", "INFO")
		if err != nil {
			t.Fatal(err)
		}
		for field, sum := range map[string]*int64{
			"cluster_stats_messages_sent":     &sent,
			"cluster_stats_messages_received": &received,
		} {
			v, err := strconv.ParseInt(info[field], 10, 64)
			if err != nil {
				t.Fatalf("%s: CLUSTER INFO %s: %v", n, field, err)
			}
			*sum += v
		}
	}
	return sent, received
}

// live returns the nodes that can answer.
func (c *RedisCluster) live() []*RedisClusterNode {
	var out []*RedisClusterNode
	for _, n := range c.nodes {
		if n.live() {
			out = append(out, n)
		}
	}
	return out
}

// onLiveNode runs do on the address of each live node in turn until it
// succeeds, and returns the last error when none does.
func (c *RedisCluster) onLiveNode(do func(addr string) error) error {
	err := errors.New("redis cluster: no live node")
	for _, n := range c.live() {
		if err = do(n.Addr()); err == nil {
			return nil
		}
	}
	return err
}

// node returns the node at addr, or nil.
func (c *RedisCluster) node(addr string) *RedisClusterNode {
	for _, n := range c.nodes {
		if n.Addr() == addr {
			return n
		}
	}
	return nil
}

// healthy is WaitHealthy's check.
func (c *RedisCluster) healthy() error {
	live := c.live()
	if len(live) == 0 {
		return errors.New("no live node")
	}
	replicas := map[string]string{} // live replica → its master
	for _, n := range live {
		master, err := masterOf(n.Addr())
		if err != nil {
			return err
		}
		if master != "" {
			replicas[n.Addr()] = master
		}
	}
	var first []slotRange
	for i, n := range live {
		info, err := redisFields(n.Addr(), "CLUSTER", "INFO")
		if err != nil {
			return err
		}
		if state := info["cluster_state"]; state != "ok" {
			return fmt.Errorf("%s: cluster_state:%s", n, state)
		}
		if known := info["cluster_known_nodes"]; known != strconv.Itoa(len(c.nodes)) {
			return fmt.Errorf("%s: cluster_known_nodes:%s, want %d", n, known, len(c.nodes))
		}
		if err := c.checkView(n.Addr(), replicas); err != nil {
			return err
		}
		ranges, err := clusterSlotRanges(n.Addr())
		if err != nil {
			return err
		}
		if i == 0 {
			first = ranges
		} else if !slices.Equal(ranges, first) {
			return fmt.Errorf("slot maps differ: %s has %v, %s has %v", live[0], first, n, ranges)
		}
	}
	next := 0
	for _, r := range first {
		if r.first != next {
			return fmt.Errorf("slots %d-%d unassigned", next, r.first-1)
		}
		if m := c.node(r.master); m == nil || !m.live() {
			return fmt.Errorf("slots %d-%d: their master %s is not live", r.first, r.last, r.master)
		}
		next = r.last + 1
	}
	if next != clusterSlots {
		return fmt.Errorf("slots %d-%d unassigned", next, clusterSlots-1)
	}
	return nil
}

// checkView reports nil when the node at addr (CLUSTER NODES) has its bus
// link to every other live node connected, flags none of them as failing,
// and knows each of replicas (replica → master) as a replica of its master.
// A message to a peer without a link is lost; a master passes SPUBLISH on
// only to the replicas it knows (learnt from their gossip, up to a second
// after they replicate), and ignores a manual failover from a replica it
// does not know.
func (c *RedisCluster) checkView(addr string, replicas map[string]string) error {
	text, err := redisText(addr, "CLUSTER", "NODES")
	if err != nil {
		return err
	}
	type entry struct{ id, flags, master string }
	view := map[string]entry{} // by address
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		// <id> <ip:port@cport[,hostname]> <flags> <master> <ping-sent>
		// <pong-recv> <config-epoch> <link-state> <slot>...
		f := strings.Fields(line)
		if len(f) < 8 {
			return fmt.Errorf("CLUSTER NODES to %s: line %q", addr, line)
		}
		peer, _, _ := strings.Cut(f[1], "@")
		view[peer] = entry{id: f[0], flags: f[2], master: f[3]}
		if n := c.node(peer); n == nil || !n.live() {
			continue
		}
		if f[7] != "connected" || strings.Contains(f[2], "fail") || strings.Contains(f[2], "handshake") {
			return fmt.Errorf("%s: its link to %s is %s, flags %s", addr, peer, f[7], f[2])
		}
	}
	for replica, master := range replicas {
		if r := view[replica]; !strings.Contains(r.flags, "slave") || r.master != view[master].id {
			return fmt.Errorf("%s does not know %s as a replica of %s yet", addr, replica, master)
		}
	}
	return nil
}

// slotOwner returns the master of slot when every live node agrees on it
// and it is live.
func (c *RedisCluster) slotOwner(slot int) (*RedisClusterNode, error) {
	owner := ""
	for _, n := range c.live() {
		ranges, err := clusterSlotRanges(n.Addr())
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(ranges, func(r slotRange) bool { return r.first <= slot && slot <= r.last })
		if i < 0 {
			return nil, fmt.Errorf("%s: no master serves slot %d", n, slot)
		}
		if owner == "" {
			owner = ranges[i].master
		} else if ranges[i].master != owner {
			return nil, fmt.Errorf("slot %d: %s is served by %s, says %s", slot, owner, ranges[i].master, n)
		}
	}
	m := c.node(owner)
	if m == nil || !m.live() {
		return nil, fmt.Errorf("slot %d: its master %q is not a live node", slot, owner)
	}
	return m, nil
}

// slotRange is one range of CLUSTER SLOTS: the slots first to last are
// served by the master at address master.
type slotRange struct {
	first, last int
	master      string
}

// clusterSlotRanges asks addr for CLUSTER SLOTS and returns its ranges in
// slot order.
func clusterSlotRanges(addr string) ([]slotRange, error) {
	reply, err := redisDo(addr, "CLUSTER", "SLOTS")
	if err != nil {
		return nil, err
	}
	entries, _ := reply.([]any)
	out := make([]slotRange, 0, len(entries))
	for _, e := range entries {
		// [first, last, [ip, port, id, ...], replicas...]
		f, _ := e.([]any)
		if len(f) < 3 {
			return nil, fmt.Errorf("CLUSTER SLOTS to %s: entry %v", addr, e)
		}
		master, _ := f[2].([]any)
		first, ok1 := f[0].(int64)
		last, ok2 := f[1].(int64)
		if !ok1 || !ok2 || len(master) < 2 {
			return nil, fmt.Errorf("CLUSTER SLOTS to %s: entry %v", addr, e)
		}
		ip, _ := master[0].(string)
		port, _ := master[1].(int64)
		out = append(out, slotRange{int(first), int(last), net.JoinHostPort(ip, strconv.FormatInt(port, 10))})
	}
	slices.SortFunc(out, func(a, b slotRange) int { return a.first - b.first })
	return out, nil
}

// masterOf returns, from ROLE, the address of the master that the node at
// addr replicates, or "" when it is a master; a replica whose link to its
// master is not up ("connected") is an error.
func masterOf(addr string) (string, error) {
	reply, err := redisDo(addr, "ROLE")
	if err != nil {
		return "", err
	}
	// A replica's ROLE: slave, master ip, master port, link state, offset.
	f, _ := reply.([]any)
	if len(f) == 0 || f[0] != "slave" {
		return "", nil
	}
	if len(f) < 4 {
		return "", fmt.Errorf("ROLE to %s: %v", addr, reply)
	}
	master := net.JoinHostPort(fmt.Sprint(f[1]), fmt.Sprint(f[2]))
	if f[3] != "connected" {
		return "", fmt.Errorf("replica %s: its link to its master %s is %v", addr, master, f[3])
	}
	return master, nil
}

// redisRole returns ROLE's first element: "master", "slave" or "sentinel".
func redisRole(addr string) (string, error) {
	reply, err := redisDo(addr, "ROLE")
	if err != nil {
		return "", err
	}
	if f, _ := reply.([]any); len(f) > 0 {
		if role, ok := f[0].(string); ok {
			return role, nil
		}
	}
	return "", fmt.Errorf("ROLE to %s: %v", addr, reply)
}

// redisCommandTimeout bounds one command of redisDo, connection included.
const redisCommandTimeout = 5 * time.Second

// errPartialReply is parseReply's error for a reply that has not all come.
var errPartialReply = errors.New("partial reply")

// redisError is an error reply of a redis server ("ERR ...", "MOVED ...").
type redisError string

func (e redisError) Error() string { return string(e) }

// redisDo sends one command to addr on a connection of its own and returns
// the reply: a string (simple or bulk), an int64, a []any, or nil (a null).
// An error reply is an error that wraps a redisError.
func redisDo(addr string, args ...string) (any, error) {
	auth := authRequest(addr) // a password-protected server's AUTH first
	replies := 1
	if auth != "" {
		replies = 2
	}
	what := strings.Join(args[:min(len(args), 2)], " ")
	raw, err := exchange(addr, auth+respCommand(args...), redisCommandTimeout, func(r string) bool {
		for range replies {
			var err error
			if _, r, err = parseReply(r); err != nil {
				return !errors.Is(err, errPartialReply)
			}
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("%s to %s: %w", what, addr, err)
	}
	if auth != "" {
		var ok any
		if ok, raw, err = parseReply(raw); err == nil && ok != "OK" {
			err = fmt.Errorf("AUTH: %v", ok)
		}
		if err != nil {
			return nil, fmt.Errorf("%s to %s: %w", what, addr, err)
		}
	}
	reply, _, err := parseReply(raw)
	if e, ok := reply.(redisError); ok && err == nil {
		err = e
	}
	if err != nil {
		return nil, fmt.Errorf("%s to %s: %w", what, addr, err)
	}
	return reply, nil
}

// parseReply parses the RESP2 reply at the start of s and returns it (see
// redisDo; an error reply is a redisError value) and what follows it.
func parseReply(s string) (reply any, rest string, err error) {
	line, rest, ok := strings.Cut(s, "\r\n")
	if !ok {
		return nil, s, errPartialReply
	}
	if line == "" {
		return nil, s, errors.New("empty reply line")
	}
	switch line[0] {
	case '+':
		return line[1:], rest, nil
	case '-':
		return redisError(line[1:]), rest, nil
	case ':':
		n, err := strconv.ParseInt(line[1:], 10, 64)
		return n, rest, err
	case '$':
		n, err := strconv.Atoi(line[1:])
		switch {
		case err != nil:
			return nil, s, err
		case n < 0:
			return nil, rest, nil
		case len(rest) < n+2:
			return nil, s, errPartialReply
		}
		return rest[:n], rest[n+2:], nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		switch {
		case err != nil:
			return nil, s, err
		case n < 0:
			return nil, rest, nil
		}
		items := make([]any, 0, min(n, 1024))
		for range n {
			var item any
			if item, rest, err = parseReply(rest); err != nil {
				return nil, s, err
			}
			items = append(items, item)
		}
		return items, rest, nil
	}
	return nil, s, fmt.Errorf("not a redis reply: %q", line)
}

// redisText runs a command whose reply is a string.
func redisText(addr string, args ...string) (string, error) {
	reply, err := redisDo(addr, args...)
	if err != nil {
		return "", err
	}
	s, ok := reply.(string)
	if !ok {
		return "", fmt.Errorf("%s to %s: %v is not a string", args[0], addr, reply)
	}
	return s, nil
}

// redisInt runs a command whose reply is an integer.
func redisInt(addr string, args ...string) (int64, error) {
	reply, err := redisDo(addr, args...)
	if err != nil {
		return 0, err
	}
	n, ok := reply.(int64)
	if !ok {
		return 0, fmt.Errorf("%s to %s: %v is not an integer", args[0], addr, reply)
	}
	return n, nil
}

// redisFields runs a command whose reply is "field:value" lines (INFO,
// CLUSTER INFO) and returns them as a map.
func redisFields(addr string, args ...string) (map[string]string, error) {
	text, err := redisText(addr, args...)
	if err != nil {
		return nil, err
	}
	fields := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	return fields, nil
}

// texts returns reply as a []string when it is an array of strings.
func texts(reply any) ([]string, error) {
	items, ok := reply.([]any)
	if !ok && reply != nil {
		return nil, fmt.Errorf("%v is not an array", reply)
	}
	out := make([]string, len(items))
	for i, item := range items {
		if out[i], ok = item.(string); !ok {
			return nil, fmt.Errorf("%v is not an array of strings", reply)
		}
	}
	return out, nil
}
