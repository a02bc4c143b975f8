package session

import (
	"sync"
	"time"
)

// go-zookeeper v1.0.4 has a data race on reconnection (go-zookeeper/zk#35,
// samuel/go-zookeeper#260, unfixed): its receive loop starts before
// sendSetWatches, which reads the last zxid seen while the receive loop
// writes it on every reply. The race detector reports it when a request
// queued during the disconnection is answered while the watches are being
// re-registered. The tracked connection closes it without a fork: after
// the connect response of a reconnection, it holds back the next bytes the
// receive loop reads until sendSetWatches has finished reading, which the
// setWatches request it sends proves (its goroutine is started after the
// read). With no watches to re-register there is no such request, and no
// read either; the hold then ends at setWatchesWait.

// setWatchesWait bounds the hold of a reconnection's first replies when no
// setWatches request comes (no watches were set).
const setWatchesWait = 100 * time.Millisecond

// watchGate is one reconnection's hold.
type watchGate struct {
	open chan struct{}
	once sync.Once
}

func newWatchGate() *watchGate { return &watchGate{open: make(chan struct{})} }

// release ends the hold: the setWatches request was sent.
func (g *watchGate) release() { g.once.Do(func() { close(g.open) }) }

// wait holds the reader until the hold ends.
func (g *watchGate) wait() {
	t := time.NewTimer(setWatchesWait)
	defer t.Stop()
	select {
	case <-g.open:
	case <-t.C:
	}
}
