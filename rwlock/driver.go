package rwlock

import (
	"fmt"

	"github.com/zkrecipes/zkrecipes/internal/engine"
)

// Node names: Curator's, then kazoo's (its WriteLock and ReadLock), writers
// first so that a downgraded read node sorts right behind its writer.
const (
	WriteName = "__WRIT__"
	ReadName  = "__READ__"
	kazooW    = "__lock__"
	kazooR    = "__rlock__"
)

// kinds orders the nodes of one read/write lock parent.
var kinds = []string{WriteName, kazooW, ReadName, kazooR}

// isReader: a node that only shares the lock. Anything else, including a
// node of unknown kind, counts as a writer (the conservative choice).
func isReader(c engine.Child) bool { return c.Kind == ReadName || c.Kind == kazooR }

// driver decides for a node of either half, by the node's kind: a writer
// owns the lock when it is first of all nodes and watches its predecessor;
// a reader owns it when no writer is ahead and watches only the nearest
// writer ahead. Both halves (and Participants) use it.
type driver struct {
	// writerLookahead: a writer also watches the node two ahead, a reader
	// (readerLookahead) the second nearest writer, to learn early that only
	// one is left.
	writerLookahead, readerLookahead bool
}

// Decide implements engine.Driver.
func (d driver) Decide(kids []engine.Child, ours int) (engine.Decision, error) {
	if ours < 0 || ours >= len(kids) {
		return engine.Decision{}, fmt.Errorf("rwlock: our node is not among the %d children", len(kids))
	}
	if !isReader(kids[ours]) {
		if ours == 0 {
			return engine.Decision{Owns: true}, nil
		}
		dec := engine.Decision{Watch: kids[ours-1].Name}
		// Behind the head only, and only a reader: a writer at the head may
		// downgrade, creating a read node beside itself, ahead of us.
		dec.FastHandoff = ours == 1 && isReader(kids[0])
		if ours >= 2 && d.writerLookahead {
			dec.Refresh = kids[ours-2].Name
		}
		return dec, nil
	}
	if ours > 0 && !isReader(kids[ours-1]) && kids[ours-1].Seq == kids[ours].Seq {
		// A downgraded read node, beside its writer (the engine grants it
		// at once; listings see it): it holds when its writer does.
		return d.Decide(kids, ours-1)
	}
	var writers []int
	for i := range ours {
		if !isReader(kids[i]) {
			writers = append(writers, i)
		}
	}
	if len(writers) == 0 {
		return engine.Decision{Owns: true}, nil
	}
	nearest := writers[len(writers)-1]
	// With one writer ahead, its deletion leaves none: writers created later
	// sort behind us, and a downgrade adds a reader, not a writer.
	dec := engine.Decision{Watch: kids[nearest].Name, FastHandoff: len(writers) == 1}
	if len(writers) >= 2 && d.readerLookahead {
		dec.Refresh = kids[writers[len(writers)-2]].Name
	}
	return dec, nil
}
