// Command layers checks the import graph of zkrecipes: no import arrow may
// run from a lower layer to a higher one. It is part of `make lint`:
//
//	go run ./internal/testkit/layers . integration contrib/otelrecipes
//
// The arguments are the directories of the modules to read (the default is
// "."); the first is the root module, and every package whose import path
// is at or under the root module's path is this repository's. The graph is
// read with `go list -deps -json`, so only the imports of non-test files
// count: a test may import anything (the test harness, a recipe it runs
// against), and a package made only of tests has no arrows.
//
// The layers and the rules are data, in table.go: each layer names the
// layers it sits on, and a package may import packages of its own layer and
// of the layers below it, directly or through others. The check fails, with
// one line per offending arrow, when
//
//   - an arrow runs up (a lower layer imports a higher one) or sideways (a
//     layer imports one it does not sit on: compat imports session);
//   - an arrow is forbidden by a rule of its own (zklock imports internal/);
//   - a layer kept to the standard library (the contract) depends, directly
//     or through this module's packages, on a package outside the standard
//     library and this module;
//   - a module imports an internal package of another module (the go
//     command allows it when the importer's path is under the root's, but
//     a module built against another version of the root then breaks),
//     unless the table lets that module (InternalOK: the test module);
//   - a package of this repository is in no layer, or the table names a
//     package that does not exist, so that the table stays the whole map.
//
// With -graph it prints the arrows between layers that the code has, for
// the drawing in docs/design.md.
package main
