package apisurface

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// forbidden is the module no public signature may mention.
const forbidden = "github.com/go-zookeeper/zk"

// TestNoZooKeeperTypeInPublicSignatures walks every exported name of every
// shipped package of the module.
func TestNoZooKeeperTypeInPublicSignatures(t *testing.T) {
	pkgs := load(t)
	var shipped []string
	for path := range pkgs.byPath {
		if pkgs.ours(path) && !strings.Contains(path+"/", "/internal/") && !pkgs.main[path] {
			shipped = append(shipped, path)
		}
	}
	slices.Sort(shipped)
	require.Contains(t, shipped, pkgs.module+"/session", "the walk must see session")
	for _, path := range shipped {
		p, err := pkgs.imp.Import(path)
		require.NoError(t, err, "importing %s", path)
		assert.Empty(t, mentions(p, forbidden), "public names of %s that mention %s", path, forbidden)
	}
}

// TestMentionsFindsEveryPlace: the walk sees a forbidden type wherever a
// public signature can carry it, and nowhere else.
func TestMentionsFindsEveryPlace(t *testing.T) {
	pkgs := load(t)
	const src = `package p

import "github.com/go-zookeeper/zk"

func F() *zk.Stat                      { return nil }
func G(func(map[string][]zk.ACL))     {}
type T struct {
	E <-chan zk.Event
	hidden zk.Event
}
func (T) M(...zk.State) {}
func (T) unexported(*zk.Conn) {}
type I interface{ W() (zk.EventType, error) }
type A = zk.Stat
type Clean struct{ N int; hidden *zk.Conn }
func (*Clean) Ptr() [2]zk.ACL { return [2]zk.ACL{} }
var V zk.ACL
var Err = zk.ErrNoNode
const C = zk.FlagEphemeral
func private(zk.Stat) {}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	require.NoError(t, err)
	conf := types.Config{Importer: pkgs.imp}
	p, err := conf.Check("example.com/p", fset, []*ast.File{f}, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"A", "Clean.Ptr", "F", "G", "I.W", "T.E", "T.M", "V"}, mentions(p, forbidden))
}

// mentions lists the exported names of p (functions, variables, constants,
// types, their exported fields and methods) whose types mention a type of
// package path mod, sorted.
func mentions(p *types.Package, mod string) []string {
	var out []string
	check := func(name string, t types.Type) {
		if mentionsType(t, mod, map[types.Type]bool{}) {
			out = append(out, name)
		}
	}
	scope := p.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		tn, ok := obj.(*types.TypeName)
		if !ok {
			check(name, obj.Type())
			continue
		}
		if tn.IsAlias() {
			check(name, types.Unalias(tn.Type()))
			continue
		}
		named := tn.Type().(*types.Named)
		switch u := named.Underlying().(type) {
		case *types.Struct:
			for i := range u.NumFields() {
				if f := u.Field(i); f.Exported() {
					check(name+"."+f.Name(), f.Type())
				}
			}
		case *types.Interface:
			for i := range u.NumMethods() {
				if m := u.Method(i); m.Exported() {
					check(name+"."+m.Name(), m.Type())
				}
			}
		default:
			check(name, u)
		}
		for i := range named.NumMethods() {
			if m := named.Method(i); m.Exported() {
				check(name+"."+m.Name(), m.Type())
			}
		}
	}
	slices.Sort(out)
	return out
}

// mentionsType reports whether t is, or is built of, a named type of
// package mod. Named types of other packages are not entered (their own
// package is walked on its own); their type arguments are.
func mentionsType(t types.Type, mod string, seen map[types.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t := t.(type) {
	case *types.Alias:
		return mentionsType(types.Unalias(t), mod, seen)
	case *types.Named:
		if pkg := t.Obj().Pkg(); pkg != nil && pkg.Path() == mod {
			return true
		}
		for i := range t.TypeArgs().Len() {
			if mentionsType(t.TypeArgs().At(i), mod, seen) {
				return true
			}
		}
		return false
	case *types.Pointer:
		return mentionsType(t.Elem(), mod, seen)
	case *types.Slice:
		return mentionsType(t.Elem(), mod, seen)
	case *types.Array:
		return mentionsType(t.Elem(), mod, seen)
	case *types.Chan:
		return mentionsType(t.Elem(), mod, seen)
	case *types.Map:
		return mentionsType(t.Key(), mod, seen) || mentionsType(t.Elem(), mod, seen)
	case *types.Signature:
		return mentionsType(t.Params(), mod, seen) || mentionsType(t.Results(), mod, seen)
	case *types.Tuple:
		for i := range t.Len() {
			if mentionsType(t.At(i).Type(), mod, seen) {
				return true
			}
		}
		return false
	case *types.Struct:
		for i := range t.NumFields() {
			if f := t.Field(i); (f.Exported() || f.Embedded()) && mentionsType(f.Type(), mod, seen) {
				return true
			}
		}
		return false
	case *types.Interface:
		for i := range t.NumMethods() {
			if mentionsType(t.Method(i).Type(), mod, seen) {
				return true
			}
		}
		for i := range t.NumEmbeddeds() {
			if mentionsType(t.EmbeddedType(i), mod, seen) {
				return true
			}
		}
		return false
	case *types.TypeParam:
		return mentionsType(t.Constraint(), mod, seen)
	case *types.Union:
		for i := range t.Len() {
			if mentionsType(t.Term(i).Type(), mod, seen) {
				return true
			}
		}
		return false
	}
	return false // basic types
}

// packages is the module's packages and their dependencies, importable
// from the export data the go command built.
type packages struct {
	module string
	byPath map[string]string // import path -> export data file
	main   map[string]bool
	inMod  map[string]bool
	imp    types.Importer
}

func (p *packages) ours(path string) bool { return p.inMod[path] }

// load lists the module's packages with the go command (from the module's
// root, two levels up from internal/testkit/apisurface), building their
// export data.
func load(t *testing.T) *packages {
	t.Helper()
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the go command runs this test")
	root := "../../.."
	mod, err := exec.Command(goTool, "-C", root, "list", "-m", "-f", "{{.Path}}").Output()
	require.NoError(t, err, "go list -m")
	cmd := exec.Command(goTool, "-C", root, "list", "-export", "-deps", "-json=ImportPath,Export,Name,Module", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list -export: %s", stderr.String())
	p := &packages{module: strings.TrimSpace(string(mod)), byPath: map[string]string{},
		main: map[string]bool{}, inMod: map[string]bool{}}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var e struct {
			ImportPath, Export, Name string
			Module                   *struct{ Path string }
		}
		err := dec.Decode(&e)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		p.byPath[e.ImportPath] = e.Export
		p.main[e.ImportPath] = e.Name == "main"
		p.inMod[e.ImportPath] = e.Module != nil && e.Module.Path == p.module
	}
	fset := token.NewFileSet()
	p.imp = importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := p.byPath[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	return p
}
