package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// load reads the import graph of the modules in dirs (the first is the
// root module) with the go command goTool.
func load(goTool string, dirs []string) (Graph, error) {
	out, err := run(goTool, dirs[0], "list", "-m", "-f", "{{.Path}}")
	if err != nil {
		return Graph{}, err
	}
	g := Graph{Module: strings.TrimSpace(string(out)), Packages: map[string]Package{}}
	for _, dir := range dirs {
		// -deps lists every dependency too, with Standard set, so that the
		// check can tell the standard library from other modules. Imports
		// holds the imports of non-test files only.
		out, err := run(goTool, dir, "list", "-deps", "-json=ImportPath,Standard,Imports,Module", "./...")
		if err != nil {
			return Graph{}, err
		}
		if err := parse(bytes.NewReader(out), g.Packages); err != nil {
			return Graph{}, fmt.Errorf("reading go list in %s: %w", dir, err)
		}
	}
	return g, nil
}

// parse adds the packages of a stream of go list -json objects to pkgs.
// Only non-test imports are kept: TestImports and XTestImports are not read.
func parse(r io.Reader, pkgs map[string]Package) error {
	dec := json.NewDecoder(r)
	for {
		var p struct {
			ImportPath string
			Standard   bool
			Imports    []string
			Module     *struct{ Path string }
		}
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if p.ImportPath == "" {
			return errors.New("a package with no import path")
		}
		pkg := Package{ImportPath: p.ImportPath, Standard: p.Standard, Imports: p.Imports}
		if p.Module != nil {
			pkg.Module = p.Module.Path
		}
		pkgs[p.ImportPath] = pkg
	}
}

func run(goTool, dir string, args ...string) ([]byte, error) {
	cmd := exec.Command(goTool, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s (in %s): %w\n%s", goTool, strings.Join(args, " "), dir, err, stderr.Bytes())
	}
	return out, nil
}
