package engine

import (
	"context"
	"errors"
	"time"

	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// Participants lists the nodes under path in queue order, as Curator's
// getParticipantNodes, marking the holders as driver decides. A lock path
// that does not exist has no participants. The listing gives names only:
// each node's data, owner and creation time come from the read of it that
// Curator makes too (one request per node, no more).
func Participants(ctx context.Context, c Conn, path string, driver Driver, kinds ...string) ([]znode.Participant, error) {
	names, err := c.Children(ctx, path)
	if errors.Is(err, session.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	kids := SortChildren(names, kinds...)
	out := make([]znode.Participant, 0, len(kids))
	for i, k := range kids {
		node := session.JoinPath(path, k.Name)
		data, st, err := c.Get(ctx, node)
		if errors.Is(err, session.ErrNoNode) {
			continue // left meanwhile
		}
		if err != nil {
			return nil, err
		}
		d, err := driver.Decide(kids, i)
		if err != nil {
			return nil, err
		}
		out = append(out, znode.Participant{Name: k.Name, Path: node, Kind: k.Kind, Seq: k.Seq, SessionID: st.EphemeralOwner,
			Data: data, Holder: d.Owns, Created: time.UnixMilli(st.Ctime)})
	}
	return out, nil
}
