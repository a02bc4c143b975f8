package main

import (
	"slices"
	"strings"
	"testing"
)

// A package's test imports are no arrows: only its non-test files count.
func TestParseKeepsNonTestImportsOnly(t *testing.T) {
	const stream = `{
	"ImportPath": "example.com/m/mutex",
	"Imports": ["context", "example.com/m/internal/engine"],
	"TestImports": ["example.com/m/internal/testkit/harness"],
	"XTestImports": ["example.com/m/internal/testkit/zktest"]
}
{
	"ImportPath": "context",
	"Standard": true
}
{
	"ImportPath": "example.com/m/internal/engine"
}`
	pkgs := map[string]Package{}
	if err := parse(strings.NewReader(stream), pkgs); err != nil {
		t.Fatal(err)
	}
	if got := pkgs["example.com/m/mutex"].Imports; !slices.Equal(got, []string{"context", "example.com/m/internal/engine"}) {
		t.Errorf("mutex imports %q", got)
	}
	if !pkgs["context"].Standard || pkgs["example.com/m/internal/engine"].Standard {
		t.Errorf("Standard: %+v", pkgs)
	}
	g := Graph{Module: "example.com/m", Packages: pkgs}
	tab := Table{Layers: []Layer{
		{Name: "core", Packages: []string{"internal/engine"}},
		{Name: "recipes", Packages: []string{"mutex"}, On: []string{"core"}},
	}}
	if vs := tab.Check(g); len(vs) > 0 {
		t.Errorf("a test import counted: %q", vs)
	}
}

func TestParseRefusesGarbage(t *testing.T) {
	for _, stream := range []string{`{"ImportPath": `, `{"Imports": ["fmt"]}`} {
		if err := parse(strings.NewReader(stream), map[string]Package{}); err == nil {
			t.Errorf("%q: no error", stream)
		}
	}
}
