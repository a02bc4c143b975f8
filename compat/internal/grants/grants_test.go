package grants

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestParse(t *testing.T) {
	id, g, ok := Parse("a-b 17 42")
	assert.True(t, ok)
	assert.Equal(t, "a-b", id)
	assert.Equal(t, Grant{Token: 17, Stamp: 42}, g)
	for _, bad := range []string{"", "id", "id 17", "id x 42", "id 17 x", "id 17 42 more"} {
		_, _, ok := Parse(bad)
		assert.False(t, ok, "%q", bad)
	}
}

// A grant is held from the send time of the attempt of its stamp while no
// renewal is due yet; older, or stamped in the future, it is confirmed by
// an attempt first.
func TestFresh(t *testing.T) {
	valid, every := 3*time.Second, time.Second
	now := time.Now()
	assert.True(t, Fresh(Grant{Stamp: Stamp(now)}, valid, every))
	assert.True(t, Fresh(Grant{Stamp: Stamp(now.Add(-every / 2))}, valid, every))
	assert.False(t, Fresh(Grant{Stamp: Stamp(now.Add(-every))}, valid, every), "a renewal is due")
	assert.False(t, Fresh(Grant{Stamp: Stamp(now.Add(time.Hour))}, valid, every), "not an attempt of ours")
}

// A grant reaches the waiter it names, once it watches, and no other; a
// closed board gives its watchers no grants and is ready at once.
func TestBoard(t *testing.T) {
	b := NewBoard()
	w := b.Watch("w")
	assert.False(t, w.Confirmed)
	other := b.Watch("other")
	assert.Equal(t, "w", b.Deliver("w 5 6"))
	assert.Equal(t, "", b.Deliver("garbage"))
	assert.Equal(t, Grant{Token: 5, Stamp: 6}, <-w.Grants)
	assert.Empty(t, other.Grants)
	b.Confirm()
	<-w.Ready
	assert.True(t, b.Watch("late").Confirmed)
	w.Stop()
	b.Deliver("w 7 8")
	assert.Empty(t, w.Grants, "stopped")
	assert.True(t, b.Close())
	assert.False(t, b.Close())
	closed := b.Watch("after")
	<-closed.Ready
	b.Deliver("after 1 2")
	assert.Empty(t, closed.Grants)
}
