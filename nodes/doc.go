// Package nodes is Curator's nodes family (org.apache.curator.framework.
// recipes.nodes) on the session: nodes that this process keeps in place.
// A Curator user looks for it by that name; the types drop Curator's
// repeated words (nodes.Persistent is PersistentNode, nodes.TTLNode is
// PersistentTtlNode, nodes.GroupMember is GroupMember), and each starts
// with New..., which does no I/O and starts the keeping in the
// background, as Curator's constructor and start() do together.
//
//	n, _ := nodes.NewPersistent(client, "/services/api/instance-", session.EphemeralSequential,
//		data, nodes.Protected())
//	defer n.Close(ctx)
//	for {
//		p, err := n.Placed(ctx) // in place: p.Path(), p.Generation()
//		...
//		<-p.Done()              // not in place any more: context.Cause(p.Context()) says why
//	}
//
// What happens on session loss: the node is not in place from the moment
// the session can no longer be trusted (an ephemeral node is gone with an
// expired session, and nothing proves any node unchanged meanwhile): the
// current Placement's context ends with the session's cause
// (session.ErrSuspended, then session.ErrSessionLost). With the next
// trusted session the node is put back once, with the latest data set by
// SetData (also one set while disconnected), and a new Placement begins.
// A node someone else deletes is made again (its Placement ends with
// ErrDeleted); one found with other data gets ours. Failed attempts wait
// on a backoff (WithRetry). Close stops the keeping before it deletes the
// node, so no reconnection brings it back (Curator's CURATOR-164).
//
// Where this differs from Curator: a node made again after a delete keeps
// its first path even in protected mode (Curator makes a protected node
// again under a fresh UUID, so its path changes); a Placement tells when
// the node is in place (Curator tells nothing); an ephemeral node that
// another session owns is not adopted (Curator writes to it and warns).
//
// TTL nodes need a server with zookeeper.extendedTypesEnabled=true; on
// others TTLNode and the TTL modes fail with an error naming the setting
// (session.ErrTTLDisabled).
package nodes
