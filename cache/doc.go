// Package cache is Curator's cache family for Go (CuratorCache, and the
// NodeCache, PathChildrenCache and TreeCache shapes of it): a local view
// of a ZooKeeper node, its children or a subtree, kept current by
// watches, with one ordered stream of events for every change.
//
//	c, err := cache.Start(ctx, client, "/config", cache.WithDepth(1))
//	if err := c.Initialized(ctx); err != nil { ... }
//	n, ok := c.Get("/config/flags")
//	for ev := range c.Events() { ... }
//
// WithDepth chooses the shape (0: the node, 1: the node and its children,
// the default: the whole subtree), WithFilter which nodes below the path
// to cache, WithoutData whether to keep data, WithDecompress whether to
// gunzip what Curator wrote compressed. The path is never created: a
// missing path is an empty view, watched, that fills when it appears.
//
// A cache watches each cached node once; its watches cost no goroutine
// (they fire on the client's one stream of notifications), so a cache runs
// a few goroutines whatever its size. docs/design.md ("Caches") says how
// it loads, re-arms and resynchronises.
//
// Guarantees. Events of one node come in zxid order, each with the node's
// Stat (czxid, mzxid, version) and data; a node deleted and created again
// is Deleted, then Created (told by czxid, not by version). Changed means
// the node's data was written (its mzxid moved); a change of its children
// alone is told by their own events. Events queue without bound until
// read: a consumer that stops reading blocks neither the cache nor the
// client, and the queue grows meanwhile. The view (Get, Children,
// Snapshot) is changed together with the events that tell the change.
//
// Session loss. When the connection is suspended (session.Suspended, the
// moment a lease of the same client would be told), the cache sends
// Stale, keeps serving its last view and Freshness says since when it may
// be stale. When the client reconnects, to the same session (whose
// watches the client re-arms) or to a new one (whose watches are gone),
// the cache reads the whole view again and sends exactly the difference
// from what it showed: nothing for a node with the same czxid and mzxid,
// one event for each real difference, then Fresh. A failed read is tried
// again, after the client's own retries, until the cache ends.
//
// Refusals. A node whose ACL refuses the cache's identity the read is
// left out of the view with its subtree, told once by a Refused event
// (Event.Err is recipes.ErrRefused and session.ErrNoAuth) and listed in
// Freshness.Refused; it does not hold the first load back. When the path
// itself is refused, the view is empty and Initialized returns the
// refusal. A refused node is read again when its parent's children
// change and on every reconnection.
//
// Compressed data. WithDecompress gunzips what starts with gzip's magic;
// data that does not is kept as read (see WithDecompress).
//
// A member cut off from the quorum answers its clients from its own state
// for a while (syncLimit × tickTime) and hears none of the majority's
// writes. The client suspends the connection when it cannot prove that
// the ensemble's leader hears its session (within 3/4 of the session
// timeout): the cache's Stale comes then, as a lease of the same client is
// told under the default policy (and before it is under OnlyLostIsLost),
// so before the leader may expire the session and grant its locks to
// others. Freshness.StaleSince is the moment of that suspension. The view
// stays as it was, marked stale, with no Fresh, until the client reaches
// a member of the quorum again.
//
// Everything ends with Close, the end of Start's context or the client's
// Close: the cache's goroutines end and Events is closed.
package cache
