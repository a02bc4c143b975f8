package curator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindJar(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"curator-recipes-5.4.0.jar", "zookeeper-jute-3.8.0.jar", "zookeeper.jar", "guava-docs.jar"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "guava.jar"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ artifact, want string }{
		{"curator-recipes", filepath.Join(dir, "curator-recipes-5.4.0.jar")},
		{"zookeeper", filepath.Join(dir, "zookeeper.jar")}, // not zookeeper-jute-3.8.0.jar
		{"zookeeper-jute", filepath.Join(dir, "zookeeper-jute-3.8.0.jar")},
		{"guava", filepath.Join(other, "guava.jar")}, // guava-docs is no version
		{"curator-client", ""},
	} {
		if got := findJar([]string{dir, other}, c.artifact); got != c.want {
			t.Errorf("findJar(%s) = %q, want %q", c.artifact, got, c.want)
		}
	}
}

func TestFindToolchainNamesWhatIsMissing(t *testing.T) {
	lib := t.TempDir()
	for _, n := range []string{"curator-recipes.jar", "curator-framework-5.4.0.jar", "zookeeper.jar", "guava.jar"} {
		if err := os.WriteFile(filepath.Join(lib, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(LibEnv, lib)
	saved := debianJavaDir
	debianJavaDir = t.TempDir()
	t.Cleanup(func() { debianJavaDir = saved })

	_, err := findToolchain()
	if err == nil {
		t.Fatal("findToolchain found everything in a nearly empty directory")
	}
	for _, want := range []string{
		"curator-client.jar (Debian package libcurator-client-java)",
		"zookeeper-jute.jar (Debian package libzookeeper-java)",
		"slf4j-api.jar (Debian package libslf4j-java)",
		"failureaccess.jar", // the empty guava.jar lacks it
		lib,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	for _, found := range []string{"curator-recipes.jar (", "curator-framework.jar (", "guava.jar ("} {
		if strings.Contains(err.Error(), found) {
			t.Errorf("error %q names %q, which is there", err, found)
		}
	}
}
