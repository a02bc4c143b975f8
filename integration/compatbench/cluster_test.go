package compatbench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	bsm "github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/lockbench"
)

// The locks on a Redis Cluster (three masters, a replica each) and under
// Sentinel with replica acknowledgement (WithReplicaAck).

// newClusterClient is a go-redis client of the cluster whose seed list is
// addrs, with its defaults, counted by ctr.
func newClusterClient(addrs []string, ctr *Counter) *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, Dialer: ctr.Dial})
}

// onCluster is a client whose connections are those of r: closing it
// closes r (the wrapped client has none of its own to close).
type onCluster struct {
	client
	r *redis.ClusterClient
}

func (c onCluster) close() error { return c.r.Close() }

// redislockOver is a client of this repository's redislock over r, with
// benchTTL and opts; stop closes r.
func redislockOver(r redislock.Redis, stop func() error, name string, opts ...redislock.Option) (client, error) {
	c, err := redislock.NewClient(r)
	if err != nil {
		return nil, errors.Join(err, stop())
	}
	l, err := redislock.New(c, name, append([]redislock.Option{redislock.WithTTL(benchTTL)}, opts...)...)
	if err != nil {
		return nil, errors.Join(err, c.Close(), stop())
	}
	return &leaseClient{l: l, stop: func() error { return errors.Join(c.Close(), stop()) }}, nil
}

// redislockClusterImpl is redislock over a ClusterClient: its grants
// sharded (SPUBLISH and SSUBSCRIBE in the lock's slot).
var redislockClusterImpl = impl{name: "redislock", open: func(addrs []string, name string, ctr *Counter) (client, error) {
	r := newClusterClient(addrs, ctr)
	return redislockOver(r, r.Close, name)
}}

// bsmClusterImpl is bsm/redislock over a ClusterClient, retrying every
// retry.
func bsmClusterImpl(retry time.Duration) impl {
	return impl{name: "bsm-retry" + retry.String(), open: func(addrs []string, key string, ctr *Counter) (client, error) {
		r := newClusterClient(addrs, ctr)
		opt := &bsm.Options{RetryStrategy: bsm.LinearBackoff(retry)}
		return onCluster{&bsmClient{c: bsm.New(r), key: key, opt: opt}, r}, nil
	}}
}

// redsyncClusterImpl is redsync with its defaults over one pool, a
// ClusterClient (see redsyncImpl for gaveUp).
func redsyncClusterImpl(gaveUp *atomic.Int64) impl {
	return impl{name: "redsync", open: func(addrs []string, key string, ctr *Counter) (client, error) {
		r := newClusterClient(addrs, ctr)
		return onCluster{&redsyncClient{m: redsync.New(goredis.NewPool(r)).NewMutex(key), gaveUp: gaveUp}, r}, nil
	}}
}

// clusterMasters returns an admin client (not counted) of each master of
// c, closed at b's cleanup.
func clusterMasters(b *testing.B, c *harness.RedisCluster) []*redis.Client {
	b.Helper()
	var admins []*redis.Client
	for _, n := range c.Nodes() {
		if n.Role(b) != "master" {
			continue
		}
		r := redis.NewClient(&redis.Options{Addr: n.Addr()})
		b.Cleanup(func() { _ = r.Close() })
		admins = append(admins, r)
	}
	return admins
}

// gossipIdle is how long the cluster bus is watched with nothing else
// running, for the rate of its own traffic (pings and pongs).
const gossipIdle = 3 * time.Second

// busRate is messages per second on a cluster's bus.
type busRate struct{ sent, received float64 }

// idleBus measures the bus's own traffic over gossipIdle.
func idleBus(b *testing.B, c *harness.RedisCluster) busRate {
	b.Helper()
	s0, r0 := c.BusMessages(b)
	start := time.Now()
	time.Sleep(gossipIdle)
	s1, r1 := c.BusMessages(b)
	d := time.Since(start).Seconds()
	return busRate{float64(s1-s0) / d, float64(r1-r0) / d}
}

