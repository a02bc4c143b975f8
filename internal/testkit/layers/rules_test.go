package main

import (
	"slices"
	"strings"
	"testing"
)

const mod = "example.com/m"

// newGraph builds a Graph of module mod from "a -> b" arrows and lone
// package names. A name whose first element has a dot is another module's,
// fmt and testing are the standard library's, and the others are ours
// (relative to mod).
func newGraph(specs ...string) Graph {
	g := Graph{Module: mod, Packages: map[string]Package{}}
	full := func(name string) string {
		name = strings.TrimSpace(name)
		first, _, _ := strings.Cut(name, "/")
		if strings.Contains(first, ".") || name == "fmt" || name == "testing" {
			return name
		}
		return mod + "/" + name
	}
	node := func(path string) Package {
		p, ok := g.Packages[path]
		if !ok {
			p = Package{ImportPath: path, Standard: path == "fmt" || path == "testing"}
		}
		return p
	}
	for _, s := range specs {
		from, to, arrow := strings.Cut(s, "->")
		p := node(full(from))
		if arrow {
			q := node(full(to))
			g.Packages[q.ImportPath] = q
			p.Imports = append(p.Imports, q.ImportPath)
		}
		g.Packages[p.ImportPath] = p
	}
	return g
}

// whole is every package the real table names exactly, so that a graph
// built on it has nothing stale.
func whole(specs ...string) Graph {
	var all []string
	for _, l := range table.Layers {
		for _, p := range l.Packages {
			if !strings.HasSuffix(p, "/...") {
				all = append(all, p)
			}
		}
	}
	return newGraph(append(all, specs...)...)
}

// arrows renders violations as "kind: from -> to", sorted.
func arrows(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, string(v.Kind)+": "+v.From+" -> "+v.To)
	}
	slices.Sort(out)
	return out
}

func TestTheTableIsValid(t *testing.T) {
	if err := table.Validate(); err != nil {
		t.Fatal(err)
	}
}

