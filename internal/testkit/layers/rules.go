package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Table is the map of the layers and the arrows forbidden beyond them.
type Table struct {
	// Layers, lowest first: a layer sits only on layers listed before it.
	Layers []Layer
	// Forbidden arrows between layers that may otherwise import each other.
	Forbidden []Forbid
	// InternalOK names the modules that may import another module's
	// internal packages. The go command allows any module whose path is
	// under the root's to import the root's internal packages, but a
	// module built against another version of the root breaks when that
	// internal code changes: no published module may.
	InternalOK []Allow
}

// Allow lets one module (its directory relative to the root: "integration")
// import another module's internal packages.
type Allow struct {
	Module string
	Why    string
}

// Layer is a set of packages that may import each other and the layers
// they sit on.
type Layer struct {
	Name string
	// Packages are patterns relative to the root module: "x" or "x/...".
	Packages []string
	// On names the layers directly below: the layer may import them and
	// every layer they sit on.
	On []string
	// StdOnly keeps the layer's dependencies, direct or through this
	// repository's packages, to the standard library and this repository.
	StdOnly bool
}

// Forbid is an arrow that no package matching From may draw to a package
// matching To, whatever their layers.
type Forbid struct {
	From, To string // patterns, as in Layer.Packages
	Why      string
}

// Graph is the import graph of non-test files.
type Graph struct {
	// Module is the root module's path: a package at or under it is this
	// repository's.
	Module string
	// Packages by import path: this repository's and all they depend on.
	Packages map[string]Package
}

// Package is one node of the Graph.
type Package struct {
	ImportPath string
	Standard   bool
	Imports    []string // the imports of its non-test files
	Module     string   // the path of its module; "" for the standard library
}

// Kind says which rule a Violation breaks.
type Kind string

const (
	Up        Kind = "up"        // an arrow from a lower layer to a higher one
	Sideways  Kind = "sideways"  // an arrow to a layer that is neither below nor above
	Forbidden Kind = "forbidden" // an arrow a Forbid rule names
	External  Kind = "external"  // a StdOnly layer depends on another module
	NoLayer   Kind = "no layer"  // a package of this repository is in no layer
	TwoLayers Kind = "two layers"
	Stale     Kind = "stale"    // the table names a package that does not exist
	Internal  Kind = "internal" // a module imports another module's internal package
)

// Violation is one broken rule. From and To are relative to the root
// module where they are this repository's.
type Violation struct {
	Kind     Kind
	From, To string
	Message  string
}

func (v Violation) String() string { return v.Message }

// Validate reports a table that cannot be read one way only: a layer with
// no name or no packages, two layers of one name, a layer sitting on one
// not listed before it, or a malformed pattern.
func (t Table) Validate() error {
	var errs []error
	seen := map[string]bool{}
	for _, l := range t.Layers {
		switch {
		case l.Name == "":
			errs = append(errs, errors.New("a layer has no name"))
		case seen[l.Name]:
			errs = append(errs, fmt.Errorf("two layers are named %q", l.Name))
		case len(l.Packages) == 0:
			errs = append(errs, fmt.Errorf("layer %q has no packages", l.Name))
		}
		for _, on := range l.On {
			if !seen[on] {
				errs = append(errs, fmt.Errorf("layer %q sits on %q, which is not a layer listed before it", l.Name, on))
			}
		}
		for _, p := range l.Packages {
			errs = append(errs, checkPattern(p))
		}
		seen[l.Name] = true
	}
	for _, f := range t.Forbidden {
		errs = append(errs, checkPattern(f.From), checkPattern(f.To))
		if f.Why == "" {
			errs = append(errs, fmt.Errorf("forbidden arrow %s -> %s says not why", f.From, f.To))
		}
	}
	for _, a := range t.InternalOK {
		errs = append(errs, checkPattern(a.Module))
		if a.Why == "" {
			errs = append(errs, fmt.Errorf("module %s may import internal packages, but the table says not why", a.Module))
		}
	}
	return errors.Join(errs...)
}

