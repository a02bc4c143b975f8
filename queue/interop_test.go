package queue_test

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/queue"
)

// Interoperability with Apache Curator 5.4, run in a JVM by package
// curator, on the shared server: Curator producers under Go consumers and
// Go producers under Curator's consumers, for each kind, with a lock
// path; both together on one queue; and SimpleDistributedQueue both ways.

// curatorKind is the agent's name of a kind.
var curatorKind = map[queue.Kind]curator.QueueKind{
	queue.FIFO:     curator.FIFOQueue,
	queue.Priority: curator.PriorityQueue,
	queue.Delay:    curator.DelayQueue,
	queue.ID:       curator.IDQueue,
}

// javaProducer puts with Curator's producers, one node per call.
type javaProducer struct {
	a    *curator.Agent
	path string
}

func (p javaProducer) put(t testing.TB, kind queue.Kind, arg string, items ...string) {
	t.Helper()
	var bs [][]byte
	for _, it := range items {
		bs = append(bs, []byte(it))
	}
	if kind == queue.ID && len(bs) > 1 {
		t.Fatal("Curator's id queue puts one item at a time")
	}
	p.a.QueuePut(t, curatorKind[kind], p.path, arg, bs...)
}

func TestInteropCuratorProducer(t *testing.T) {
	servers := zktest.Shared(t)
	a := curator.Start(t, servers, curator.WithName("curator producer"))
	c := zktest.Connect(t, servers)
	for _, tc := range orderCases() {
		t.Run(tc.kind.String(), func(t *testing.T) {
			path := root(t)
			q := newQueue(t, c, path, queue.WithKind(tc.kind), queue.WithLockPath(path+"-locks"))
			tc.put(t, javaProducer{a, path})
			cons := consume(t, q, nil)
			assert.Equal(t, tc.want, cons.await(t, len(tc.want)))
			zktest.WaitForNodes(t, c, path, 0)
			cons.stop(t) // it deletes a lock node after its item: wait for it
			assert.Empty(t, children(t, c, path+"-locks"))
			assert.Len(t, cons.got(), len(tc.want), "an item delivered twice")
		})
	}
}

func TestInteropCuratorConsumer(t *testing.T) {
	servers := zktest.Shared(t)
	a := curator.Start(t, servers, curator.WithName("curator consumer"))
	c := zktest.Connect(t, servers)
	for _, tc := range orderCases() {
		t.Run(tc.kind.String(), func(t *testing.T) {
			path := root(t)
			q := newQueue(t, c, path, queue.WithKind(tc.kind), queue.WithLockPath(path+"-locks"))
			tc.put(t, goProducer{q})
			a.StartQueueConsumer(t, curatorKind[tc.kind], path, path+"-locks")
			defer a.CloseQueueConsumer(t)
			got := awaitItems(t, len(tc.want), func() []string { return strs(a.QueueConsumed(t)) })
			assert.Equal(t, tc.want, got)
			zktest.WaitForNodes(t, c, path, 0)
			// Curator deletes a lock node after its item.
			zktest.WaitForNodes(t, c, path+"-locks", 0)
		})
	}
}

// Curator and Go producers and consumers on one queue with a lock path:
// every item is delivered exactly once, to one side or the other.
func TestInteropMixed(t *testing.T) {
	servers := zktest.Shared(t)
	a := curator.Start(t, servers, curator.WithName("curator both"))
	c := zktest.Connect(t, servers)
	path := root(t)
	q := newQueue(t, c, path, queue.WithLockPath(path+"-locks"))
	a.StartQueueConsumer(t, curator.FIFOQueue, path, path+"-locks")
	defer a.CloseQueueConsumer(t)
	cons := consume(t, q, nil)
	const n = 40
	var want []string
	for i := range n {
		s := strconv.Itoa(i)
		want = append(want, s)
		if i%2 == 0 {
			javaProducer{a, path}.put(t, queue.FIFO, "", s)
		} else {
			goProducer{q}.put(t, queue.FIFO, "", s)
		}
	}
	// Both record an item before they delete its node.
	zktest.WaitForNodes(t, c, path, 0)
	cons.stop(t)
	java := strs(a.QueueConsumed(t))
	all := append(append([]string(nil), java...), cons.got()...)
	slices.Sort(all)
	slices.Sort(want)
	assert.Equal(t, want, all, "every item once")
	zktest.WaitForNodes(t, c, path+"-locks", 0)
	t.Logf("Curator took %d, Go %d", len(java), len(cons.got()))
}

func TestInteropSimpleQueue(t *testing.T) {
	servers := zktest.Shared(t)
	a := curator.Start(t, servers, curator.WithName("curator simple"))
	c := zktest.Connect(t, servers)
	path := root(t)
	q, err := queue.NewSimple(c, path)
	require.NoError(t, err)
	for i := range 3 {
		a.SimpleOffer(t, path, []byte(fmt.Sprint("java", i)))
	}
	for i := range 3 {
		got, err := q.Poll(ctxT(t))
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprint("java", i), string(got))
	}
	for i := range 3 {
		_, err := q.Offer(ctxT(t), []byte(fmt.Sprint("go", i)))
		require.NoError(t, err)
	}
	for i := range 3 {
		got, ok := a.SimplePoll(t, path)
		require.True(t, ok)
		assert.Equal(t, fmt.Sprint("go", i), string(got))
	}
	_, ok := a.SimplePoll(t, path)
	assert.False(t, ok)
}

func strs(bs [][]byte) []string {
	out := make([]string, 0, len(bs))
	for _, b := range bs {
		out = append(out, string(b))
	}
	return out
}