// untilOld waits until a server started at started is benchTTL old:
// redislock grants nothing on a younger one (its quiet period).
func untilOld(started time.Time) { time.Sleep(time.Until(started.Add(benchTTL))) }

// ownLock is the lock of client i in own-locks, the same for every
// implementation (bsm's and redsync's keys are the name itself, and the
// rounds follow each other, every lock released at a round's end).
func ownLock(_ impl, i int) string { return fmt.Sprintf("own-%d", i) }

// spread says how many of ownLock's names each master serves, and fails b
// unless every master serves some.
func spread(b *testing.B, c *harness.RedisCluster, masters []*redis.Client) string {
	b.Helper()
	per := map[string]int{}
	for i := range contenders {
		per[c.MasterOfSlot(b, c.KeySlot(b, ownLock(impl{}, i))).Addr()]++
	}
	var parts []string
	for _, m := range masters {
		if per[m.Options().Addr] == 0 {
			b.Fatalf("no own lock on master %s: pick other names", m.Options().Addr)
		}
		parts = append(parts, fmt.Sprintf("%s %d", m.Options().Addr, per[m.Options().Addr]))
	}
	return strings.Join(parts, ", ")
}

// BenchmarkCompatCluster is BenchmarkCompatContended (hold 0, think 0) on
// a Redis Cluster of three masters with a replica each: redislock,
// bsm/redislock (1 ms retry) and redsync, each over a ClusterClient of
// its own per client. one-lock: the 16 clients on one lock; own-locks:
// each on a lock of its own, the 16 spread over the three masters.
// Executed commands and server CPU are the masters' alone: each replica
// executes the replicated writes too. Besides the table it reports the
// cluster-bus messages per acquisition, and the bus's own traffic (its
// rate with nothing running, times the rounds' time) for comparison.
func BenchmarkCompatCluster(b *testing.B) {
	started := time.Now()
	c := harness.StartRedisCluster(b, 3, 1)
	masters := clusterMasters(b, c)
	if len(masters) != 3 {
		b.Fatalf("%d masters, want 3", len(masters))
	}
	untilOld(started)
	idle := idleBus(b, c)
	var gaveUp atomic.Int64
	impls := []impl{redislockClusterImpl, bsmClusterImpl(time.Millisecond), redsyncClusterImpl(&gaveUp)}
	on := func(b *testing.B, name func(impl, int) string) arena {
		return arena{addrs: c.Addrs(), admins: masters, name: name,
			bus: func() (int64, int64) { return c.BusMessages(b) }}
	}
	w := workload{}
	b.Run("one-lock", func(b *testing.B) {
		table(b, "%d clients on one lock per implementation; executed and server CPU: the 3 masters' (each replica executes the replicated writes too)", contenders)
		busTable(b, impls, contended(b, on(b, nil), w, &gaveUp, impls), idle)
	})
	b.Run("own-locks", func(b *testing.B) {
		table(b, "%d clients each on its own lock (%s to %s; per master: %s); executed and server CPU: the 3 masters' (each replica executes the replicated writes too); "+
			"fairness and hand-off are over %d independent locks (hand-off: from any release to the next grant of any lock): not meaningful",
			contenders, ownLock(impl{}, 0), ownLock(impl{}, contenders-1), spread(b, c, masters), contenders)
		busTable(b, impls, contended(b, on(b, ownLock), w, &gaveUp, impls), idle)
	})
}

