package engine

import (
	"errors"
	"sync"

	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// revocation tells a revocable holding that someone asked for its lock.
type revocation struct {
	once sync.Once
	ch   chan struct{}
}

func newRevocation() *revocation { return &revocation{ch: make(chan struct{})} }

func (r *revocation) fire() { r.once.Do(func() { close(r.ch) }) }

// watchRevocation watches the holding's node for Curator's revoke message
// until the holding ends: a goroutine, one request per change of the
// node's data (one when nothing happens).
func (h *holding) watchRevocation() {
	h.revoked = newRevocation()
	go func() {
		ctx := h.rh.Context()
		for ctx.Err() == nil {
			data, ev, err := h.conn.GetW(ctx, h.node)
			switch {
			case errors.Is(err, session.ErrNoNode):
				return // released, or lost
			case err != nil:
				if ctx.Err() == nil {
					h.conn.Logger().Debug("revocation watch failed", "node", h.node, "err", err)
				}
				return // the holding ends with its session
			case string(data) == znode.RevokeMessage:
				h.rh.Revoked()
				h.revoked.fire()
				return
			}
			select {
			case <-ev:
			case <-ctx.Done():
			}
		}
	}()
}
