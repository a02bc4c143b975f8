// Package discovery is curator-x-discovery for Go: the registry Java
// services on ZooKeeper share (Curator's ServiceDiscovery, Spring Cloud
// Zookeeper, Dubbo 3, Druid), read and written in its exact format.
//
//	d, err := discovery.New(client) // base path /services, Spring Cloud's
//	names, err := d.Names(ctx)
//	sc, err := d.Cache(ctx, "orders")
//	p, err := discovery.NewProvider(sc, discovery.WithStrategy(discovery.RoundRobin()))
//	inst, err := p.Instance(ctx)
//	url := inst.URISpec.Build(inst, nil)
//	reg, err := d.Register(ctx, discovery.Instance{Name: "api", ID: id, Address: host, Port: new(8080)})
//	defer reg.Unregister(ctx)
//
// Layout: basePath/<service name>/<instance id>, the node's data the
// instance's JSON (Instance.Encode, Decode); Dynamic instances are
// ephemeral, DynamicSequential ephemeral sequential, Static and Permanent
// persistent (ServiceType.CreateMode); InstancePath names the node.
//
// Format: Encode writes byte for byte what Curator 5.x's
// JsonInstanceSerializer writes in its default "compatible" mode (the
// golden files in testdata come from Curator's own serializer): the fields
// name, id, address, port, sslPort, payload, registrationTimeUTC,
// serviceType, uriSpec; enabled only when Instance.Enabled is set; an
// object payload with "@class" first, naming the Java class a Java reader
// instantiates (NewPayload; Spring Cloud's is SpringCloudClass). Decode
// ignores the fields it does not know.
//
// Finding: Names and Instances ask the server each time (Curator's
// queryForNames and queryForInstances); a ServiceCache keeps a service's
// instances current with a cache (package cache) and answers without a
// request; a Provider picks one of them (round robin, random or sticky),
// skipping the filtered, the disabled and those reported down
// (NoteError, Curator's DownInstancePolicy). A service with no instance
// is an empty answer, never an error.
//
// Registering: Register writes an instance at its node in its type's
// mode, its parents made as containers (as Curator does), and keeps it
// there until Unregister (package nodes' Persistent). The Registration
// tells the truth like a lease: Registered returns the current stretch of
// registration, whose context ends with a cause when the instance may no
// longer be registered (session.ErrSuspended, session.ErrSessionLost,
// nodes.ErrDeleted, nodes.ErrClosed). After a new session the instance is
// registered again once, with the latest data (Update, also one made
// while disconnected), waiting on a backoff after failures; Unregister
// stops that keeping before it deletes the node, so no reconnection
// resurrects it (Curator's CURATOR-146, -164, -181 and -320 avoided: see
// Registration).
//
// Session loss: the one-shot reads fail with the session's error after
// the client's retries. A ServiceCache keeps serving its last instances
// while the connection is suspended (Freshness says since when they may
// be stale) and reads the service again on reconnection; until then a
// Provider may offer an instance that is gone.
package discovery
