package redlock

import (
	"context"
	"errors"
	"time"

	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
)

// Pauses of a release that goes on in the background: the first, doubled
// up to the cap.
const (
	freeRetry    = 20 * time.Millisecond
	freeRetryCap = time.Second
)

// release is the op that deletes the key on a server if id still holds it:
// code 1, else 0.
func (l *Lock) release(id string) func(context.Context, *member) reply {
	return func(ctx context.Context, m *member) reply {
		sctx, cancel := l.bounded(ctx)
		defer cancel()
		n, err := releaseScript.Run(sctx, m.r, l.keys[:1], id).Int64()
		if err != nil {
			return m.fail(err)
		}
		return reply{code: n}
	}
}

// unsure lists the servers of ms whose reply in rs leaves it unknown
// whether the key is still there: a transient error, or no answer.
func unsure(ms []*member, rs []reply) []*member {
	var out []*member
	for i, r := range rs {
		if r.err != nil && !errors.Is(r.err, ttl.ErrPermanent) {
			out = append(out, ms[i])
		}
	}
	return out
}

// expiry bounds when a key set or extended by a request sent now expires:
// the server may still receive it up to the server timeout from now.
func (l *Lock) expiry() time.Time { return time.Now().Add(l.o.serverTimeout + l.o.ttl) }

// letGo releases what the failed attempt id may have taken (its replies
// rs): on the servers that gave it or did not answer, before it returns,
// on a context that ctx's end cannot cut short, bounded by giveUpTimeout
// (each server by the server timeout). What is left undone goes on in the
// background.
func (l *Lock) letGo(ctx context.Context, id string, rs []reply) {
	until := l.expiry()
	var ms []*member
	for i, r := range rs {
		if (r.err == nil && r.code == codeTaken) || (r.err != nil && !errors.Is(r.err, ttl.ErrPermanent)) {
			ms = append(ms, l.c.members[i])
		}
	}
	if len(ms) == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), giveUpTimeout)
	ms = unsure(ms, l.each(rctx, ms, l.release(id)))
	cancel()
	if len(ms) > 0 {
		l.freeLater(ctx, id, ms, until)
	}
}

// giveUpTimeout bounds the release of what a failed attempt took, before
// Acquire returns: a server that does not answer in time is left to the
// background.
const giveUpTimeout = 2 * time.Second

// freeLater goes on releasing id on the servers ms, in the background (a
// clean-up of the Client's, which its Close waits for), trying again those that
// fail transiently, until each has answered, or until until (when the keys
// would have expired anyway). base supplies the context values.
func (l *Lock) freeLater(base context.Context, id string, ms []*member, until time.Time) {
	l.c.bg.Go(base, func(ctx context.Context) {
		for pause := freeRetry; ; pause = min(2*pause, freeRetryCap) {
			left := time.Until(until)
			if left <= 0 {
				return
			}
			cctx, cancel := context.WithTimeout(ctx, left)
			ms = unsure(ms, l.each(cctx, ms, l.release(id)))
			cancel()
			if len(ms) == 0 || !ttl.Sleep(ctx, min(pause, time.Until(until))) {
				return
			}
		}
	})
}
