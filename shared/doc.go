// Package shared is Curator's recipes.shared for Go: SharedValue (Value,
// any bytes) and SharedCount (Count, a 32-bit integer) kept in one
// persistent node that Go and Java processes read and write together.
//
//	count, err := shared.NewCount(client, "/config/max-workers", 4)
//	n, version, err := count.Get(ctx)        // creates the node with 4 when absent
//	ok, err := count.TrySet(ctx, n+1, version) // false: someone wrote since
//	changes, err := count.Changes(ctx)        // every value from now on
//
// The bytes are Curator's: a Count's node holds 4 bytes, big-endian,
// signed (what DistributedAtomicInteger and the counter package's Int
// hold too); a Value's node holds the bytes as given. The first read (Get,
// Changes) creates the node with the seed when it does not exist, as
// Curator's start does; constructors do no I/O.
//
// Writes: TrySet is Curator's trySetCount/trySetValue, a setData at the
// version the caller read, so two writers that read the same version
// cannot both win; Set is setCount/setValue, unconditional.
//
// Versions: a node's version is an int32 that ZooKeeper increments on
// every write and that wraps from MaxInt32 to MinInt32. Changes compares
// versions as serial numbers (Newer), so a value written after the wrap is
// still news (Curator before 5.5 dropped it: CURATOR-688).
//
// # Session loss
//
// Get, Set and TrySet are single requests under the client's retry
// policy: on a lost session they fail and nothing is half done (a versioned
// write either happened or not; read again to know). Changes reads the node
// again on every (re)connection, to the same session or to a new one, and
// delivers the value if it moved meanwhile: a watch of a session that
// expired never fires, and Curator's SharedValue missed such changes until
// the next write (CURATOR-311). While the connection is suspended, the
// last value delivered may be stale; no value is delivered until the
// client reads the node again.
package shared
