package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Where a Debian-style install keeps ZooKeeper; variables so that tests of the
// harness can pretend nothing is installed.
var (
	debianZKJar     = "/usr/share/java/zookeeper.jar"
	debianSLF4JSimp = "/usr/share/java/slf4j-simple.jar"
)

// zkInstall is a local ZooKeeper that can be run with java.
type zkInstall struct {
	java      string
	classpath string
	logback   string // logback config of a release tarball, "" for Debian
}

// findZKInstall looks for java and ZooKeeper's jars: $ZOOKEEPER_HOME/lib (a
// release tarball) first, then Debian's /usr/share/java/zookeeper.jar, whose
// manifest names its dependencies. The error wraps ErrUnavailable.
func findZKInstall() (*zkInstall, error) {
	java := ""
	if h := os.Getenv("JAVA_HOME"); h != "" {
		if p := filepath.Join(h, "bin", "java"); isFile(p) {
			java = p
		}
	}
	if java == "" {
		p, err := exec.LookPath("java")
		if err != nil {
			return nil, unavailablef("no java on PATH")
		}
		java = p
	}
	if home := os.Getenv("ZOOKEEPER_HOME"); home != "" {
		jars, _ := filepath.Glob(filepath.Join(home, "lib", "zookeeper-*.jar"))
		if len(jars) == 0 {
			return nil, unavailablef("ZOOKEEPER_HOME=%s has no lib/zookeeper-*.jar", home)
		}
		in := &zkInstall{java: java, classpath: filepath.Join(home, "lib") + "/*"}
		if p := filepath.Join(home, "conf", "logback.xml"); isFile(p) {
			in.logback = p
		}
		return in, nil
	}
	if !isFile(debianZKJar) {
		return nil, unavailablef("no %s", debianZKJar)
	}
	cp := []string{debianZKJar}
	if isFile(debianSLF4JSimp) { // a logger binding, so the log goes to a file
		cp = append(cp, debianSLF4JSimp)
	}
	return &zkInstall{java: java, classpath: strings.Join(cp, string(os.PathListSeparator))}, nil
}

// zkPorts are the Loopback ports of one member, and whether it observes.
type zkPorts struct {
	client, peer, election int
	observer               bool // listed as server.N=...:observer, and non-voting
}

// zooCfg renders the zoo.cfg of a member with data in dataDir. With one
// member and no peers it is a standalone server; otherwise every member of
// ensemble is listed as server.N (N = index+1), an observer with its
// ":observer" suffix, and an observer itself says peerType=observer.
func zooCfg(dataDir string, own zkPorts, ensemble []zkPorts) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=200\n")
	fmt.Fprintf(&b, "initLimit=50\n") // 10s to connect to and sync with a leader
	fmt.Fprintf(&b, "syncLimit=10\n") // 2s until a silent follower is dropped
	fmt.Fprintf(&b, "minSessionTimeout=400\nmaxSessionTimeout=60000\n")
	fmt.Fprintf(&b, "dataDir=%s\n", dataDir)
	fmt.Fprintf(&b, "clientPort=%d\nclientPortAddress=%s\n", own.client, Loopback)
	fmt.Fprintf(&b, "4lw.commands.whitelist=*\nadmin.enableServer=false\n")
	fmt.Fprintf(&b, "forceSync=no\npreAllocSize=1024\nmaxClientCnxns=0\n")
	if len(ensemble) > 1 {
		if own.observer {
			fmt.Fprintf(&b, "peerType=observer\n")
		}
		for i, p := range ensemble {
			role := ""
			if p.observer {
				role = ":observer"
			}
			fmt.Fprintf(&b, "server.%d=%s:%d:%d%s\n", i+1, Loopback, p.peer, p.election, role)
		}
	}
	return b.String()
}

// BenchJVMEnv, when set (to anything), starts ZooKeeper with the JVM's full
// JIT, as a production server runs, instead of the quick-to-start C1-only
// JVM the tests use. `make bench` sets it.
const BenchJVMEnv = "ZKR_BENCH_JVM"

// zkMemberDir lays out the directory of member id (1-based) under root and
// returns the process that runs it. ensemble holds the ports of all members
// as this member is to reach them (an observer's view of the voters may go
// through proxies); its own are ensemble[id-1].
func zkMemberDir(in *zkInstall, root string, id int, ensemble []zkPorts) (*process, error) {
	dir := filepath.Join(root, fmt.Sprintf("member%d", id))
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(data, "myid"), []byte(fmt.Sprintf("%d\n", id)), 0o644); err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfg, []byte(zooCfg(data, ensemble[id-1], ensemble)), 0o644); err != nil {
		return nil, err
	}
	zkLog := filepath.Join(dir, "zookeeper.log")
	argv := []string{in.java, "-Xmx256m", "-Xms32m", "-XX:+UseSerialGC"}
	if os.Getenv(BenchJVMEnv) == "" {
		argv = append(argv, "-XX:TieredStopAtLevel=1") // C1 only: starts fast, runs slower
	}
	argv = append(argv,
		"-XX:-UsePerfData", "-XX:+ExitOnOutOfMemoryError",
		"-Djava.net.preferIPv4Stack=true",
		"-Dznode.container.checkIntervalMs=1000",
		"-Dzookeeper.jmx.log4j.disable=true",
		"-Dzookeeper.log.dir="+dir,
		"-Dorg.slf4j.simpleLogger.logFile="+zkLog,
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
	)
	if in.logback != "" {
		argv = append(argv, "-Dlogback.configurationFile="+in.logback)
	}
	argv = append(argv, "-cp", in.classpath, "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg)
	return &process{
		name:      fmt.Sprintf("zookeeper member %d", id),
		argv:      argv,
		dir:       dir,
		logPath:   filepath.Join(dir, "stdout.log"),
		extraLogs: []string{zkLog},
	}, nil
}

// isFile reports whether path names an existing regular file.
func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}