// The rules of issue 18, on the real table: each arrow and what the check
// says of it.
func TestTheRepositoryRules(t *testing.T) {
	for _, tc := range []struct {
		arrow string
		want  []string // nil: allowed
	}{
		// Down the layers, and within one.
		{arrow: "recipes/multilock -> recipes"},
		{arrow: "recipes/multilock -> internal/hold"},
		{arrow: "internal/hold -> recipes"},
		{arrow: "session -> recipes"},
		{arrow: "session -> recipes/refusal"},
		{arrow: "compat/sqllock -> recipes/refusal"},
		{arrow: "cmd/zklock -> recipes/refusal"},
		{arrow: "recipes/refusal -> recipes"},
		{arrow: "znode -> session"},
		{arrow: "internal/engine -> znode"},
		{arrow: "mutex -> internal/engine"},
		{arrow: "semaphore -> recipes"},
		{arrow: "compat/redislock -> compat/internal/ttl"},
		{arrow: "compat/internal/ttl -> internal/hold"},
		{arrow: "cmd/zklock -> mutex"},
		{arrow: "cache -> session"},
		{arrow: "cmd/zklock -> cache"},
		{arrow: "internal/testkit/lockbench -> cache"},
		{arrow: "cmd/zklock -> compat/redlock"},
		{arrow: "cmd/zklock -> cmd/zklock/internal/child"},
		{arrow: "internal/testkit/zktest -> internal/testkit/harness"},
		{arrow: "internal/testkit/lockbench -> mutex"},
		{arrow: "integration/demo -> internal/testkit/harness"},
		{arrow: "recipes -> fmt"},
		{arrow: "session -> github.com/go-zookeeper/zk"},

		// Up: the contract holds no ZooKeeper recipe any more.
		{arrow: "recipes -> internal/engine", want: []string{"up: recipes -> internal/engine"}},
		{arrow: "recipes/multilock -> session", want: []string{"up: recipes/multilock -> session"}},
		{arrow: "session -> znode", want: []string{"up: session -> znode"}},
		{arrow: "recipes/refusal -> session", want: []string{"up: recipes/refusal -> session"}},
		{arrow: "internal/engine -> mutex", want: []string{"up: internal/engine -> mutex"}},
		{arrow: "mutex -> cmd/zklock", want: []string{"up: mutex -> cmd/zklock"}},
		// The caches read through the session alone.
		{arrow: "session -> cache", want: []string{"up: session -> cache"}},
		{arrow: "cache -> znode", want: []string{"sideways: cache -> znode"}},
		{arrow: "cache -> mutex", want: []string{"sideways: cache -> mutex"}},
		{arrow: "mutex -> cache", want: []string{"sideways: mutex -> cache"}},
		// compat sits on the contract alone.
		{arrow: "compat/redislock -> session", want: []string{"sideways: compat/redislock -> session"}},
		{arrow: "compat/internal/ttl -> znode", want: []string{"sideways: compat/internal/ttl -> znode"}},
		{arrow: "compat/redlock -> internal/engine", want: []string{"sideways: compat/redlock -> internal/engine"}},
		{arrow: "compat/memcachedlock -> mutex", want: []string{"sideways: compat/memcachedlock -> mutex"}},
		{arrow: "mutex -> compat/redislock", want: []string{"sideways: mutex -> compat/redislock"}},
		// Only tests import the test tooling.
		{arrow: "mutex -> internal/testkit/harness", want: []string{"up: mutex -> internal/testkit/harness"}},
		{arrow: "recipes/locktest -> internal/testkit/holdertest", want: []string{"up: recipes/locktest -> internal/testkit/holdertest"}},
		{arrow: "cmd/zklock -> internal/testkit/harness", want: []string{
			"forbidden: cmd/zklock -> internal/testkit/harness",
			"sideways: cmd/zklock -> internal/testkit/harness",
		}},
		// zklock uses public packages only.
		{arrow: "cmd/zklock -> internal/engine", want: []string{"forbidden: cmd/zklock -> internal/engine"}},
		{arrow: "cmd/zklock -> internal/hold", want: []string{"forbidden: cmd/zklock -> internal/hold"}},
		// The contract is the standard library's and this repository's only.
		{arrow: "recipes/locktest -> github.com/stretchr/testify/require", want: []string{"external: recipes/locktest -> github.com/stretchr/testify/require"}},
	} {
		t.Run(tc.arrow, func(t *testing.T) {
			got := arrows(table.Check(whole(tc.arrow)))
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMessagesNameTheArrowAndTheLayers(t *testing.T) {
	for _, tc := range []struct {
		arrow, want string
	}{
		{"recipes -> internal/engine", "recipes -> internal/engine: the arrow runs up, from layer contract to layer zookeeper core"},
		{"compat/redislock -> session", "compat/redislock -> session: layer compat does not sit on layer session (it sits on contract)"},
		{"cmd/zklock -> internal/engine", "cmd/zklock -> internal/engine: forbidden (cmd/zklock/... -> internal/...): " + table.Forbidden[0].Why},
	} {
		vs := table.Check(whole(tc.arrow))
		if len(vs) != 1 || vs[0].Message != tc.want {
			t.Errorf("%s: got %q, want one: %q", tc.arrow, vs, tc.want)
		}
	}
}

func TestExternalDependenciesAreFoundThroughTheModule(t *testing.T) {
	tab := Table{Layers: []Layer{
		{Name: "low", Packages: []string{"a", "b", "c"}, StdOnly: true},
		{Name: "high", Packages: []string{"d"}, On: []string{"low"}},
	}}
	g := newGraph("a -> b", "b -> c", "c -> fmt", "c -> example.org/x", "example.org/x -> example.org/y",
		"a -> testing", "d -> example.org/z")
	vs := tab.Check(g)
	want := []string{
		"a depends on example.org/x (a -> b -> c -> example.org/x): layer low uses the standard library and this repository only",
		"b depends on example.org/x (b -> c -> example.org/x): layer low uses the standard library and this repository only",
		"c depends on example.org/x (c -> example.org/x): layer low uses the standard library and this repository only",
	}
	var got []string
	for _, v := range vs {
		got = append(got, v.Message)
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestStandardWhenTheGraphLacksThePackage(t *testing.T) {
	c := checker{g: newGraph("a -> fmt")}
	for path, want := range map[string]bool{
		"fmt": true, "net/http": true, "C": true,
		"github.com/x/y": false, "example.org/z": false,
	} {
		if got := c.standard(path); got != want {
			t.Errorf("standard(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestEveryPackageInOneLayerAndNoneStale(t *testing.T) {
	tab := Table{Layers: []Layer{
		{Name: "low", Packages: []string{"a", "gone", "x/..."}},
		{Name: "high", Packages: []string{"x/y"}, On: []string{"low"}},
	}}
	got := arrows(tab.Check(newGraph("a", "new", "x", "x/y", "x/z/w")))
	want := []string{"no layer: new -> ", "stale: gone -> ", "two layers: x/y -> "}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, rel string
		want         bool
	}{
		{"recipes", "recipes", true},
		{"recipes", "recipes/locktest", false},
		{"compat/...", "compat", true},
		{"compat/...", "compat/internal/ttl", true},
		{"compat/...", "compatible", false},
		{"internal/...", "cmd/zklock/internal/x", false},
		{"internal/...", "internal/engine", true},
	} {
		if got := match(tc.pattern, tc.rel); got != tc.want {
			t.Errorf("match(%q, %q) = %v, want %v", tc.pattern, tc.rel, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		tab  Table
		want string // a part of the error
	}{
		{"sits on a later layer", Table{Layers: []Layer{
			{Name: "a", Packages: []string{"a"}, On: []string{"b"}},
			{Name: "b", Packages: []string{"b"}},
		}}, `layer "a" sits on "b", which is not a layer listed before it`},
		{"unknown layer", Table{Layers: []Layer{{Name: "a", Packages: []string{"a"}, On: []string{"z"}}}}, `sits on "z"`},
		{"two names", Table{Layers: []Layer{{Name: "a", Packages: []string{"a"}}, {Name: "a", Packages: []string{"b"}}}}, `two layers are named "a"`},
		{"no packages", Table{Layers: []Layer{{Name: "a"}}}, `layer "a" has no packages`},
		{"absolute pattern", Table{Layers: []Layer{{Name: "a", Packages: []string{"/a"}}}}, `pattern "/a"`},
		{"dots inside", Table{Layers: []Layer{{Name: "a", Packages: []string{"a/.../b"}}}}, `pattern "a/.../b"`},
		{"no why", Table{Forbidden: []Forbid{{From: "a", To: "b"}}}, "says not why"},
		{"internal, no why", Table{InternalOK: []Allow{{Module: "integration"}}}, "module integration may import internal packages, but the table says not why"},
	} {
		err := tc.tab.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

// A module may import its own internal packages; another module may not,
// unless the table lets it (the repository's test module), however its
// path nests under the root's.
func TestInternalPackagesStayInTheirModule(t *testing.T) {
	tab := Table{
		Layers:     []Layer{{Name: "all", Packages: []string{"a/...", "internal/...", "contrib/...", "integration/..."}}},
		InternalOK: []Allow{{Module: "integration", Why: "tests"}},
	}
	g := newGraph("a -> internal/x", "a -> a/internal/y", "contrib/m -> internal/x", "contrib/m -> a",
		"contrib/m/internal/z", "contrib/m -> contrib/m/internal/z", "integration/t -> internal/x")
	for path, p := range g.Packages {
		switch rel, _ := strings.CutPrefix(path, mod+"/"); {
		case strings.HasPrefix(rel, "contrib/m"):
			p.Module = mod + "/contrib/m"
		case strings.HasPrefix(rel, "integration"):
			p.Module = mod + "/integration"
		default:
			p.Module = mod
		}
		g.Packages[path] = p
	}
	vs := tab.Check(g)
	if got, want := arrows(vs), []string{"internal: contrib/m -> internal/x"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if want := "contrib/m -> internal/x: module contrib/m imports an internal package of the root"; !strings.HasPrefix(vs[0].Message, want) {
		t.Errorf("message %q, want it to start %q", vs[0].Message, want)
	}
}

// The module of each package is read from go list.
func TestParseReadsTheModule(t *testing.T) {
	const stream = `{"ImportPath": "example.com/m/contrib/x", "Module": {"Path": "example.com/m/contrib/x"}}
{"ImportPath": "fmt", "Standard": true}`
	pkgs := map[string]Package{}
	if err := parse(strings.NewReader(stream), pkgs); err != nil {
		t.Fatal(err)
	}
	if got := pkgs["example.com/m/contrib/x"].Module; got != "example.com/m/contrib/x" {
		t.Errorf("module %q", got)
	}
	if got := pkgs["fmt"].Module; got != "" {
		t.Errorf("fmt's module %q", got)
	}
}
