package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

func main() {
	goTool := flag.String("go", "go", "the go command")
	release := flag.String("release", "", "the version the modules will be released with (vX.Y.Z)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: modcheck -release vX.Y.Z [-go cmd] module-dir ...\n\n"+
			"Checks that every go.mod can be released as a set (see doc.go).\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if !releaseVersion.MatchString(*release) {
		fmt.Fprintf(os.Stderr, "modcheck: -release %q: want a version such as v0.1.0\n", *release)
		os.Exit(2)
	}
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "modcheck: no module directory given")
		os.Exit(2)
	}
	var bad []string
	for _, dir := range flag.Args() {
		file := filepath.Join(dir, "go.mod")
		m, err := read(*goTool, file)
		if err != nil {
			fmt.Fprintf(os.Stderr, "modcheck: %v\n", err)
			os.Exit(2)
		}
		bad = append(bad, check(file, m, *release)...)
	}
	if len(bad) > 0 {
		fmt.Fprintf(os.Stderr, "modcheck: %d go.mod rule(s) broken (docs/releasing.md):\n", len(bad))
		for _, b := range bad {
			fmt.Fprintf(os.Stderr, "  %s\n", b)
		}
		os.Exit(1)
	}
}

// read parses file with `go mod edit -json`.
func read(goTool, file string) (modFile, error) {
	var m modFile
	var stderr bytes.Buffer
	cmd := exec.Command(goTool, "mod", "edit", "-json", file)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return m, fmt.Errorf("go mod edit -json %s: %w: %s", file, err, bytes.TrimSpace(stderr.Bytes()))
	}
	if err := json.Unmarshal(out, &m); err != nil {
		return m, fmt.Errorf("go mod edit -json %s: %w", file, err)
	}
	return m, nil
}
