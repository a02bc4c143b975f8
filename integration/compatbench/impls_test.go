package compatbench

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"net"
	"sync/atomic"
	"time"

	bsm "github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/compat/redlock"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// The implementations, each as a client: one contender with connections
// of its own, as one process would have.

// benchTTL is the TTL of every lock here but rueidislock's and redsync's
// (their defaults, 5 s and 8 s). No lock is held long enough for it to
// matter.
const benchTTL = 10 * time.Second

// client is one contender.
type client interface {
	// lock waits until it holds the lock (or, for the uncontended
	// benchmark, takes it once), and returns how to release it.
	lock(ctx context.Context) (release func(context.Context) error, err error)
	close() error
}

// impl makes the clients of one implementation.
type impl struct {
	name string
	// open makes a client of the lock named name over addrs (one server,
	// or three for Redlock), its writes counted by ctr.
	open func(addrs []string, name string, ctr *Counter) (client, error)
}

// goRedis is a go-redis client of addr, with its defaults, counted by ctr.
func goRedis(addr string, ctr *Counter) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, Dialer: ctr.Dial})
}

func goRedisAll(addrs []string, ctr *Counter) []*redis.Client {
	rs := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		rs[i] = goRedis(a, ctr)
	}
	return rs
}

func closeAll(rs []*redis.Client) error {
	var errs []error
	for _, r := range rs {
		errs = append(errs, r.Close())
	}
	return errors.Join(errs...)
}

// errTaken: the floor found the lock taken (it does not wait).
var errTaken = errors.New("floor: the lock is taken")

// floorDel is the floor's compare-and-delete.
var floorDel = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// floor: SET key val NX PX ttl, then a compare-and-delete script: the two
// round trips a lock with a random value cannot avoid. It does not wait.
var floorImpl = impl{name: "floor", open: func(addrs []string, name string, ctr *Counter) (client, error) {
	return &floorClient{rs: goRedisAll(addrs, ctr), key: name}, nil
}}

type floorClient struct {
	rs  []*redis.Client
	key string
}

func (f *floorClient) lock(ctx context.Context) (func(context.Context) error, error) {
	id := rand.Text()
	r := f.rs[0]
	ok, err := r.SetNX(ctx, f.key, id, benchTTL).Result()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errTaken
	}
	return func(ctx context.Context) error { return floorDel.Run(ctx, r, []string{f.key}, id).Err() }, nil
}

func (f *floorClient) close() error { return closeAll(f.rs) }

// floor3 is the floor of Redlock over three servers: the SET NX to all
// three at once, then the compare-and-delete on all three at once.
var floor3Impl = impl{name: "floor3", open: func(addrs []string, name string, ctr *Counter) (client, error) {
	return &floor3Client{rs: goRedisAll(addrs, ctr), key: name}, nil
}}

type floor3Client struct {
	rs  []*redis.Client
	key string
}

// all runs op on every server at once and returns how many said true.
func all(rs []*redis.Client, op func(*redis.Client) (bool, error)) (int, error) {
	type res struct {
		ok  bool
		err error
	}
	ch := make(chan res, len(rs))
	for _, r := range rs {
		go func() {
			ok, err := op(r)
			ch <- res{ok, err}
		}()
	}
	n := 0
	var errs []error
	for range rs {
		r := <-ch
		if r.ok {
			n++
		}
		errs = append(errs, r.err)
	}
	return n, errors.Join(errs...)
}

func (f *floor3Client) lock(ctx context.Context) (func(context.Context) error, error) {
	id := rand.Text()
	n, err := all(f.rs, func(r *redis.Client) (bool, error) { return r.SetNX(ctx, f.key, id, benchTTL).Result() })
	if err != nil {
		return nil, err
	}
	if n < 2 {
		return nil, errTaken
	}
	return func(ctx context.Context) error {
		_, err := all(f.rs, func(r *redis.Client) (bool, error) {
			return true, floorDel.Run(ctx, r, []string{f.key}, id).Err()
		})
		return err
	}, nil
}

func (f *floor3Client) close() error { return closeAll(f.rs) }

// redislockImpl is this repository's compat/redislock.
var redislockImpl = impl{name: "redislock", open: func(addrs []string, name string, ctr *Counter) (client, error) {
	r := goRedis(addrs[0], ctr)
	c, err := redislock.NewClient(r)
	if err != nil {
		return nil, err
	}
	l, err := redislock.New(c, name, redislock.WithTTL(benchTTL))
	if err != nil {
		return nil, err
	}
	return &leaseClient{l: l, stop: func() error { return errors.Join(c.Close(), r.Close()) }}, nil
}}

