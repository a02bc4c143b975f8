package integration

import (
	"sync/atomic"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// holdToxicType is the toxiproxy toxic type of Proxy.Blackhole.
const holdToxicType = "zkr_hold"

// holdFlushTimeout bounds the delivery of each held chunk when a blackhole is
// lifted; a connection whose peer stopped reading meanwhile is closed.
const holdFlushTimeout = 250 * time.Millisecond

func init() {
	toxics.Register(holdToxicType, new(holdToxic))
}

// holdToxic models a network partition on one direction of a connection: it
// lets no byte (and no end of stream) through, but keeps what it receives,
// the way TCP keeps unacknowledged data. When the toxic is removed, the held
// bytes are delivered in order, then the end of stream if one came; when
// discard is set first, the connection is closed instead.
//
// Unlike toxiproxy's timeout toxic it neither drops bytes (which would
// corrupt a framed protocol when traffic resumes) nor passes the close of
// one side to the other while the partition lasts.
type holdToxic struct {
	discard atomic.Bool
}

// holdState is the per-connection state of a holdToxic.
type holdState struct {
	held []*stream.StreamChunk
	eof  bool
}

// NewState implements toxics.StatefulToxic.
func (*holdToxic) NewState() any { return new(holdState) }

// Pipe implements toxics.Toxic: it keeps every chunk until interrupted.
func (*holdToxic) Pipe(stub *toxics.ToxicStub) {
	state := stub.State.(*holdState)
	input := stub.Input
	if state.eof {
		input = nil
	}
	for {
		select {
		case <-stub.Interrupt:
			return
		case c, ok := <-input:
			if c == nil || !ok {
				state.eof = true
				input = nil // closed: wait for the interrupt only
				continue
			}
			state.held = append(state.held, c)
		}
	}
}

// Cleanup implements toxics.CleanupToxic: it runs when the toxic is removed,
// after Pipe returned, and delivers or discards what was held. A stub it
// closes is drained until its input ends, so the goroutines feeding it
// (toxiproxy's reader of the connection) never block and all exit once the
// connection is closed.
func (t *holdToxic) Cleanup(stub *toxics.ToxicStub) {
	state := stub.State.(*holdState)
	held := state.held
	state.held = nil
	if !t.discard.Load() {
		for len(held) > 0 && stub.WriteOutput(held[0], holdFlushTimeout) == nil {
			held = held[1:]
		}
		if len(held) == 0 { // all delivered
			if state.eof {
				stub.Close()
			}
			return // toxiproxy now passes the stream through
		}
	}
	stub.Close() // discarded, or the receiver went away: end the connection
	if !state.eof {
		go func(in <-chan *stream.StreamChunk) {
			for range in {
			}
		}(stub.Input)
	}
}
