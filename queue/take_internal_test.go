package queue

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

// madeAfterListing is a client whose first listing that finds no node
// runs made before it returns: the tree changes between that listing and
// the request that follows it, on the same goroutine, with no sleep.
type madeAfterListing struct {
	*session.Client
	made func(ctx context.Context) error // nil once it has run
}

func (m *madeAfterListing) ChildrenW(ctx context.Context, path string) ([]string, *session.Stat, <-chan session.Event, error) {
	kids, st, ch, err := m.Client.ChildrenW(ctx, path)
	if errors.Is(err, session.ErrNoNode) && m.made != nil {
		made := m.made
		m.made = nil
		if merr := made(ctx); merr != nil {
			return nil, nil, nil, fmt.Errorf("test: change the tree after the listing: %w", merr)
		}
	}
	return kids, st, ch, err
}

// Take on a queue path that does not exist waits for its creation with an
// exists watch. A path made between the listing that found no node and
// that exists call gets a watch that fires on a change of its data or its
// deletion, never on a child: an item put there must still reach Take
// (before the fix it waited until its context ended).
func TestTakeSeesQueueMadeAfterListing(t *testing.T) {
	servers := zktest.Shared(t)
	ctx := zktest.Ctx(t)
	c := zktest.Connect(t, servers)
	p := zktest.Path(t, "queue", "take")
	producer, err := NewSimple(c, p)
	require.NoError(t, err)
	conn := &madeAfterListing{Client: c, made: func(ctx context.Context) error {
		// The offer makes the queue path and its first item.
		_, err := producer.Offer(ctx, []byte("item"))
		return err
	}}
	q := &SimpleQueue{c: conn, path: p}

	data, err := q.Take(ctx)
	require.NoError(t, err)
	assert.Equal(t, "item", string(data))
	assert.Nil(t, conn.made, "the listing never found the queue path missing")
}
