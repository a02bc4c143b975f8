package redlock

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkrecipes/zkrecipes/compat/internal/redisguard"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
)

// holding is a holding's lock on the servers, for the lease engine
// (ttl.Server).
type holding struct {
	l  *Lock
	id string
}

// Renew extends the lock on every server, and puts it back on a quiet
// server that forgot it (nobody can have been granted it there since the
// restart); it counts only with a majority. ErrNotOurs when too many
// servers have it gone or someone else's for a majority. Its error is
// permanent (the lease ends at once) only when too many servers failed
// for good for a majority, as an acquisition gives up; else it is tried
// again until the lease's deadline: one server's permanent error must not
// end a lease that the others can still renew.
func (h holding) Renew(ctx context.Context) error {
	l := h.l
	rs := l.each(ctx, l.c.members, func(ctx context.Context, m *member) reply {
		sctx, cancel := l.bounded(ctx)
		defer cancel()
		n, err := extendScript.Run(sctx, m.r, l.keys, h.id, l.o.ttl.Milliseconds()).Int64()
		if err != nil {
			return m.fail(err)
		}
		return reply{code: n}
	})
	var ok, gone, final int
	var errs []error
	for _, r := range rs {
		switch {
		case r.err != nil:
			errs = append(errs, r.err)
			if ttl.EndsRenewal(r.err) {
				final++
			}
		case r.code == 1:
			ok++
		default:
			gone++
		}
	}
	n, q := len(rs), l.quorum()
	switch {
	case ok >= q:
		return nil
	case gone > n-q:
		return fmt.Errorf("%w: gone or another's on %d of %d servers, extended on %d, %d needed", ttl.ErrNotOurs, gone, n, ok, q)
	}
	err := redisguard.ExplainACL(fmt.Errorf("extended on %d of %d servers, %d needed: %w", ok, n, q, oneLine(errs)), l.needs())
	if final > n-q {
		// No majority is possible without the servers that cannot renew.
		return ttl.Permanent(err)
	}
	return ttl.Transient(err)
}

// Free releases the lock on every server where it is still ours. With
// ctx already ended it returns at once (the engine goes on in the
// background). Released on a majority, it succeeds, and goes on in the
// background on the servers that did not answer; otherwise an error,
// ErrNotOurs when every server answered and too few had it.
func (h holding) Free(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("not released: %w", err)
	}
	l := h.l
	rs := l.each(ctx, l.c.members, l.release(h.id))
	freed := 0
	var transient, permanent []error
	for _, r := range rs {
		switch {
		case errors.Is(r.err, ttl.ErrPermanent):
			permanent = append(permanent, r.err)
		case r.err != nil:
			transient = append(transient, r.err)
		case r.code == 1:
			freed++
		}
	}
	n, q := len(rs), l.quorum()
	switch {
	case freed >= q:
		if left := unsure(l.c.members, rs); len(left) > 0 {
			l.freeLater(ctx, h.id, left, l.expiry())
		}
		return nil
	case len(transient) > 0:
		// Not permanent, whatever the others said: it is tried again.
		err := fmt.Errorf("released on %d of %d servers, %d needed: %w", freed, n, q, oneLine(transient))
		if len(permanent) > 0 {
			err = fmt.Errorf("%w; and for good: %v", err, oneLine(permanent))
		}
		return err
	case len(permanent) > 0:
		return fmt.Errorf("released on %d of %d servers, %d needed: %w", freed, n, q, oneLine(permanent))
	}
	return fmt.Errorf("%w: it was ours on %d of %d servers, %d needed", ttl.ErrNotOurs, freed, n, q)
}
