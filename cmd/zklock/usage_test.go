package main

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
)

// Usage errors exit 64 with a message naming the problem; none needs a
// server (port 1 has none), since arguments are checked first.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"no arguments", nil, "missing PATH"},
		{"missing --", []string{"/lock"}, "missing -- COMMAND after PATH"},
		{"command without --", []string{"/lock", "true"}, `missing -- between PATH and COMMAND (got "true" after PATH)`},
		{"no command", []string{"/lock", "--"}, "no COMMAND after --"},
		{"relative path", []string{"lock", "--", "true"}, `invalid PATH: path "lock": not absolute`},
		{"trailing slash", []string{"/lock/", "--", "true"}, `invalid PATH: path "/lock/": trailing slash`},
		{"empty segment", []string{"/a//b", "--", "true"}, `invalid PATH: path "/a//b": empty segment`},
		{"root", []string{"/", "--", "true"}, "the root / cannot be a lock path"},
		{"negative timeout", []string{"--timeout", "-1s", "/lock", "--", "true"}, `invalid value "-1s" for flag --timeout: negative duration`},
		{"negative grace", []string{"--grace=-2s", "/lock", "--", "true"}, `invalid value "-2s" for flag --grace: negative duration`},
		{"zero session timeout", []string{"--session-timeout", "0", "/lock", "--", "true"}, "for flag --session-timeout: must be positive"},
		{"session timeout over the protocol's limit", []string{"--session-timeout", "600h", "/lock", "--", "true"},
			"for flag --session-timeout: must be at most 596h31m23.647s"},
		{"sub-millisecond session timeout", []string{"--session-timeout", "0.5ms", "/lock", "--", "true"},
			"for flag --session-timeout: must be at least 1ms"},
		{"timeout rounding to forever", []string{"--timeout", "0.1ns", "/lock", "--", "true"},
			`invalid value "0.1ns" for flag --timeout: rounds to 0`},
		{"timeout in seconds rounding to forever", []string{"--timeout", "0.0000000001", "/lock", "--", "true"},
			`invalid value "0.0000000001" for flag --timeout: rounds to 0`},
		{"bad duration", []string{"--timeout", "soon", "/lock", "--", "true"}, `invalid value "soon" for flag --timeout: not a duration`},
		{"empty servers", []string{"--servers", "", "/lock", "--", "true"}, "empty --servers"},
		{"empty server", []string{"--servers", "127.0.0.1:1,", "/lock", "--", "true"}, "empty server address"},
		{"unknown flag", []string{"--bogus", "/lock", "--", "true"}, "flag provided but not defined: --bogus"},
		{"flag after PATH", []string{"/lock", "--bogus", "--", "true"}, "flag provided but not defined: --bogus"},
		{"quiet and verbose", []string{"-q", "-v", "/lock", "--", "true"}, "-q and -v cannot be used together"},
		{"read and write", []string{"--read", "--write", "/lock", "--", "true"}, "zklock: --read and --write cannot be used together"},
		{"read and exclusive after PATH", []string{"--read", "/lock", "--exclusive", "--", "true"}, "zklock: --read and --exclusive cannot be used together"},
		{"write and exclusive", []string{"--exclusive", "--write", "/lock", "--", "true"}, "zklock: --write and --exclusive cannot be used together"},
		{"all three kinds", []string{"--read", "--write", "--exclusive", "/lock", "--", "true"}, "zklock: --read, --write and --exclusive cannot be used together"},
		{"kind flag for ls", []string{"ls", "--read", "/lock"}, "flag provided but not defined: --read"},
		{"bad namespace", []string{"--namespace", "ns", "/lock", "--", "true"}, `invalid --namespace: path "ns": not absolute`},
		{"bad server port", []string{"--servers", "127.0.0.1:99999", "/lock", "--", "true"}, `invalid --servers: server address "127.0.0.1:99999": bad port "99999"`},
		{"ls without PATH", []string{"ls"}, "ls: missing PATH"},
		{"ls relative PATH", []string{"ls", "lock"}, `ls: invalid PATH: path "lock": not absolute`},
		{"ls extra argument", []string{"ls", "/lock", "extra"}, `ls: unexpected argument "extra" after PATH`},
		{"version with argument", []string{"version", "x"}, "version takes no arguments"},
		{"watch without PATH", []string{"watch"}, "watch: missing PATH"},
		{"watch relative PATH", []string{"watch", "lock"}, `watch: invalid PATH: path "lock": not absolute`},
		{"watch extra argument", []string{"watch", "/x", "extra"}, `watch: unexpected argument "extra" after PATH`},
		{"watch --children and --node", []string{"watch", "--children", "/x", "--node"}, "watch: --children and --node cannot be used together"},
		{"watch three depths", []string{"watch", "--depth", "2", "--children", "--node", "/x"}, "watch: --depth, --children and --node cannot be used together"},
		{"watch negative depth", []string{"watch", "--depth", "-1", "/x"}, "watch: --depth -1: want 0 or more"},
		{"watch depth not a number", []string{"watch", "--depth", "all", "/x"}, `watch: invalid value "all" for flag --depth`},
		{"watch negative timeout", []string{"watch", "--timeout", "-1s", "/x"}, `invalid value "-1s" for flag --timeout: negative duration`},
		{"watch lock-only flag", []string{"watch", "--acl", "open", "/x"}, "flag provided but not defined: --acl"},
		{"watch bad server port", []string{"watch", "--servers", "127.0.0.1:99999", "/x"}, `watch: invalid --servers: server address "127.0.0.1:99999": bad port "99999"`},
		{"services extra argument", []string{"services", "a", "b"}, `services: unexpected argument "b" after NAME`},
		{"services name with slash", []string{"services", "a/b"}, `services: NAME: discovery: recipes: invalid argument: service name "a/b" has a '/'`},
		{"services relative base", []string{"services", "--base", "svc"}, `services: --base: session: recipes: invalid argument: path "svc": not absolute`},
		{"services unknown format", []string{"services", "-o", "yaml"}, `invalid value "yaml" for flag -o: unknown format "yaml": text or json`},
		{"services negative timeout", []string{"services", "--timeout", "-1s"}, `invalid value "-1s" for flag --timeout: negative duration`},
		{"register without --service", []string{"register", "--address", "a", "--port", "1", "--", "true"}, "register: missing --service NAME"},
		{"register without --address", []string{"register", "--service", "s", "--port", "1", "--", "true"}, "register: missing --address A"},
		{"register without --port", []string{"register", "--service", "s", "--address", "a", "--", "true"}, "register: --port 0: want 1 to 65535"},
		{"register port too big", []string{"register", "--service", "s", "--address", "a", "--port", "65536", "--", "true"}, "register: --port 65536: want 1 to 65535"},
		{"register without --", []string{"register", "--service", "s", "--address", "a", "--port", "1", "true"}, `register: missing -- before COMMAND (got "true")`},
		{"register without COMMAND", []string{"register", "--service", "s", "--address", "a", "--port", "1", "--"}, "register: no COMMAND after --"},
		{"register id with slash", []string{"register", "--service", "s", "--id", "a/b", "--address", "a", "--port", "1", "--", "true"}, `register: discovery: recipes: invalid argument: instance id "a/b" has a '/'`},
		{"register relative base", []string{"register", "--base", "svc", "--service", "s", "--address", "a", "--port", "1", "--", "true"}, `register: discovery: recipes: invalid argument: base path: session: recipes: invalid argument: path "svc": not absolute`},
		{"register missing payload file", []string{"register", "--service", "s", "--address", "a", "--port", "1", "--payload-file", "/nonexistent/p.json", "--", "true"}, "register: --payload-file: open /nonexistent/p.json: no such file or directory"},
		{"subcommand as PATH", []string{"/x", "watch"}, `missing -- between PATH and COMMAND (got "watch" after PATH)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if !strings.Contains(strings.Join(args, " "), "--servers") {
				args = append([]string{"--servers", "127.0.0.1:1"}, args...)
				if len(tc.args) > 0 && (tc.args[0] == "ls" || tc.args[0] == "watch" || tc.args[0] == "services" || tc.args[0] == "register") {
					args = append([]string{tc.args[0], "--servers", "127.0.0.1:1"}, tc.args[1:]...)
				}
				if len(tc.args) > 0 && tc.args[0] == "version" {
					args = tc.args
				}
			}
			code, p := runZklock(t, args...)
			assert.Equal(t, 64, code)
			assert.True(t, strings.HasPrefix(p.stderr.String(), "zklock: "), "%q", p.stderr)
			assert.Contains(t, p.stderr.String(), tc.msg)
			assert.Contains(t, p.stderr.String(), "Usage: zklock [flags] PATH -- COMMAND [ARGS...]")
			assert.Empty(t, p.stdout.String())
		})
	}
}

func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		code, p := runZklock(t, args...)
		assert.Equal(t, 0, code, "%v", args)
		out := p.stdout.String()
		assert.Contains(t, out, "Usage: zklock [flags] PATH -- COMMAND [ARGS...]")
		assert.Contains(t, out, "Examples:")
		assert.Contains(t, out, "--timeout")
		assert.Contains(t, out, "ZKLOCK_TOKEN")
		for _, flag := range []string{"--read", "--write", "--exclusive"} {
			assert.Contains(t, out, "\n  "+flag+" ", "the flag is described")
			assert.Contains(t, out, "\n  zklock "+flag+" ", "an example uses the flag")
		}
		assert.Contains(t, out, "(contended)")
		for _, flag := range []string{"--backend", "--dsn", "--listen-dsn", "--table", "--ttl"} {
			assert.Contains(t, out, "\n  "+flag+" ", "the flag is described")
		}
		assert.Contains(t, out, "zk|redis|redis-cluster|redis-sentinel|redlock|memcached|postgres|mysql")
		assert.Contains(t, out, "\n  zklock --backend postgres --dsn ", "an example uses the flag")
	}
	code, p := runZklock(t, "ls", "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, p.stdout.String(), "Usage: zklock ls [flags] PATH")
	assert.Contains(t, p.stdout.String(), "\n  KIND ")
	assert.Contains(t, p.stdout.String(), "leader (--leader), semaphore (--semaphore N)")
	assert.Contains(t, p.stdout.String(), "\n  HELD ")
	assert.Contains(t, p.stdout.String(), "its waiters create no nodes")

	code, p = runZklock(t, "watch", "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, p.stdout.String(), "Usage: zklock watch [flags] PATH")
	assert.Contains(t, p.stdout.String(), "\n  KIND ")
	assert.Contains(t, p.stdout.String(), `{"type":"initialized"}`)

	code, p = runZklock(t, "version")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(p.stdout.String(), "zklock "), "%q", p.stdout)
}

// Every flag of the lock-and-run is in the usage text and in the package
// documentation, and ls's and watch's in their own usage.
func TestEveryFlagDocumented(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	var inUsage, inDoc, inLs []string
	fs, _, _ := runFlags(&runOptions{}, &kindFlags{})
	fs.VisitAll(func(f *flag.Flag) {
		name := "--" + f.Name
		if len(f.Name) == 1 {
			name = "-" + f.Name
		}
		if !strings.Contains(usageText, name+" ") && !strings.Contains(usageText, name+",") {
			inUsage = append(inUsage, name)
		}
		if !strings.Contains(string(doc), name+" ") && !strings.Contains(string(doc), name+",") {
			inDoc = append(inDoc, name)
		}
	})
	var conn connOptions
	var out outputOptions
	fs = newFlagSet("zklock ls")
	conn.register(fs)
	out.register(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if len(f.Name) > 1 && !strings.Contains(lsUsage, "--"+f.Name+" ") && !strings.Contains(lsUsage, "--"+f.Name+",") {
			inLs = append(inLs, "--"+f.Name)
		}
	})
	assert.Empty(t, inUsage, "flags missing from zklock --help")
	assert.Empty(t, inDoc, "flags missing from doc.go")
	assert.Empty(t, inLs, "flags missing from zklock ls --help")

	var inWatch []string
	var children, node bool
	watchFlags(&watchOptions{}, &children, &node).VisitAll(func(f *flag.Flag) {
		if len(f.Name) > 1 && !strings.Contains(watchUsage, "--"+f.Name+" ") && !strings.Contains(watchUsage, "--"+f.Name+",") {
			inWatch = append(inWatch, "--"+f.Name)
		}
	})
	assert.Empty(t, inWatch, "flags missing from zklock watch --help")
}

// The ACL rule the help (so doc.go) shows is the one
// redislock gives, and the help's rule for a sentinel's user is the one
// TestSentinelAuth grants.
func TestDocACLRule(t *testing.T) {
	assert.Contains(t, usageText, "\n  "+redislock.ACLRule("app:")+"\n")
	assert.Contains(t, usageText, "\n  "+sentinelACLRule+"\n")
}

// COMMAND inherits zklock's environment, the secrets zklock reads in it
// included, and the usage text and doc.go name every one of them.
func TestCommandInheritsTheSecrets(t *testing.T) {
	vars := []string{redisPasswordEnv, sentinelPasswordEnv, dsnEnv, listenDSNEnv, "PGPASSWORD"}
	doc, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	for where, text := range map[string]string{"zklock --help": usageText, "doc.go": string(doc)} {
		i := strings.Index(text, "COMMAND inherits")
		require.GreaterOrEqual(t, i, 0, "%s says what COMMAND inherits", where)
		para, _, _ := strings.Cut(text[i:], "\n\n")
		para, _, _ = strings.Cut(para, "\n//\n")
		para = strings.Join(strings.Fields(strings.ReplaceAll(para, "//", "")), " ")
		for _, v := range vars {
			assert.Contains(t, para, "$"+v, "%s: %q", where, para)
		}
	}
	assert.False(t, strings.Contains(string(doc), "--tls-cert alone"), "doc.go: --tls-cert needs --tls-key")

	var env []string
	var script strings.Builder
	for _, v := range vars {
		env = append(env, v+"=value-of-"+v)
		script.WriteString(`echo "$` + v + `"; `)
	}
	code, p := runZklockEnv(t, env, "--servers", zkServers(t), lockPath(t), "--", "sh", "-c", script.String())
	require.Equal(t, exitOK, code, "stderr: %s", p.stderr)
	for _, v := range vars {
		assert.Contains(t, p.stdout.String(), "value-of-"+v+"\n")
	}
}
