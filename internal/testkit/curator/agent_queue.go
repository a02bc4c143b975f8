package curator

import (
	"encoding/hex"
	"strings"
	"testing"
)

// QueueKind is which of Curator's distributed queues the agent builds
// (QueueBuilder.buildQueue, buildPriorityQueue, buildDelayQueue,
// buildIdQueue).
type QueueKind string

// The kinds of Curator 5.4's DistributedQueue family.
const (
	FIFOQueue     QueueKind = "fifo"
	PriorityQueue QueueKind = "priority"
	DelayQueue    QueueKind = "delay"
	IDQueue       QueueKind = "id"
)

// StartQueueConsumer starts a consumer of a kind queue on path in the
// agent, under lockPath ("" for none: at most once), closing the one it
// ran before. QueueConsumed reads what it was given.
func (a *Agent) StartQueueConsumer(t testing.TB, kind QueueKind, path, lockPath string) {
	t.Helper()
	if lockPath == "" {
		lockPath = "-"
	}
	a.DoExpect(t, "queue-start "+string(kind)+" "+path+" "+lockPath, "ok")
}

// QueueConsumed returns the items the agent's consumer was given since
// the last call, in order of arrival.
func (a *Agent) QueueConsumed(t testing.TB) [][]byte {
	t.Helper()
	return parseList(t, a, "queue-consumed", "consumed", unhexItem)
}

// CloseQueueConsumer closes the agent's consumer.
func (a *Agent) CloseQueueConsumer(t testing.TB) {
	t.Helper()
	a.DoExpect(t, "queue-close", "closed")
}

// QueuePut puts items on the kind queue at path in one node, by a
// producer-only Curator queue: put for one item, putMulti for several
// (an ID queue takes one). arg is the priority (PriorityQueue), the due
// time in epoch milliseconds (DelayQueue) or the id (IDQueue), unused for
// FIFOQueue.
func (a *Agent) QueuePut(t testing.TB, kind QueueKind, path, arg string, items ...[]byte) {
	t.Helper()
	if arg == "" {
		arg = "-"
	}
	cmd := []string{"queue-put", string(kind), path, arg}
	for _, it := range items {
		cmd = append(cmd, hexItem(it))
	}
	a.DoExpect(t, strings.Join(cmd, " "), "put")
}

// SimpleOffer offers data on the SimpleDistributedQueue at path.
func (a *Agent) SimpleOffer(t testing.TB, path string, data []byte) {
	t.Helper()
	a.DoExpect(t, "sq-offer "+path+" "+hexItem(data), "offered")
}

// SimplePoll polls the SimpleDistributedQueue at path; false when empty.
func (a *Agent) SimplePoll(t testing.TB, path string) ([]byte, bool) {
	t.Helper()
	cmd := "sq-poll " + path
	r := a.Do(t, cmd)
	if r == "empty" {
		return nil, false
	}
	h, ok := strings.CutPrefix(r, "item ")
	if !ok {
		t.Fatalf("%s: reply to %q is %q, want item HEX or empty\n%s", a.name, cmd, r, a.report())
	}
	b, err := unhexItem(h)
	if err != nil {
		t.Fatalf("%s: %s: %v", a.name, cmd, err)
	}
	return b, true
}

// hexItem is an item as the agent's commands carry it: hex, "-" for none.
func hexItem(b []byte) string {
	if len(b) == 0 {
		return "-"
	}
	return hex.EncodeToString(b)
}

func unhexItem(s string) ([]byte, error) {
	if s == "-" {
		return []byte{}, nil
	}
	return hex.DecodeString(s)
}