func checkPattern(p string) error {
	base, _ := strings.CutSuffix(p, "/...")
	if base == "" || strings.HasPrefix(base, "/") || strings.HasSuffix(base, "/") || strings.Contains(base, "...") {
		return fmt.Errorf("pattern %q: want a path x relative to the module, or x/... for x and every package under it", p)
	}
	return nil
}

// match says whether the relative path rel matches pattern.
func match(pattern, rel string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return rel == base || strings.HasPrefix(rel, base+"/")
	}
	return rel == pattern
}

// Check returns every violation of the table in g, sorted by message. The
// table must be valid.
func (t Table) Check(g Graph) []Violation {
	c := checker{t: t, g: g, layerOf: map[string]int{}, below: t.below()}
	var ours []string
	for path := range g.Packages {
		if c.ours(path) {
			ours = append(ours, path)
		}
	}
	slices.Sort(ours)
	for _, path := range ours {
		c.place(path)
	}
	c.stale(ours)
	for _, path := range ours {
		for _, imp := range g.Packages[path].Imports {
			if c.ours(imp) {
				c.arrow(path, imp)
				c.internal(path, imp)
			}
		}
	}
	for _, path := range ours {
		if l, ok := c.layerOf[c.rel(path)]; ok && t.Layers[l].StdOnly {
			c.stdOnly(path, t.Layers[l].Name)
		}
	}
	slices.SortFunc(c.out, func(a, b Violation) int { return strings.Compare(a.Message, b.Message) })
	return c.out
}

// below maps each layer's index to the set of layers it may import: its
// own and every layer it sits on, directly or not.
func (t Table) below() []map[int]bool {
	index := map[string]int{}
	for i, l := range t.Layers {
		index[l.Name] = i
	}
	sets := make([]map[int]bool, len(t.Layers))
	for i, l := range t.Layers { // lowest first: every On is done
		sets[i] = map[int]bool{i: true}
		for _, on := range l.On {
			for j := range sets[index[on]] {
				sets[i][j] = true
			}
		}
	}
	return sets
}

type checker struct {
	t       Table
	g       Graph
	layerOf map[string]int // relative path -> index in t.Layers
	below   []map[int]bool
	out     []Violation
}

func (c *checker) ours(path string) bool {
	return path == c.g.Module || strings.HasPrefix(path, c.g.Module+"/")
}

// rel is path relative to the root module if it is ours, else path.
func (c *checker) rel(path string) string {
	if path == c.g.Module {
		return "."
	}
	if r, ok := strings.CutPrefix(path, c.g.Module+"/"); ok {
		return r
	}
	return path
}

func (c *checker) add(k Kind, from, to, format string, args ...any) {
	c.out = append(c.out, Violation{Kind: k, From: from, To: to, Message: fmt.Sprintf(format, args...)})
}

// place finds the layer of one of our packages.
func (c *checker) place(path string) {
	rel := c.rel(path)
	var in []int
	for i, l := range c.t.Layers {
		if slices.ContainsFunc(l.Packages, func(p string) bool { return match(p, rel) }) {
			in = append(in, i)
		}
	}
	switch len(in) {
	case 0:
		c.add(NoLayer, rel, "", "%s is in no layer: add it to the table (internal/testkit/layers/table.go)", rel)
	case 1:
		c.layerOf[rel] = in[0]
	default:
		c.add(TwoLayers, rel, "", "%s is in two layers, %s and %s: the table must place it once", rel, c.t.Layers[in[0]].Name, c.t.Layers[in[1]].Name)
	}
}

// stale reports the table's exact package names that name no package.
func (c *checker) stale(ours []string) {
	for _, l := range c.t.Layers {
		for _, p := range l.Packages {
			if strings.HasSuffix(p, "/...") {
				continue
			}
			if !slices.ContainsFunc(ours, func(path string) bool { return c.rel(path) == p }) {
				c.add(Stale, p, "", "the table puts %s in layer %s, but there is no such package: update the table", p, l.Name)
			}
		}
	}
}

