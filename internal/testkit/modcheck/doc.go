// Command modcheck keeps the repository's go.mod files releasable as a
// set (docs/releasing.md); `make lint` runs it on every module:
//
//	go run ./internal/testkit/modcheck -release v0.1.0 . integration contrib/otelrecipes
//
// It fails when a go.mod
//
//   - carries a replace directive: Go ignores replacements in a dependency,
//     so a module that builds only through one cannot be used by anyone
//     else (the modules find each other through a go.work beside each
//     module that needs the root; users never see it);
//   - declares a go line with a patch level above zero or a pre-release
//     (go 1.26.8 forces every consumer's go.mod up to 1.26.8; go 1.26 or
//     go 1.26.0 asks only for a Go 1.26 toolchain; the toolchain itself
//     writes 1.N.0 when a dependency declares it, so both forms pass);
//   - requires the root module at a version other than the next release
//     (-release): the root and the modules that use it are tagged from the
//     same commit, so each must name the version it will be released
//     with.
//
// The rules are a pure function of the parsed files (check.go); the
// files are read through `go mod edit -json`, so the go command parses
// them.
package main