// busTable prints the cluster-bus messages per acquisition of each
// implementation's rounds, and the bus's own share at its idle rate.
func busTable(b *testing.B, impls []impl, rounds [][]round, idle busRate) {
	var tab strings.Builder
	fmt.Fprintf(&tab, "idle bus: %.1f sent/s, %.1f received/s\n| impl | bus sent/acq | bus received/acq | idle rate × time /acq | sent above idle /acq |\n|---|---|---|---|---|\n",
		idle.sent, idle.received)
	for i, im := range impls {
		var sent, received int64
		var window time.Duration
		acq := 0
		for _, r := range rounds[i] {
			sent, received, window, acq = sent+r.bus[0], received+r.bus[1], window+r.busTime, acq+r.acq
		}
		perAcq := func(n float64) float64 { return n / float64(acq) }
		gossip := perAcq(idle.sent * window.Seconds())
		b.ReportMetric(perAcq(float64(sent)), im.name+"-bus-sent/acq")
		fmt.Fprintf(&tab, "| %s | %.3f | %.3f | %.3f | %.3f |\n", im.name,
			perAcq(float64(sent)), perAcq(float64(received)), gossip, perAcq(float64(sent))-gossip)
	}
	table(b, "cluster-bus messages (all 6 nodes) around the rounds' measured parts; idle share: the idle rate times the time between the readings:\n%s", tab.String())
}

// publishes is how many messages BenchmarkCompatClusterPublish publishes
// each way per iteration.
const publishes = 2000

// publishWait bounds the wait for the subscriber to have every message.
const publishWait = 30 * time.Second

// publishMode is one way to publish: the command, and a subscriber of its
// channel on the channel's master.
type publishMode struct {
	cmd  string
	msgs <-chan *redis.Message
}

// BenchmarkCompatClusterPublish: the cost on the cluster bus of a grant's
// message, a classic PUBLISH against a sharded SPUBLISH, each sent to the
// master of the channel's slot with one subscriber of the channel
// connected there (SUBSCRIBE, SSUBSCRIBE), publishes of each per
// iteration, in a rotating order. It reports the bus messages sent and
// received per publish (over all 6 nodes) and the bus's own share at its
// idle rate.
func BenchmarkCompatClusterPublish(b *testing.B) {
	c := harness.StartRedisCluster(b, 3, 1)
	ctx := bounded(b, benchLimit)
	const channel = "{publish}grants"
	master := c.MasterOfSlot(b, c.KeySlot(b, channel))
	client := func() *redis.Client {
		r := redis.NewClient(&redis.Options{Addr: master.Addr()})
		b.Cleanup(func() { _ = r.Close() })
		return r
	}
	pub := client()
	subscribe := func(ps *redis.PubSub) <-chan *redis.Message {
		b.Cleanup(func() { _ = ps.Close() })
		if _, err := ps.Receive(ctx); err != nil { // the confirmation
			b.Fatal(err)
		}
		return ps.Channel(redis.WithChannelSize(publishes))
	}
	modes := []publishMode{
		{"PUBLISH", subscribe(client().Subscribe(ctx, channel))},
		{"SPUBLISH", subscribe(client().SSubscribe(ctx, channel))},
	}
	idle := idleBus(b, c)
	type total struct {
		sent, received int64
		window         time.Duration // between the bus's readings
		took           time.Duration // publishing
	}
	totals := make([]total, len(modes))
	n := 0
	for r := 0; b.Loop(); r++ {
		for k := range modes {
			i := (r + k) % len(modes)
			m := modes[i]
			s0, r0 := c.BusMessages(b)
			w0 := time.Now()
			for range publishes {
				got, err := pub.Do(ctx, m.cmd, channel, "grant").Int64()
				if err != nil || got != 1 {
					b.Fatalf("%s: %d receivers, %v", m.cmd, got, err)
				}
			}
			took := time.Since(w0)
			deadline := time.After(publishWait)
			for range publishes {
				select {
				case <-m.msgs:
				case <-deadline:
					b.Fatalf("%s: the subscriber did not get every message within %v", m.cmd, publishWait)
				}
			}
			s1, r1 := c.BusMessages(b)
			t := &totals[i]
			t.sent, t.received = t.sent+s1-s0, t.received+r1-r0
			t.window, t.took = t.window+time.Since(w0), t.took+took
		}
		n += publishes
	}
	b.StopTimer()
	var tab strings.Builder
	fmt.Fprintf(&tab, "idle bus: %.1f sent/s, %.1f received/s\n| command | bus sent/publish | bus received/publish | idle rate × time /publish | sent above idle /publish | received above idle /publish | µs/publish |\n|---|---|---|---|---|---|---|\n",
		idle.sent, idle.received)
	for i, m := range modes {
		t := totals[i]
		per := func(x float64) float64 { return x / float64(n) }
		b.ReportMetric(per(float64(t.sent)), m.cmd+"-bus-sent/publish")
		b.ReportMetric(per(float64(t.received)), m.cmd+"-bus-received/publish")
		fmt.Fprintf(&tab, "| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.1f |\n", m.cmd, per(float64(t.sent)), per(float64(t.received)),
			per(idle.sent*t.window.Seconds()), per(float64(t.sent)-idle.sent*t.window.Seconds()),
			per(float64(t.received)-idle.received*t.window.Seconds()), per(float64(t.took.Microseconds())))
	}
	table(b, "%d publishes of each on %s (slot %d, master %s), one subscriber there, all 6 nodes' bus counters:\n%s",
		n, channel, c.KeySlot(b, channel), master.Addr(), tab.String())
}

