package redlock

import (
	"context"
	"fmt"
	"reflect"

	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/compat/internal/redisguard"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
)

// member is one of a Client's servers.
type member struct {
	r       Redis
	name    string          // its address, or "server i" when it has none
	checked redisguard.Once // its eviction settings, at the Client's first use
}

// optioned is a client that says its address (*redis.Client).
type optioned interface{ Options() *redis.Options }

// addr is r's address, or "" when it does not say.
func addr(r Redis) string {
	if o, ok := r.(optioned); ok {
		if opts := o.Options(); opts != nil {
			return opts.Addr
		}
	}
	return ""
}

// same reports whether a and b are the same client value. A value whose
// type cannot be compared is taken as different from every other.
func same(a, b Redis) bool {
	return reflect.ValueOf(a).Comparable() && a == b
}

// newMembers checks the servers New was given and names them: no nil, no
// client twice, no address twice (a server counted twice makes a
// majority of one).
func newMembers(servers []Redis) ([]*member, error) {
	ms := make([]*member, len(servers))
	for i, s := range servers {
		if ttl.IsNil(s) {
			return nil, invalid("server %d is nil", i)
		}
		ms[i] = &member{r: s, name: addr(s)}
		for j, prev := range ms[:i] {
			switch {
			case same(s, prev.r):
				return nil, invalid("servers %d and %d are the same client: Redlock needs independent servers", j, i)
			case ms[i].name != "" && ms[i].name == prev.name:
				return nil, invalid("servers %d and %d have the same address %s: Redlock needs independent servers", j, i, prev.name)
			}
		}
	}
	for i, m := range ms {
		if m.name == "" {
			m.name = fmt.Sprintf("server %d", i)
		}
	}
	return ms, nil
}

// reply is one server's answer to a script: its code and number, or err
// (named by the server, marked ttl.ErrPermanent when trying again cannot
// mend it).
type reply struct {
	code, n int64
	err     error
}

// fail names err by m and marks the permanent ones.
func (m *member) fail(err error) reply {
	return reply{err: redisguard.Permanent(fmt.Errorf("%s: %w", m.name, err))}
}

// each runs op on every server of ms at once and returns their replies in
// ms's order. op bounds each request it makes with bounded. each returns
// when all have answered or when ctx ends: a server that had not answered
// by then has ctx's error as its reply (its request goes on in the
// background, bounded by the server timeout).
func (l *Lock) each(ctx context.Context, ms []*member, op func(context.Context, *member) reply) []reply {
	type indexed struct {
		i int
		r reply
	}
	ch := make(chan indexed, len(ms)) // never blocks a late sender
	for i, m := range ms {
		go func() { ch <- indexed{i, op(ctx, m)} }()
	}
	out := make([]reply, len(ms))
	answered := make([]bool, len(ms))
	left := len(ms)
	put := func(x indexed) { out[x.i], answered[x.i], left = x.r, true, left-1 }
	for left > 0 {
		select {
		case x := <-ch:
			put(x)
		case <-ctx.Done():
			for drained := false; !drained && left > 0; { // what has already come in counts
				select {
				case x := <-ch:
					put(x)
				default:
					drained = true
				}
			}
			for i, ok := range answered {
				if !ok {
					out[i] = ms[i].fail(fmt.Errorf("no answer: %w", ctx.Err()))
				}
			}
			return out
		}
	}
	return out
}

// bounded is the context of one request to one server: ctx, bounded by
// the server timeout.
func (l *Lock) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, l.o.serverTimeout)
}
