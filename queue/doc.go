// Package queue is Curator's distributed queue family for Go
// (org.apache.curator.framework.recipes.queue), on the same znodes and
// bytes, so that Go and Java producers and consumers share one queue.
//
//	q, err := queue.New(client, "/jobs", queue.WithLockPath("/jobs-locks"))
//	_, err = q.Put(ctx, []byte("job 1"))
//	err = q.Consume(ctx, func(ctx context.Context, item []byte) error { ... })
//
// SimpleQueue is SimpleDistributedQueue (ZooKeeper's own recipe, kazoo's
// Queue): one persistent sequential node qn-<seq10> per item, its raw
// bytes; Offer, Poll, Peek, Take.
//
// Queue is DistributedQueue and, by WithKind, DistributedPriorityQueue,
// DistributedDelayQueue and DistributedIdQueue: nodes queue-<seq10>,
// queue-<1|0><%08X priority><seq10>, queue-|<%08X due epoch ms>|<seq10>
// and queue-|<id>|<seq10>, each holding Curator's ItemSerializer
// envelope (version 0x00010001, then per item 0x01, a 4-byte big-endian
// length and the bytes, then 0x02): several items per node with one Put
// (Curator's putMulti). The items' bytes are what Curator's
// QueueSerializer makes of a Java value; agree on that serializer with
// the Java side.
//
// Delivery. Without a lock path a consumer deletes a node before it
// hands its items over: each item is delivered at most once, and lost if
// the consumer dies while handling it (Curator documents the same). With
// WithLockPath a consumer holds the ephemeral node <lock path>/<item
// node> while it handles a node and deletes the node only when its
// handler is done, as Curator's lockPath mode: an item whose consumer
// died (its session ended) is delivered again, to the next consumer. The
// handler's context is cancelled when that session can no longer be
// trusted, the moment another consumer may be given the item. A handler
// that returns an error puts the item back at the end of the queue
// (Requeue) or drops it (Drop). Items of one kind come out in its order
// (sequence, priority, due time) to a single consumer; several consumers
// take them in parallel, so that the order of handling across them is
// not the queue's.
//
// Session loss. A consumer goes on through suspensions, lost sessions
// and long disconnections, and lists the queue again on each new
// connection; WithStateFunc tells it of each change of connection state.
// Nothing a producer put lives in a session: items survive every fault.
// A put is a single sequential create, never retried: after a connection
// loss it may or may not have been applied.
//
// When not to use a ZooKeeper queue (Curator's Tech Note 4). ZooKeeper
// holds every node in memory on every member and sends a queue's whole
// children list to each consumer on each change: it is a poor message
// queue for volume. Use it for a few items that must be coordinated with
// other ZooKeeper state; use a message broker (Kafka, RabbitMQ, ...) for
// a stream of work. The limits: a node's data and a reply must fit
// jute.maxbuffer (1 MB by default, session.DefaultMaxRequestSize: a
// larger put is refused before it is sent, session.ErrRequestTooLarge),
// so a queue whose children list outgrows it (some tens of thousands of
// items, with names of 16 to 35 bytes) can no longer be listed by any
// consumer, Java's included, until items are removed by name; and every
// change of the queue fires the children watch of every consumer, which
// then lists the queue again.
package queue
