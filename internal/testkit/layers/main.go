package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

func main() {
	goTool := flag.String("go", "go", "the go command")
	graph := flag.Bool("graph", false, "print the arrows between layers, then check")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: layers [-go cmd] [-graph] [module dir ...]\n\n"+
			"Checks that no import arrow runs from a lower layer to a higher one (see the table in table.go).\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	dirs := flag.Args()
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	if err := table.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "layers: the table is wrong:\n%v\n", err)
		os.Exit(2)
	}
	g, err := load(*goTool, dirs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "layers: %v\n", err)
		os.Exit(2)
	}
	if *graph {
		printGraph(os.Stdout, table, g)
	}
	if vs := table.Check(g); len(vs) > 0 {
		fmt.Fprintf(os.Stderr, "layers: %d import rule(s) broken:\n", len(vs))
		for _, v := range vs {
			fmt.Fprintf(os.Stderr, "  %s\n", v)
		}
		os.Exit(1)
	}
}

// printGraph writes, for each layer, its packages and the layers its
// packages import.
func printGraph(w io.Writer, t Table, g Graph) {
	c := checker{t: t, g: g, layerOf: map[string]int{}}
	var ours []string
	for path := range g.Packages {
		if c.ours(path) {
			ours = append(ours, path)
			c.place(path)
		}
	}
	slices.Sort(ours)
	for i, l := range t.Layers {
		var pkgs []string
		uses := map[int]bool{}
		for _, path := range ours {
			if li, ok := c.layerOf[c.rel(path)]; !ok || li != i {
				continue
			}
			pkgs = append(pkgs, c.rel(path))
			for _, imp := range g.Packages[path].Imports {
				if lj, ok := c.layerOf[c.rel(imp)]; ok && c.ours(imp) && lj != i {
					uses[lj] = true
				}
			}
		}
		var names []string
		for j := len(t.Layers) - 1; j >= 0; j-- {
			if uses[j] {
				names = append(names, t.Layers[j].Name)
			}
		}
		fmt.Fprintf(w, "%s: %s\n", l.Name, strings.Join(pkgs, " "))
		if len(names) > 0 {
			fmt.Fprintf(w, "\t-> %s\n", strings.Join(names, ", "))
		}
	}
}
