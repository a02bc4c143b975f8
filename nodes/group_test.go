package nodes_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/session"
)

// Two members see each other with their data, a change of data, and one
// leaving.
func TestGroupMember(t *testing.T) {
	c1, c2 := connect(t, sharedServers(t)), connect(t, sharedServers(t))
	group := root(t)
	a, err := nodes.NewGroupMember(c1, group, "a", []byte("1"))
	require.NoError(t, err)
	b, err := nodes.NewGroupMember(c2, group, "b", []byte("2"))
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Close(ctxT(t))) }()
	awaitMembers(t, a, map[string]string{"a": "1", "b": "2"})
	awaitMembers(t, b, map[string]string{"a": "1", "b": "2"})
	require.NoError(t, b.SetThisData(ctxT(t), []byte("3")))
	awaitMembers(t, a, map[string]string{"a": "1", "b": "3"})
	require.NoError(t, b.Close(ctxT(t)))
	awaitMembers(t, a, map[string]string{"a": "1"})
	_, st, err := c1.Get(ctxT(t), group+"/a")
	require.NoError(t, err)
	require.Equal(t, c1.CurrentSession().ID(), st.EphemeralOwner)
	require.Equal(t, session.Ephemeral.IsEphemeral(), st.EphemeralOwner != 0)
}

func awaitMembers(t *testing.T, g *nodes.GroupMember, want map[string]string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		got := map[string]string{}
		for id, d := range g.Members() {
			got[id] = string(d)
		}
		if len(got) == len(want) {
			same := true
			for k, v := range want {
				same = same && got[k] == v
			}
			if same {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("member %s sees %v, want %v", g.ID(), got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
