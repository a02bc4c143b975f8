package curator

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Hint says how to get what Available needs, for harness.Unavailable.
const Hint = "install Curator and a JDK (Debian/Ubuntu: apt-get install libcurator-recipes-java " +
	"openjdk-17-jdk-headless), or set CURATOR_LIB to a directory holding Curator 5's jars and " +
	"their dependencies and JAVA_HOME to a JDK"

// LibEnv names a directory of jars searched before /usr/share/java.
const LibEnv = "CURATOR_LIB"

// debianJavaDir is where Debian's java library packages put their jars (a
// variable for tests).
var debianJavaDir = "/usr/share/java"

// mainClass is the agent's class; CuratorLock.java declares it.
const mainClass = "CuratorLock"

// agentSources are the agent's Java files: CuratorLock.java and the
// classes it uses (CuratorCaches.java), compiled together.
//
//go:embed *.java
var agentSources embed.FS

// compileTimeout bounds javac.
const compileTimeout = 2 * time.Minute

// required are the artifacts the agent needs at compile and run time, with
// the Debian package that has each.
var required = []struct{ artifact, pkg string }{
	{"curator-recipes", "libcurator-recipes-java"},
	{"curator-framework", "libcurator-framework-java"},
	{"curator-client", "libcurator-client-java"},
	{"zookeeper", "libzookeeper-java"},
	{"zookeeper-jute", "libzookeeper-java"},
	{"guava", "libguava-java"},
	{"slf4j-api", "libslf4j-java"},
}

// failureAccessClass is Guava's class that lives in a separate failureaccess
// jar upstream; Debian's guava.jar includes it.
const failureAccessClass = "com/google/common/util/concurrent/internal/InternalFutureFailureAccess.class"

// toolchain is what running the agent needs.
type toolchain struct {
	java, javac string
	classpath   []string // jars
}

var (
	findOnce sync.Once
	found    *toolchain
	findErr  error

	buildOnce sync.Once
	classDir  string
	buildErr  error
)

// Available returns nil when java, javac and the jars the agent needs are
// installed, and otherwise an error naming what is missing (see Hint). It
// does not compile anything.
func Available() error {
	_, err := discover()
	return err
}

func discover() (*toolchain, error) {
	findOnce.Do(func() { found, findErr = findToolchain() })
	return found, findErr
}

func findToolchain() (*toolchain, error) {
	var problems, jars []string
	tc := &toolchain{}
	var err error
	if tc.java, tc.javac, err = findJDK(); err != nil {
		problems = append(problems, err.Error())
	}
	dirs := []string{debianJavaDir}
	if d := os.Getenv(LibEnv); d != "" {
		dirs = append([]string{d}, dirs...)
	}
	var guava string
	for _, r := range required {
		jar := findJar(dirs, r.artifact)
		if jar == "" {
			jars = append(jars, fmt.Sprintf("%s.jar (Debian package %s)", r.artifact, r.pkg))
			continue
		}
		if r.artifact == "guava" {
			guava = jar
		}
		tc.classpath = append(tc.classpath, jar)
	}
	// Guava 27+ needs failureaccess: a jar of its own, or inside guava.jar.
	if guava != "" && !jarHas(guava, failureAccessClass) {
		if fa := findJar(dirs, "failureaccess"); fa != "" {
			tc.classpath = append(tc.classpath, fa)
		} else {
			jars = append(jars, fmt.Sprintf("failureaccess.jar (%s lacks %s)", guava, failureAccessClass))
		}
	}
	// Optional: a logger for Curator's and ZooKeeper's warnings (to stderr);
	// without one slf4j prints a notice and drops them.
	if j := findJar(dirs, "slf4j-simple"); j != "" {
		tc.classpath = append(tc.classpath, j)
	}
	if len(jars) > 0 {
		problems = append(problems, fmt.Sprintf("no %s in %s", strings.Join(jars, ", "), strings.Join(dirs, " or ")))
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("curator agent cannot be built: %s", strings.Join(problems, "; "))
	}
	return tc, nil
}

