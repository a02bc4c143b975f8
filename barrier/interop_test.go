package barrier_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/barrier"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
)

// Interoperability with Apache Curator 5.4, run in a JVM by package
// curator, on the same paths of the shared server. The agent has no
// namespace, so these tests connect without one.

// javaMembers is how many Curator members the agent runs (each a
// DistributedDoubleBarrier on a thread of its own, on the agent's one
// session), goMembers how many Go members (each on a session of its own).
const javaMembers, goMembers = 2, 2

// Java and Go members of one double barrier, either side first: no member
// is through Enter until the last one's node exists, every one is once it
// does; no member is through Leave while one is still in, every one is
// once the last leaves; nothing is left under the path.
func TestInteropDouble(t *testing.T) {
	servers := sharedServers(t)
	a := curator.Start(t, servers, curator.WithName("curator members"))
	observer := zktest.Connect(t, servers)
	for _, javaFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("java first %v", javaFirst), func(t *testing.T) {
			p := pathOf(t)
			const all = javaMembers + goMembers
			var java []string
			for i := range javaMembers {
				name := fmt.Sprintf("j%d", i)
				a.DoubleBarrier(t, name, p, all)
				java = append(java, name)
			}
			var gods []*barrier.Double
			for range goMembers {
				gods = append(gods, newDouble(t, zktest.Connect(t, servers), p, all))
			}
			ctx := ctxT(t)

			// Every member but the last of the second side enters.
			var goEnter []result
			enterGo := func(n int) {
				for _, d := range gods[len(goEnter) : len(goEnter)+n] {
					goEnter = append(goEnter, enter(ctx, d))
				}
			}
			if javaFirst {
				for _, name := range java {
					a.Enter(t, name)
				}
				enterGo(goMembers - 1)
			} else {
				enterGo(goMembers)
				for _, name := range java[:javaMembers-1] {
					a.Enter(t, name)
				}
			}
			zktest.WaitForNodes(t, observer, p, all-1)
			for i, r := range goEnter {
				r.pending(t, fmt.Sprint("Enter of Go member ", i))
			}
			for _, name := range java {
				assert.Contains(t, []curator.BarrierState{curator.BarrierIdle, curator.BarrierWaiting},
					a.BarrierState(t, name), "Curator member %s through early", name)
			}
			// The last one.
			if javaFirst {
				enterGo(1)
			} else {
				a.Enter(t, java[javaMembers-1])
			}
			for i, r := range goEnter {
				require.NoError(t, r.await(t, fmt.Sprint("Enter of Go member ", i)))
			}
			for _, name := range java {
				require.Equal(t, curator.BarrierThrough, a.AwaitBarrier(t, name, waitLimit), "Curator member %s", name)
			}
			require.Len(t, zktest.Children(t, observer, p), all+1, "the members and ready")

			// Leave: every member but one of the second side, which keeps
			// the others waiting whether or not its node is the lowest.
			var goLeave []result
			javaLeaving := java[:1]
			if javaFirst {
				javaLeaving = java
				goLeave = append(goLeave, leave(ctx, gods[0]))
			} else {
				for _, d := range gods {
					goLeave = append(goLeave, leave(ctx, d))
				}
			}
			for _, name := range javaLeaving {
				a.Leave(t, name)
			}
			// Every one leaving has deleted its node, or is the lowest and
			// keeps it: at most two members and ready are left.
			require.Eventually(t, func() bool { return len(zktest.Children(t, observer, p)) <= 3 },
				waitLimit, 20*time.Millisecond, "members leaving did not delete their nodes: %v", zktest.Children(t, observer, p))
			for i, r := range goLeave {
				r.pending(t, fmt.Sprint("Leave of Go member ", i))
			}
			for _, name := range javaLeaving {
				assert.Equal(t, curator.BarrierWaiting, a.BarrierState(t, name), "Curator member %s through early", name)
			}
			if javaFirst {
				goLeave = append(goLeave, leave(ctx, gods[1]))
			} else {
				a.Leave(t, java[1])
			}
			for i, r := range goLeave {
				require.NoError(t, r.await(t, fmt.Sprint("Leave of Go member ", i)))
			}
			for _, name := range java {
				require.Equal(t, curator.BarrierThrough, a.AwaitBarrier(t, name, waitLimit), "Curator member %s", name)
			}
			assert.Empty(t, zktest.Children(t, observer, p), "nodes left under the barrier")
		})
	}
}

// A Go barrier and Curator's DistributedBarrier on one node, both ways:
// each side's waiters wait while the other side's barrier is set, and
// are through once it removes it.
func TestInteropBarrier(t *testing.T) {
	servers := sharedServers(t)
	a := curator.Start(t, servers, curator.WithName("curator barrier"))
	for _, javaSets := range []bool{true, false} {
		t.Run(fmt.Sprintf("java sets %v", javaSets), func(t *testing.T) {
			p := pathOf(t)
			a.Barrier(t, "b", p)
			b, err := barrier.NewBarrier(zktest.Connect(t, servers), p)
			require.NoError(t, err)
			if javaSets {
				a.SetBarrier(t, "b")
			} else {
				require.NoError(t, b.SetBarrier(ctxT(t)))
				a.Barrier(t, "w", p)
			}
			var goWait result
			if javaSets {
				goWait = async(func() error { return b.WaitOnBarrier(ctxT(t)) })
			} else {
				a.WaitOnBarrier(t, "w")
			}
			watched(t, servers[0], p, 1)
			if javaSets {
				goWait.pending(t, "WaitOnBarrier")
				a.RemoveBarrier(t, "b")
				require.NoError(t, goWait.await(t, "WaitOnBarrier"))
			} else {
				assert.Equal(t, curator.BarrierWaiting, a.BarrierState(t, "w"))
				require.NoError(t, b.RemoveBarrier(context.WithoutCancel(ctxT(t))))
				require.Equal(t, curator.BarrierThrough, a.AwaitBarrier(t, "w", waitLimit))
			}
		})
	}
}