// redlockImpl is this repository's compat/redlock with its default retry
// delay (a random 5 to 50 ms between attempts).
var redlockImpl = impl{name: "redlock", open: func(addrs []string, name string, ctr *Counter) (client, error) {
	rs := goRedisAll(addrs, ctr)
	servers := make([]redlock.Redis, len(rs))
	for i, r := range rs {
		servers[i] = r
	}
	c, err := redlock.NewClient(servers)
	if err != nil {
		return nil, err
	}
	l, err := redlock.New(c, name, redlock.WithTTL(benchTTL))
	if err != nil {
		return nil, err
	}
	return &leaseClient{l: l, stop: func() error { return errors.Join(c.Close(), closeAll(rs)) }}, nil
}}

// leaseClient is a client of a recipes.Locker (redislock, redlock).
type leaseClient struct {
	l    recipes.Locker
	stop func() error // closes its connections
}

func (c *leaseClient) close() error { return c.stop() }

func (c *leaseClient) lock(ctx context.Context) (func(context.Context) error, error) {
	lease, err := c.l.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return lease.Release, nil
}

// bsmImpl is github.com/bsm/redislock, retrying every retry (no retry
// when 0: the uncontended benchmark).
func bsmImpl(retry time.Duration) impl {
	name := "bsm"
	if retry > 0 {
		name = "bsm-retry" + retry.String()
	}
	return impl{name: name, open: func(addrs []string, key string, ctr *Counter) (client, error) {
		r := goRedis(addrs[0], ctr)
		opt := &bsm.Options{}
		if retry > 0 {
			opt.RetryStrategy = bsm.LinearBackoff(retry)
		}
		return &bsmClient{r: r, c: bsm.New(r), key: key, opt: opt}, nil
	}}
}

type bsmClient struct {
	r   *redis.Client
	c   *bsm.Client
	key string
	opt *bsm.Options
}

func (b *bsmClient) lock(ctx context.Context) (func(context.Context) error, error) {
	l, err := b.c.Obtain(ctx, b.key, benchTTL, b.opt)
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

func (b *bsmClient) close() error { return b.r.Close() }

// redsyncImpl is github.com/go-redsync/redsync with its defaults (expiry
// 8 s, 32 tries 50 to 250 ms apart), over one server or three. When
// LockContext gives up (ErrFailed, ErrTaken after its 32 tries) the client
// calls it again, the wait going on: gaveUp counts those calls.
func redsyncImpl(name string, gaveUp *atomic.Int64) impl {
	return impl{name: name, open: func(addrs []string, key string, ctr *Counter) (client, error) {
		rs := goRedisAll(addrs, ctr)
		pools := make([]redsyncredis.Pool, len(rs))
		for i, r := range rs {
			pools[i] = goredis.NewPool(r)
		}
		return &redsyncClient{rs: rs, m: redsync.New(pools...).NewMutex(key), gaveUp: gaveUp}, nil
	}}
}

type redsyncClient struct {
	rs     []*redis.Client
	m      *redsync.Mutex
	gaveUp *atomic.Int64
}

func (c *redsyncClient) lock(ctx context.Context) (func(context.Context) error, error) {
	for {
		err := c.m.LockContext(ctx)
		if err == nil {
			break
		}
		var redisErr *redsync.RedisError
		if ctx.Err() != nil || errors.As(err, &redisErr) || c.gaveUp == nil {
			return nil, err
		}
		c.gaveUp.Add(1) // 32 tries failed: try again, still waiting
	}
	return func(ctx context.Context) error {
		ok, err := c.m.UnlockContext(ctx)
		if err == nil && !ok {
			err = errors.New("redsync: unlock found no quorum")
		}
		return err
	}, nil
}

func (c *redsyncClient) close() error { return closeAll(c.rs) }

// rueidislockImpl is github.com/redis/rueidis/rueidislock with its
// defaults (3 keys, 2 needed, 5 s validity) but validity when not 0.
func rueidislockImpl(validity time.Duration) impl {
	name := "rueidislock"
	return impl{name: name, open: func(addrs []string, key string, ctr *Counter) (client, error) {
		return openRueidislock(addrs[0], key, validity, ctr.RueidisDial)
	}}
}

func openRueidislock(addr, name string, validity time.Duration,
	dial func(context.Context, string, *net.Dialer, *tls.Config) (net.Conn, error)) (*rueidisClient, error) {
	lk, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{InitAddress: []string{addr}, DialCtxFn: dial},
		KeyValidity:  validity,
	})
	if err != nil {
		return nil, err
	}
	return &rueidisClient{lk: lk, name: name}, nil
}

type rueidisClient struct {
	lk   rueidislock.Locker
	name string
}

func (c *rueidisClient) lock(ctx context.Context) (func(context.Context) error, error) {
	_, cancel, err := c.lk.WithContext(ctx, c.name)
	if err != nil {
		return nil, err
	}
	return func(context.Context) error { cancel(); return nil }, nil
}

func (c *rueidisClient) close() error { c.lk.Close(); return nil }
