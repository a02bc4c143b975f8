package main

// table is the map of the repository's layers, lowest first, and the
// arrows forbidden beyond them. Package patterns are relative to the root
// module's path; "x/..." is x and every package under it. When you add a
// package, add it here: a package in no layer fails the check.
var table = Table{
	Layers: []Layer{
		{
			Name: "contract",
			// What every lock has in common, on every backend: the
			// interfaces, the contract suite, all-of-several-locks, the
			// implementers' holding machinery, and the one rule of what a
			// server's refusal is (every backend marks its errors with it,
			// and zklock's exit code 69 follows it).
			Packages: []string{"recipes", "recipes/locktest", "recipes/multilock", "recipes/locktrace", "recipes/refusal", "recipes/tracelog", "internal/hold"},
			StdOnly:  true,
		},
		{
			Name:     "session",
			Packages: []string{"session"},
			On:       []string{"contract"},
		},
		{
			Name: "zookeeper core",
			// What ZooKeeper leases add, and the queue engine behind the
			// ZooKeeper recipes.
			Packages: []string{"znode", "internal/engine"},
			On:       []string{"session"},
		},
		{
			Name:     "zookeeper recipes",
			Packages: []string{"mutex", "rwlock", "exclusive", "leader", "semaphore"},
			On:       []string{"zookeeper core"},
		},
		{
			Name: "zookeeper caches",
			// Local views of nodes kept by watches: the session's reads
			// only, no lease.
			Packages: []string{"cache"},
			On:       []string{"session"},
		},
		{
			Name: "zookeeper nodes",
			// Nodes kept in place (Curator's nodes family): the queue
			// engine's protected names, and a cache for the members of a
			// group.
			Packages: []string{"nodes"},
			On:       []string{"zookeeper core", "zookeeper caches"},
		},
		{
			Name: "zookeeper discovery",
			// curator-x-discovery's registry: its format, and finding
			// services through the caches; registering
			// keeps a node in place.
			Packages: []string{"discovery"},
			On:       []string{"zookeeper caches", "zookeeper nodes"},
		},
		{
			Name: "compat",
			// The contract on Redis, Redlock, memcached and SQL: no
			// ZooKeeper.
			Packages: []string{"compat/..."},
			On:       []string{"contract"},
		},
		{
			Name: "contrib",
			// Adapter modules that link a library, for users
			// (OpenTelemetry).
			Packages: []string{"contrib/..."},
			On:       []string{"session", "compat"},
		},
		{
			Name:     "cmd",
			Packages: []string{"cmd/..."},
			On:       []string{"zookeeper recipes", "zookeeper caches", "zookeeper discovery", "compat"},
		},
		{
			Name: "testkit",
			// Test tooling: it may use every library package, and no
			// library package or command may import it (only tests do).
			Packages: []string{"internal/testkit/..."},
			On:       []string{"zookeeper recipes", "zookeeper caches", "zookeeper discovery", "compat"},
		},
		{
			Name: "integration",
			// The module of heavy test tooling (Docker, the demo, the
			// benchmark peers), on top of everything else.
			Packages: []string{"integration/..."},
			On:       []string{"testkit"},
		},
	},
	InternalOK: []Allow{
		{
			Module: "integration",
			Why:    "the repository's heavy tests, built with the root of the same commit (integration/go.work) and never published: they run on the test harness",
		},
	},
	Forbidden: []Forbid{
		{
			From: "cmd/zklock/...",
			To:   "internal/...",
			Why:  "zklock uses public packages only, so that a user's own tool can do what it does",
		},
	},
}
