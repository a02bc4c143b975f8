package curator_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
)

// testValues runs the shared-value and atomic commands, Curator against
// Curator: each agent sees the other's writes.
func testValues(t *testing.T, servers []string) {
	a := curator.Start(t, servers, curator.WithName("a"))
	b := curator.Start(t, servers, curator.WithName("b"))

	t.Run("AtomicLong", func(t *testing.T) {
		a.DoExpect(t, "atomic-get", "error IllegalStateException: no atomic long: send atomic-long PATH RETRIES [LOCKPATH] first")
		a.DoExpect(t, "atomic-long /agent/atomic", "error IllegalArgumentException: atomic-long takes a path, the retries and optionally a lock path")
		a.DoExpect(t, "atomic-long /agent/atomic 3", "ok")
		b.DoExpect(t, "atomic-long /agent/atomic 0 /agent/atomic-lock", "ok")
		a.DoExpect(t, "atomic-get", "long 0") // absent reads as 0
		a.DoExpect(t, "atomic-inc 3", "incremented 3 0")
		b.DoExpect(t, "atomic-inc 2", "incremented 2 0")
		a.DoExpect(t, "atomic-get", "long 5")
		b.DoExpect(t, "atomic-cas 4 9", "not-applied 5")
		b.DoExpect(t, "atomic-cas 5 9", "applied 5")
		a.DoExpect(t, "atomic-get", "long 9")
	})

	t.Run("SharedValue", func(t *testing.T) {
		a.DoExpect(t, "sharedvalue-get", "error IllegalStateException: no shared value: send sharedvalue PATH HEX first")
		a.DoExpect(t, "sharedvalue /agent/value 6869", "ok") // "hi"
		b.DoExpect(t, "sharedvalue /agent/value 00", "ok")   // it exists: 00 is only a seed
		b.DoExpect(t, "sharedvalue-get", "value 6869 0")
		b.DoExpect(t, "sharedvalue-set 6f6b", "ok")
		waitReply(t, a, "sharedvalue-get", "value 6f6b 1")
		waitReply(t, a, "sharedvalue-seen", "seen 6f6b") // Curator tells its listeners after it updates the value
		a.DoExpect(t, "sharedvalue-tryset -", "true")
		waitReply(t, b, "sharedvalue-get", "value - 2")
	})
}