// ackBlock is how many operations of one implementation
// BenchmarkCompatReplicaAck makes in a row.
const ackBlock = 200

// ackTimeout is WAIT's timeout in the acknowledged variants.
const ackTimeout = 100 * time.Millisecond

// ackImpl is redislock through a FailoverClient of s, with
// WithReplicaAck(acks, ackTimeout) unless acks is 0.
func ackImpl(s *harness.RedisSentinel, acks int) impl {
	name := "no-ack"
	var opts []redislock.Option
	if acks > 0 {
		name = fmt.Sprintf("ack=%d", acks)
		opts = append(opts, redislock.WithReplicaAck(acks, ackTimeout))
	}
	return impl{name: name, open: func(_ []string, key string, ctr *Counter) (client, error) {
		r := redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: s.MasterName(), SentinelAddrs: s.SentinelAddrs(), Dialer: ctr.Dial})
		return redislockOver(r, r.Close, key, opts...)
	}}
}

// settleLimit bounds the wait for the sentinels to repoint the replicas.
const settleLimit = time.Minute

// settled waits (bounded) until every replica of s replicates from
// primary directly, its link up. The harness links the replicas through
// proxies; a few seconds after they start (the failover timeout, 4 s),
// the sentinels find them replicating from an address that is not the
// primary's and repoint them ("+fix-slave-config"), each then
// reconnecting and resyncing (PSYNC): a WAIT for 2 replicas meanwhile
// waits (up to 171 ms in a run measured before this wait).
func settled(ctx context.Context, b *testing.B, s *harness.RedisSentinel, primary string) time.Duration {
	b.Helper()
	start := time.Now()
	for {
		var waiting []string
		for _, n := range s.Nodes() {
			if n.Addr() == primary {
				continue
			}
			info, err := replication(ctx, n.Addr())
			if err != nil {
				b.Fatal(err)
			}
			if net.JoinHostPort(info["master_host"], info["master_port"]) != primary || info["master_link_status"] != "up" {
				waiting = append(waiting, fmt.Sprintf("%s replicating from %s:%s, link %s", n.Addr(), info["master_host"], info["master_port"], info["master_link_status"]))
			}
		}
		if len(waiting) == 0 {
			return time.Since(start)
		}
		if time.Since(start) > settleLimit {
			b.Fatalf("replicas not repointed at %s within %v: %s", primary, settleLimit, strings.Join(waiting, "; "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// replication is INFO replication of the server at addr, by field.
func replication(ctx context.Context, addr string) (map[string]string, error) {
	r := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = r.Close() }()
	text, err := r.Info(ctx, "replication").Result()
	if err != nil {
		return nil, err
	}
	fields := map[string]string{}
	for line := range strings.SplitSeq(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	return fields, nil
}

// BenchmarkCompatReplicaAck: uncontended acquire+release of redislock
// under Sentinel (a primary, two replicas, three sentinels) through
// redis.NewFailoverClient, without acknowledgement and with
// WithReplicaAck(1, 100ms) and WithReplicaAck(2, 100ms). Each iteration
// makes ackBlock operations of each in a row, the blocks in a rotating
// order, once the sentinels have repointed the replicas (see settled).
// It reports each one's median and p99 operation and their ratios to
// no-ack's, its mean, and the commands sent and executed (by the
// primary) per operation.
func BenchmarkCompatReplicaAck(b *testing.B) {
	s := harness.StartRedisSentinel(b, 2, 3)
	ctx := bounded(b, benchLimit)
	primary := s.Primary(b)
	repointed := settled(ctx, b, s, primary)
	admin := redis.NewClient(&redis.Options{Addr: primary})
	b.Cleanup(func() { _ = admin.Close() })
	impls := []impl{ackImpl(s, 0), ackImpl(s, 1), ackImpl(s, 2)}
	clients := make([]client, len(impls))
	ctrs := make([]*Counter, len(impls))
	for i, im := range impls {
		ctrs[i] = NewCounter()
		clients[i] = open(b, im, nil, "ack-"+im.name, ctrs[i])
		for range 20 { // connections, scripts loaded; the first waits out the primary's quiet period
			if err := once(ctx, clients[i]); err != nil {
				b.Fatalf("%s: %v", im.name, err)
			}
		}
	}
	took := make([][]time.Duration, len(impls))
	sent := make([]Counts, len(impls))
	exec := make([]Counts, len(impls))
	for r := 0; b.Loop(); r++ {
		for k := range impls {
			i := (r + k) % len(impls)
			s0 := ctrs[i].Snapshot()
			e0, err := CommandStats(ctx, admin)
			if err != nil {
				b.Fatal(err)
			}
			for range ackBlock {
				start := time.Now()
				if err := once(ctx, clients[i]); err != nil {
					b.Fatalf("%s: %v", impls[i].name, err)
				}
				took[i] = append(took[i], time.Since(start))
			}
			e1, err := CommandStats(ctx, admin)
			if err != nil {
				b.Fatal(err)
			}
			sent[i], exec[i] = sent[i].Add(ctrs[i].Snapshot().Sub(s0)), exec[i].Add(Executed(e0, e1, 1))
		}
	}
	b.StopTimer()
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	med0, p990 := lockbench.Median(took[0]), lockbench.Quantile(took[0], 0.99)
	var tab strings.Builder
	fmt.Fprintf(&tab, "\n| impl | median µs/op | /%s | p99 µs/op | /%s | mean µs/op | sent/op | executed/op |\n|---|---|---|---|---|---|---|---|\n",
		impls[0].name, impls[0].name)
	var details strings.Builder
	for i, im := range impls {
		ops := len(took[i])
		med, p99 := lockbench.Median(took[i]), lockbench.Quantile(took[i], 0.99)
		var sum time.Duration
		for _, d := range took[i] {
			sum += d
		}
		mean := sum / time.Duration(ops)
		b.ReportMetric(us(med), im.name+"-µs/op")
		b.ReportMetric(us(p99), im.name+"-p99-µs/op")
		if i > 0 {
			b.ReportMetric(float64(med)/float64(med0), im.name+"/"+impls[0].name)
			b.ReportMetric(float64(p99)/float64(p990), "p99-"+im.name+"/"+impls[0].name)
		}
		fmt.Fprintf(&tab, "| %s | %.1f | %.3f | %.1f | %.3f | %.1f | %.2f | %.2f |\n", im.name, us(med), float64(med)/float64(med0),
			us(p99), float64(p99)/float64(p990), us(mean), float64(sent[i].Total)/float64(ops), float64(exec[i].Total)/float64(ops))
		fmt.Fprintf(&details, "%s: max %.1f µs; sent per op: %s; executed per op: %s\n", im.name, us(slices.Max(took[i])),
			Breakdown(sent[i], ops), Breakdown(exec[i], ops))
	}
	table(b, "%d acquire+release of each, in blocks of %d (WAIT timeout %v; the replicas replicating from the primary directly, repointed by the sentinels %v after they were ready):%s%s",
		len(took[0]), ackBlock, ackTimeout, repointed.Round(100*time.Millisecond), tab.String(), details.String())
}
