package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parse writes text as a go.mod and reads it back the way main does.
func parse(t *testing.T, text string) modFile {
	t.Helper()
	file := filepath.Join(t.TempDir(), "go.mod")
	require.NoError(t, os.WriteFile(file, []byte(text), 0o644))
	m, err := read("go", file)
	require.NoError(t, err)
	return m
}

func TestCheck(t *testing.T) {
	const contrib = "module github.com/zkrecipes/zkrecipes/contrib/x\n\n"
	for _, tc := range []struct {
		name, gomod string
		want        []string // a part of each expected complaint, in order
	}{
		{"root, minor release", "module github.com/zkrecipes/zkrecipes\n\ngo 1.26\n", nil},
		{"root, 1.N.0", "module github.com/zkrecipes/zkrecipes\n\ngo 1.26.0\n", nil},
		{"root, patch level", "module github.com/zkrecipes/zkrecipes\n\ngo 1.26.8\n", []string{"go 1.26.8: a patch level"}},
		{"pre-release", contrib + "go 1.27rc1\n", []string{"go 1.27rc1"}},
		{"no go line", contrib, []string{"no go line"}},
		{"contrib at the release", contrib + "go 1.26.0\n\nrequire github.com/zkrecipes/zkrecipes v0.1.0\n", nil},
		{"contrib at a placeholder", contrib + "go 1.26.0\n\nrequire github.com/zkrecipes/zkrecipes v0.0.0-00010101000000-000000000000\n",
			[]string{"requires github.com/zkrecipes/zkrecipes v0.0.0-00010101000000-000000000000"}},
		{"contrib at an older release", contrib + "go 1.26.0\n\nrequire github.com/zkrecipes/zkrecipes v0.0.9\n",
			[]string{"must require v0.1.0"}},
		{"replace into the repository", contrib + "go 1.26.0\n\nrequire github.com/zkrecipes/zkrecipes v0.1.0\n\nreplace github.com/zkrecipes/zkrecipes => ../..\n",
			[]string{"replace github.com/zkrecipes/zkrecipes => ../.."}},
		{"versioned replace elsewhere", contrib + "go 1.26\n\nreplace example.com/a v1.0.0 => example.com/b v1.0.1\n",
			[]string{"replace example.com/a@v1.0.0 => example.com/b"}},
		{"several at once", contrib + "go 1.26.1\n\nrequire github.com/zkrecipes/zkrecipes v0.2.0\n\nreplace github.com/zkrecipes/zkrecipes => ../..\n",
			[]string{"replace", "go 1.26.1", "v0.2.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := check("go.mod", parse(t, tc.gomod), "v0.1.0")
			require.Len(t, got, len(tc.want), "%q", got)
			for i, w := range tc.want {
				assert.Contains(t, got[i], w)
				assert.True(t, strings.HasPrefix(got[i], "go.mod: "), "names the file: %q", got[i])
			}
		})
	}
}

// The repository's own root go.mod reads as the rules expect: the JSON
// field names of `go mod edit -json` are the ones modFile declares.
func TestReadRoot(t *testing.T) {
	m, err := read("go", filepath.Join("..", "..", "..", "go.mod"))
	require.NoError(t, err)
	assert.Equal(t, rootPath, m.Module.Path)
	assert.NotEmpty(t, m.Go)
	assert.NotEmpty(t, m.Require)
}

func TestReadMissing(t *testing.T) {
	_, err := read("go", filepath.Join(t.TempDir(), "go.mod"))
	assert.ErrorContains(t, err, "go mod edit -json")
}
