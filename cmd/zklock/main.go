package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
)

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

// subcommand is one entry of zklock's command table: `zklock NAME ...`.
type subcommand struct {
	// run runs it with the arguments after NAME and returns the exit status.
	run func(args []string, stdout, stderr io.Writer) int
	// flags is its flag set, for completion; nil when it takes none.
	flags func() *flag.FlagSet
	// global: it takes the connection flags, also before NAME (zklock
	// --servers H ls PATH, as etcdctl and kubectl take them).
	global bool
	// args completes its first argument that is not a flag (shell
	// words); nil: a path, not completed.
	args []string
}

// subcommands is the command table, by name; anything else is the
// lock-and-run. A new subcommand is one entry here (and its help).
var subcommands = map[string]subcommand{
	"ls": {run: lsMain, global: true, flags: func() *flag.FlagSet { return lsFlags(&lsOptions{}) }},
	"watch": {run: watchMain, global: true, flags: func() *flag.FlagSet {
		var children, node bool
		return watchFlags(&watchOptions{}, &children, &node)
	}},
	"services": {run: servicesMain, global: true, flags: func() *flag.FlagSet {
		return servicesFlags(&connOptions{}, &outputOptions{}, &servicesOptions{})
	}},
	"register": {run: registerMain, global: true, flags: func() *flag.FlagSet {
		return registerFlags(&runOptions{}, &registerOptions{})
	}},
	"version": {run: versionMain},
	"help": {run: func(_ []string, stdout, _ io.Writer) int {
		fmt.Fprint(stdout, usageText)
		return exitOK
	}},
}

// completion is added by init: its script lists the command table.
func init() {
	subcommands["completion"] = subcommand{run: completionMain, args: completionShells}
}

// dispatch runs the subcommand named by args[0] or, for anything else,
// the lock-and-run, and returns the exit status.
func dispatch(args []string, stdout, stderr io.Writer) int {
	if global, rest := leadingFlags(args); len(global) > 0 && len(rest) > 0 && subcommands[rest[0]].global {
		// Global flags before the subcommand.
		return subcommands[rest[0]].run(append(append([]string(nil), global...), rest[1:]...), stdout, stderr)
	}
	if len(args) > 0 {
		if sub, ok := subcommands[args[0]]; ok {
			return sub.run(args[1:], stdout, stderr)
		}
		if args[0] == "--version" || args[0] == "-version" {
			return versionMain(args[1:], stdout, stderr)
		}
	}
	return runMain(args, stdout, stderr)
}

// versionMain is `zklock version` and `zklock --version`.
func versionMain(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		return usageError(stderr, "version takes no arguments")
	}
	printVersion(stdout)
	return exitOK
}

// usageError reports a usage error and returns exitUsage. It is printed even
// with -q: the invocation itself is wrong.
func usageError(stderr io.Writer, format string, args ...any) int {
	msg := longFlag.ReplaceAllString(fmt.Sprintf(format, args...), "$1--$2")
	fmt.Fprintf(stderr, "zklock: %s\n%sRun 'zklock --help' for more.\n", msg, usageLine)
	return exitUsage
}

// longFlag finds the flag package's "-name" for a long flag in its error
// messages, to show it as "--name", as the usage spells it.
var longFlag = regexp.MustCompile(`((?:^|flag|: ) ?)-([a-z][a-z-]+)\b`)

// version is set at build time with -ldflags "-X main.version=..."; without
// it the module version from the build info is shown ("(devel)" for a
// build in the module's own tree; v0.1.0 for go install ...@v0.1.0), and
// the VCS revision the build info records (12 digits, "+dirty" when the
// tree had changes).
var version = ""

func printVersion(w io.Writer) {
	v := version
	if v == "" {
		v = "(devel)"
		if bi, ok := debug.ReadBuildInfo(); ok {
			if bi.Main.Version != "" {
				v = bi.Main.Version
			}
			dirty := false
			for _, s := range bi.Settings {
				switch {
				case s.Key == "vcs.revision" && len(s.Value) >= 12:
					v += " " + s.Value[:12]
				case s.Key == "vcs.modified" && s.Value == "true":
					dirty = true
				}
			}
			if dirty {
				v += "+dirty"
			}
		}
	}
	fmt.Fprintf(w, "zklock %s (%s %s/%s)\n", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// leadingFlags splits off the connection and output flags that come before
// the first other argument; nil when there are none or they do not parse.
func leadingFlags(args []string) (global, rest []string) {
	fs := newFlagSet("zklock")
	var conn connOptions
	var out outputOptions
	conn.register(fs)
	out.register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, args
	}
	rest = fs.Args()
	global = args[:len(args)-len(rest)]
	if len(global) > 0 && global[len(global)-1] == "--" {
		return nil, args // an explicit end of flags: not a subcommand
	}
	return global, rest
}
