package recipes

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/session"
)

// Participant is one node in a lock's queue.
type Participant struct {
	Node      string // node name
	Kind      string // lock name of the node ("lock-", "__READ__", ...)
	Seq       int64
	SessionID int64  // ephemeral owner
	Data      []byte // what the participant stored (Curator: its id)
	Holder    bool   // the node holds the lock
}

// Participants lists the nodes under path in queue order, as Curator's
// getParticipantNodes, marking the holders as driver decides. A lock path
// that does not exist has no participants.
func Participants(ctx context.Context, c *session.Client, path string, driver Driver, kinds ...string) ([]Participant, error) {
	names, _, err := c.Children(ctx, path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	kids := SortChildren(names, kinds...)
	out := make([]Participant, 0, len(kids))
	for i, k := range kids {
		data, st, err := c.Get(ctx, session.JoinPath(path, k.Name))
		if errors.Is(err, zk.ErrNoNode) {
			continue // left meanwhile
		}
		if err != nil {
			return nil, err
		}
		d, err := driver.Decide(kids, i)
		if err != nil {
			return nil, err
		}
		out = append(out, Participant{Node: k.Name, Kind: k.Kind, Seq: k.Seq, SessionID: st.EphemeralOwner,
			Data: data, Holder: d.Owns})
	}
	return out, nil
}

// Participants lists this lock's queue; see Participants.
func (l *QueueLock) Participants(ctx context.Context) ([]Participant, error) {
	return Participants(ctx, l.q.Client, l.q.Path, l.q.Driver, l.q.Kinds...)
}
