package main

import (
	"fmt"
	"regexp"
)

// rootPath is the module every other module of the repository builds on.
const rootPath = "github.com/zkrecipes/zkrecipes"

// modFile is the part of `go mod edit -json` the rules read.
type modFile struct {
	Module struct {
		Path string
	}
	Go      string
	Require []struct {
		Path    string
		Version string
	}
	Replace []struct {
		Old struct{ Path, Version string }
		New struct{ Path, Version string }
	}
}

// goLine is a go line that asks only for a minor release: 1.N or 1.N.0.
var goLine = regexp.MustCompile(`^1\.[0-9]+(\.0)?$`)

// releaseVersion is a release tag: vMAJOR.MINOR.PATCH, no pre-release.
var releaseVersion = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`)

// check returns what keeps the go.mod at file (parsed as m) from being
// released at version release; none when it is releasable.
func check(file string, m modFile, release string) []string {
	var bad []string
	for _, r := range m.Replace {
		old := r.Old.Path
		if r.Old.Version != "" {
			old += "@" + r.Old.Version
		}
		bad = append(bad, fmt.Sprintf("%s: replace %s => %s: Go ignores a dependency's replacements; use the module's go.work", file, old, r.New.Path))
	}
	switch {
	case m.Go == "":
		bad = append(bad, fmt.Sprintf("%s: no go line: declare the minimum Go release (go 1.N)", file))
	case !goLine.MatchString(m.Go):
		bad = append(bad, fmt.Sprintf("%s: go %s: a patch level or pre-release forces it on every consumer; declare the minor release (go 1.N or 1.N.0)", file, m.Go))
	}
	for _, r := range m.Require {
		if r.Path == rootPath && m.Module.Path != rootPath && r.Version != release {
			bad = append(bad, fmt.Sprintf("%s: requires %s %s: it is released with the root, so it must require %s", file, rootPath, r.Version, release))
		}
	}
	return bad
}
