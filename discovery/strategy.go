package discovery

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// Strategy picks one instance among those a Provider offers (Curator's
// ProviderStrategy). Pick is called with at least one instance and must
// be safe for concurrent use.
type Strategy interface {
	Pick(instances []Instance) Instance
}

// RoundRobin returns Curator's RoundRobinStrategy: the instances in turn,
// by a counter shared by every call (so a list that changes shifts the
// turn, as in Curator).
func RoundRobin() Strategy { return &roundRobin{} }

type roundRobin struct{ next atomic.Uint64 }

func (r *roundRobin) Pick(instances []Instance) Instance {
	return instances[(r.next.Add(1)-1)%uint64(len(instances))]
}

// Random returns Curator's RandomStrategy: an instance chosen uniformly.
func Random() Strategy { return random{} }

type random struct{}

func (random) Pick(instances []Instance) Instance { return instances[rand.IntN(len(instances))] }

// Sticky returns Curator's StickyStrategy: the instance master picked
// last, as long as it is still offered (told by its key: Node, else ID;
// the offered version is returned, so an update of its data is seen), then
// a new pick of master. A nil master is refused by WithStrategy.
func Sticky(master Strategy) Strategy { return &sticky{master: master} }

type sticky struct {
	master Strategy
	mu     sync.Mutex
	ours   string // key of the instance stuck to; "" for none
}

func (s *sticky) Pick(instances []Instance) Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ours != "" {
		for _, in := range instances {
			if instanceKey(in) == s.ours {
				return in
			}
		}
	}
	in := s.master.Pick(instances)
	s.ours = instanceKey(in)
	return in
}

// instanceKey names an instance among its service's: its node, or its ID
// for one not read from ZooKeeper.
func instanceKey(in Instance) string {
	if in.Node != "" {
		return in.Node
	}
	return in.ID
}

// checkStrategy refuses a nil strategy, and a Sticky one whose master is
// nil (it would panic at its first pick).
func checkStrategy(s Strategy) error {
	for s != nil {
		st, ok := s.(*sticky)
		if !ok {
			return nil
		}
		s = st.master
	}
	return fmt.Errorf("%w: nil strategy", ErrInvalidArgument)
}
