package main

import (
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

// subcommands are the subcommands that take the connection flags, by name.
var subcommands = map[string]func(args []string, stdout, stderr io.Writer) int{
	"ls":       lsMain,
	"watch":    watchMain,
	"services": servicesMain,
	"register": registerMain,
}

// dispatch runs the subcommand named by args[0] ("ls", "watch", "services",
// "register", "version")
// or, for anything else, the lock-and-run, and returns the exit status.
func dispatch(args []string, stdout, stderr io.Writer) int {
	if global, rest := leadingFlags(args); len(global) > 0 && len(rest) > 0 && subcommands[rest[0]] != nil {
		// Global flags before the subcommand, as etcdctl and kubectl take
		// them: zklock --servers H ls PATH.
		return subcommands[rest[0]](append(append([]string(nil), global...), rest[1:]...), stdout, stderr)
	}
	if len(args) > 0 {
		if sub := subcommands[args[0]]; sub != nil {
			return sub(args[1:], stdout, stderr)
		}
		switch args[0] {
		case "version":
			if len(args) > 1 {
				return usageError(stderr, "version takes no arguments")
			}
			printVersion(stdout)
			return exitOK
		case "help":
			fmt.Fprint(stdout, usageText)
			return exitOK
		}
	}
	return runMain(args, stdout, stderr)
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
// it the module version from the build info is shown.
var version = ""

func printVersion(w io.Writer) {
	v := version
	if v == "" {
		v = "(devel)"
		if bi, ok := debug.ReadBuildInfo(); ok {
			if bi.Main.Version != "" {
				v = bi.Main.Version
			}
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" && len(s.Value) >= 12 {
					v += " " + s.Value[:12]
				}
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
