package discovery

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An instance reported threshold times within the window is down until
// the window (from its first report) ends, then counted afresh.
func TestDownList(t *testing.T) {
	now := time.Unix(1000, 0)
	d := newDownList(30*time.Second, 2)
	d.now = func() time.Time { return now }
	a, b := Instance{ID: "a", Node: "a"}, Instance{ID: "b", Node: "b"}

	d.note(a)
	require.True(t, d.up(a), "one error of two")
	now = now.Add(10 * time.Second)
	d.note(a)
	require.False(t, d.up(a), "two errors within the window")
	require.True(t, d.up(b))
	now = now.Add(19 * time.Second)
	require.False(t, d.up(a), "29s after the first error")
	now = now.Add(time.Second)
	require.True(t, d.up(a), "the window ended")
	d.note(a)
	require.True(t, d.up(a), "counted afresh")
	require.Len(t, d.errors, 1)

	// Errors further apart than the window never add up.
	now = now.Add(31 * time.Second)
	d.note(a)
	require.True(t, d.up(a))
}

// fixed is a Source of fixed instances.
type fixed []Instance

func (fixed) Initialized(context.Context) error { return nil }
func (f fixed) Instances() []Instance           { return f }

func TestProvider(t *testing.T) {
	ctx := context.Background()
	off := false
	src := fixed{{ID: "a", Node: "a"}, {ID: "b", Node: "b"}, {ID: "c", Node: "c"}, {ID: "d", Node: "d", Enabled: &off}}
	p, err := NewProvider(src, WithFilter(func(in Instance) bool { return in.ID != "c" }), WithDownPolicy(time.Hour, 1))
	require.NoError(t, err)
	var order []string
	for range 4 {
		in, err := p.Instance(ctx)
		require.NoError(t, err)
		order = append(order, in.ID)
	}
	require.Equal(t, []string{"a", "b", "a", "b"}, order, "round robin over the filtered, enabled instances")

	p.NoteError(Instance{ID: "a", Node: "a"})
	all, err := p.All(ctx)
	require.NoError(t, err)
	require.Equal(t, []Instance{src[1]}, all, "a is down")
	p.NoteError(src[1])
	_, err = p.Instance(ctx)
	require.ErrorIs(t, err, ErrNoInstance)

	empty, err := NewProvider(fixed{})
	require.NoError(t, err)
	_, err = empty.Instance(ctx)
	require.ErrorIs(t, err, ErrNoInstance)
}

func TestStrategies(t *testing.T) {
	three := []Instance{{Node: "a"}, {Node: "b"}, {Node: "c"}}
	s := Sticky(RoundRobin())
	require.Equal(t, "a", s.Pick(three).Node)
	require.Equal(t, "a", s.Pick(three).Node, "sticks")
	require.Equal(t, "a", s.Pick([]Instance{{Node: "c"}, {Node: "a", ID: "new data"}}).Node)
	// a gone: the master picks again, its turn at 1 of [b c].
	require.Equal(t, "c", s.Pick(three[1:]).Node)

	seen := map[string]bool{}
	r := Random()
	for i := 0; i < 1000 && len(seen) < 3; i++ {
		seen[r.Pick(three).Node] = true
	}
	require.Len(t, seen, 3, "random reaches every instance")
}