// arrow checks one import between two of our packages.
func (c *checker) arrow(from, to string) {
	rf, rt := c.rel(from), c.rel(to)
	for _, f := range c.t.Forbidden {
		if match(f.From, rf) && match(f.To, rt) {
			c.add(Forbidden, rf, rt, "%s -> %s: forbidden (%s -> %s): %s", rf, rt, f.From, f.To, f.Why)
		}
	}
	lf, okf := c.layerOf[rf]
	lt, okt := c.layerOf[rt]
	if !okf || !okt || c.below[lf][lt] { // a package in no layer is reported once, by place
		return
	}
	nf, nt := c.t.Layers[lf].Name, c.t.Layers[lt].Name
	if c.below[lt][lf] {
		c.add(Up, rf, rt, "%s -> %s: the arrow runs up, from layer %s to layer %s", rf, rt, nf, nt)
		return
	}
	c.add(Sideways, rf, rt, "%s -> %s: layer %s does not sit on layer %s (it sits on %s)", rf, rt, nf, nt, c.sitsOn(lf))
}

// internal checks that an import of an internal package stays within its
// module, or comes from a module that InternalOK lets through.
func (c *checker) internal(from, to string) {
	mf, mt := c.g.Packages[from].Module, c.g.Packages[to].Module
	rt := c.rel(to)
	if mf == mt || !(strings.HasPrefix(rt, "internal/") || strings.Contains(rt, "/internal/") || strings.HasSuffix(rt, "/internal")) {
		return
	}
	if slices.ContainsFunc(c.t.InternalOK, func(a Allow) bool { return c.rel(mf) == a.Module }) {
		return
	}
	c.add(Internal, c.rel(from), rt, "%s -> %s: module %s imports an internal package of %s: built against another version of %s, it breaks when that code changes (make the package public, or move it into the importing module)",
		c.rel(from), rt, c.module(mf), c.module(mt), c.module(mt))
}

// module names the module whose path is path: "the root" or its
// directory relative to the root.
func (c *checker) module(path string) string {
	if path == c.g.Module {
		return "the root"
	}
	return c.rel(path)
}

// sitsOn names the layers below layer i, highest first.
func (c *checker) sitsOn(i int) string {
	var names []string
	for j := i - 1; j >= 0; j-- {
		if c.below[i][j] {
			names = append(names, c.t.Layers[j].Name)
		}
	}
	if len(names) == 0 {
		return "nothing"
	}
	return strings.Join(names, ", ")
}

// stdOnly reports every package outside the standard library and this
// repository that path depends on, with the shortest chain of imports that
// leads to it.
func (c *checker) stdOnly(path, layer string) {
	from := map[string]string{path: ""} // visited, and the package that led to it
	queue := []string{path}
	var found []string
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range c.g.Packages[p].Imports {
			if _, seen := from[imp]; seen || c.standard(imp) {
				continue
			}
			from[imp] = p
			if c.ours(imp) {
				queue = append(queue, imp)
			} else {
				found = append(found, imp)
			}
		}
	}
	for _, ext := range found {
		chain := []string{ext}
		for p := from[ext]; p != ""; p = from[p] {
			chain = append(chain, c.rel(p))
		}
		slices.Reverse(chain)
		c.add(External, c.rel(path), ext, "%s depends on %s (%s): layer %s uses the standard library and this repository only",
			c.rel(path), ext, strings.Join(chain, " -> "), layer)
	}
}

// standard says whether path is in the standard library. A path the graph
// does not hold (it should hold every dependency) is standard if its first
// element has no dot, as the go command decides.
func (c *checker) standard(path string) bool {
	if path == "C" { // cgo's pseudo-package
		return true
	}
	if p, ok := c.g.Packages[path]; ok {
		return p.Standard
	}
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}
