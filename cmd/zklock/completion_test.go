package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// The completion scripts parse (bash -n, zsh -n), and bash completes
// with them what they are for: a subcommand, a flag, a flag's words,
// the words of completion's argument, and a flag's value not taken for
// the subcommand.
func TestCompletion(t *testing.T) {
	dir := t.TempDir()
	for _, shell := range completionShells {
		code, p := runZklock(t, "completion", shell)
		require.Equal(t, exitOK, code, "stderr: %s", p.stderr)
		script := filepath.Join(dir, shell)
		require.NoError(t, os.WriteFile(script, []byte(p.stdout.String()), 0o600))
		bin, err := exec.LookPath(shell)
		if err != nil {
			harness.Unavailable(t, "%s: %v (make deps installs it)", shell, err)
		}
		out, err := exec.Command(bin, "-n", script).CombinedOutput()
		require.NoError(t, err, "%s -n: %s", shell, out)
	}

	for _, tc := range []struct {
		words []string // the command line, the last word being completed
		want  string   // COMPREPLY, space separated
	}{
		{[]string{"zklock", "wa"}, "watch"},
		{[]string{"zklock", "comp"}, "completion"},
		{[]string{"zklock", "completion", ""}, "bash zsh"},
		{[]string{"zklock", "--backend", "redis-s"}, "redis-sentinel"},
		{[]string{"zklock", "ls", "-o", "j"}, "json"},
		{[]string{"zklock", "ls", "--tim"}, "--timeout"},
		{[]string{"zklock", "watch", "--js"}, "--json"},
		{[]string{"zklock", "--acl", "op"}, "open"},
		{[]string{"zklock", "--servers", "ls", "/x", "--tr"}, "--try"}, // ls is --servers' value
		{[]string{"zklock", "/x", "--semaph"}, "--semaphore"},
	} {
		line := strings.Join(tc.words, " ")
		var quoted []string
		for _, w := range tc.words {
			quoted = append(quoted, "'"+w+"'")
		}
		cmd := exec.Command("bash", "-c", `source "$1"; COMP_WORDS=(`+strings.Join(quoted, " ")+`); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _zklock; echo "${COMPREPLY[*]}"`,
			"bash", filepath.Join(dir, "bash"))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s: %s", line, out)
		assert.Equal(t, tc.want, strings.TrimSpace(string(out)), line)
	}

	code, p := runZklock(t, "completion", "fish")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, p.stderr.String(), "completion: want one shell: bash or zsh")
}

// zklock --version and zklock version print the same line.
func TestVersionFlag(t *testing.T) {
	code, p := runZklock(t, "--version")
	require.Equal(t, exitOK, code, "stderr: %s", p.stderr)
	assert.Regexp(t, `^zklock \S+`, p.stdout.String())
	code, v := runZklock(t, "version")
	require.Equal(t, exitOK, code)
	assert.Equal(t, v.stdout.String(), p.stdout.String())
	code, p = runZklock(t, "--version", "x")
	assert.Equal(t, exitUsage, code, "stderr: %s", p.stderr)
}
