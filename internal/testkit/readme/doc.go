// Package readme holds the test of the README's quick start: the one Go
// block of README.md is built as a user would build it (a module of its
// own that requires the root, so only public packages can be imported)
// and run against a local ZooKeeper, where it must take the lock, print
// its fencing token, release it and leave no lock node behind.
package readme