// findJDK returns java and javac from $JAVA_HOME/bin, else from PATH.
func findJDK() (java, javac string, err error) {
	if h := os.Getenv("JAVA_HOME"); h != "" {
		java, javac = filepath.Join(h, "bin", "java"), filepath.Join(h, "bin", "javac")
		if isExec(java) && isExec(javac) {
			return java, javac, nil
		}
		return "", "", fmt.Errorf("no java and javac in JAVA_HOME=%s/bin (it must be a JDK, not a JRE)", h)
	}
	java, jerr := exec.LookPath("java")
	javac, cerr := exec.LookPath("javac")
	if jerr != nil || cerr != nil {
		return "", "", errors.New("no java and javac on PATH (a JDK: Debian package openjdk-17-jdk-headless)")
	}
	return java, javac, nil
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// findJar returns the first dirs/artifact.jar, or else dirs/artifact-<version>.jar
// (version starting with a digit), or "".
func findJar(dirs []string, artifact string) string {
	for _, d := range dirs {
		p := filepath.Join(d, artifact+".jar")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
		matches, _ := filepath.Glob(filepath.Join(d, artifact+"-[0-9]*.jar"))
		for _, m := range matches {
			if st, err := os.Stat(m); err == nil && st.Mode().IsRegular() {
				return m
			}
		}
	}
	return ""
}

// jarHas reports whether the jar holds the named entry.
func jarHas(jar, name string) bool {
	r, err := zip.OpenReader(jar)
	if err != nil {
		return false
	}
	defer r.Close()
	for _, f := range r.File {
		if f.Name == name {
			return true
		}
	}
	return false
}

// build compiles the agent once per process and returns the toolchain and
// the directory holding CuratorLock.class.
func build() (*toolchain, string, error) {
	tc, err := discover()
	if err != nil {
		return nil, "", err
	}
	buildOnce.Do(func() { classDir, buildErr = compile(tc) })
	return tc, classDir, buildErr
}

// compile puts the compiled agent in a directory keyed by the source, javac
// and classpath: under the user's cache dir, reused by later test processes,
// or (when there is none) in a fresh temp dir of this process. A directory
// only gets its final name once complete, so concurrent test processes
// never see half a build.
func compile(tc *toolchain) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n", tc.javac, strings.Join(tc.classpath, string(os.PathListSeparator)))
	srcs, err := sources()
	if err != nil {
		return "", err
	}
	for _, src := range srcs {
		fmt.Fprintf(h, "%s %d\n", src.name, len(src.text))
		h.Write(src.text)
	}
	final := ""
	if cache, err := os.UserCacheDir(); err == nil {
		base := filepath.Join(cache, "zkrecipes")
		if os.MkdirAll(base, 0o700) == nil {
			final = filepath.Join(base, "curator-agent-"+hex.EncodeToString(h.Sum(nil))[:16])
		}
	}
	if final != "" && isFile(filepath.Join(final, mainClass+".class")) {
		return final, nil
	}
	parent := "" // os.TempDir
	if final != "" {
		parent = filepath.Dir(final)
	}
	work, err := os.MkdirTemp(parent, "curator-agent-build-")
	if err != nil {
		return "", fmt.Errorf("curator agent: %w", err)
	}
	if err := javac(tc, work, srcs); err != nil {
		os.RemoveAll(work)
		return "", err
	}
	if final == "" {
		return work, nil
	}
	if err := os.Rename(work, final); err != nil {
		os.RemoveAll(work)
		if isFile(filepath.Join(final, mainClass+".class")) {
			return final, nil // another test process finished first
		}
		return "", fmt.Errorf("curator agent: %w", err)
	}
	return final, nil
}

// source is one of the agent's Java files.
type source struct {
	name string
	text []byte
}

// sources returns the embedded Java files in name order (embed.FS lists
// them sorted).
func sources() ([]source, error) {
	entries, err := agentSources.ReadDir(".")
	if err != nil {
		return nil, fmt.Errorf("curator agent: %w", err)
	}
	srcs := make([]source, 0, len(entries))
	for _, e := range entries {
		text, err := agentSources.ReadFile(e.Name())
		if err != nil {
			return nil, fmt.Errorf("curator agent: %w", err)
		}
		srcs = append(srcs, source{e.Name(), text})
	}
	return srcs, nil
}

// javac compiles the embedded sources into dir.
func javac(tc *toolchain, dir string, srcs []source) error {
	var files []string
	for _, src := range srcs {
		p := filepath.Join(dir, src.name)
		if err := os.WriteFile(p, src.text, 0o644); err != nil {
			return fmt.Errorf("curator agent: %w", err)
		}
		files = append(files, p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), compileTimeout)
	defer cancel()
	args := append([]string{"-proc:none", "-encoding", "UTF-8", "-nowarn", "-d", dir,
		"-cp", strings.Join(tc.classpath, string(os.PathListSeparator))}, files...)
	cmd := exec.CommandContext(ctx, tc.javac, args...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return fmt.Errorf("curator agent: javac did not finish within %v\n%s", compileTimeout, out)
	}
	if err != nil {
		return fmt.Errorf("curator agent: %s %s: %v\n%s", tc.javac, strings.Join(files, " "), err, out)
	}
	if !isFile(filepath.Join(dir, mainClass+".class")) {
		return fmt.Errorf("curator agent: javac made no %s.class\n%s", mainClass, out)
	}
	return nil
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
