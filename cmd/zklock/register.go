package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/google/uuid"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

const registerUsage = `Usage: zklock register [flags] --service NAME --address A --port P -- COMMAND [ARGS...]

Registers an instance of the service NAME in curator-x-discovery's format
(as Curator's ServiceDiscovery and Spring Cloud Zookeeper do: a DYNAMIC
instance, the ephemeral node BASE/NAME/ID holding its JSON), runs COMMAND
while it is registered, and unregisters it when COMMAND exits (zklock
then exits with COMMAND's status) or when zklock is interrupted (the
signal is passed on to COMMAND, as zklock does under a lock). Java and Go
readers (zklock services, Curator's ServiceCache) see it while COMMAND
runs, and no longer once zklock is done.

The instance is kept registered through connection loss and new
sessions: when the session expires it is registered again, once, by the
next session. It is lost when it has not been registered for longer
than the session timeout (--session-timeout: the session expired and no
new session registered it again within that time, or the server refuses
it): COMMAND's process group then gets SIGTERM, SIGKILL after --grace,
and zklock exits 76. The environment of COMMAND has ZKLOCK_PATH, the
instance's node.

Flags:
  --service NAME           the service's name (required)
  --id ID                  the instance's id (default: a random UUID, as Curator's)
  --address A              the address others reach it at (required)
  --port P                 its port, 1 to 65535 (required)
  --payload-file F         the payload: F's JSON (an object, say Spring Cloud's, with
                           "@class" first, names the Java class readers instantiate)
  --base PATH              the registry's root (default /services, Spring Cloud's)
  --timeout DUR            give up registering after DUR (exit 75); default: wait
  --grace DUR              after a loss, time between SIGTERM and SIGKILL (default 5s)
  --servers HOST:PORT,...  ZooKeeper servers (default $ZK_SERVERS, else 127.0.0.1:2181)
  --namespace PATH         prefix of every path on the server
  --session-timeout DUR    ZooKeeper session timeout (default 15s)
  --auth-file FILE         authenticate with the "digest USER:PASSWORD" lines of FILE
  --acl creator|open|read  the ACL of the nodes zklock creates (as for a lock)
  --tls-ca FILE            connect over TLS, trusting only the CAs in FILE
  --tls-cert FILE, --tls-key FILE  the client certificate and key, together
  -q, --quiet              print no messages
  -v, --verbose            report progress

Exit status: COMMAND's; 64 usage error; 69 ZooKeeper unreachable or
refusing; 75 --timeout passed before the instance was registered; 76
registration lost while COMMAND ran; 126, 127 COMMAND could not be run /
was not found; 128+N zklock got signal N before COMMAND ran.

Examples:
  zklock register --service orders --address 10.0.0.5 --port 8080 -- ./orders-server
  zklock register --servers zk1:2181 --service orders --id orders-1 --address "$(hostname -f)" \
         --port 8080 --payload-file zookeeper-instance.json -- java -jar orders.jar
`

// registerOptions are register's own flags.
type registerOptions struct {
	base, service, id, address, payloadFile string
	port                                    int
}

// registerMain is `zklock register [flags] -- COMMAND [ARGS...]`: the
// lock-and-run, with the registration as the lock.
func registerMain(args []string, stdout, stderr io.Writer) int {
	o, spec, err := parseRegister(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, registerUsage)
		return exitOK
	}
	if err != nil {
		return usageError(stderr, "register: %v", err)
	}
	rep := newReporter(stderr, o.out)
	rep.secrets = longestFirst(o.conn.secrets())
	r := &runner{o: o, rep: rep, stderr: stderr}
	r.newLock = func(c *session.Client) (recipes.Locker, error) {
		d, err := discovery.New(c, discovery.WithBasePath(spec.base))
		if err != nil {
			return nil, err
		}
		return &registrar{d: d, inst: spec.inst, restore: o.conn.sessionTimeout}, nil
	}
	return r.run()
}

// registerSpec is what register registers: the instance, under base.
type registerSpec struct {
	base string
	inst discovery.Instance
}

// parseRegister parses register's command line into the run's options
// (PATH the instance's node) and what to register.
func parseRegister(args []string) (*runOptions, registerSpec, error) {
	o := &runOptions{grace: defaultGrace, backend: backendOptions{name: backendZK}}
	var ro registerOptions
	fs := registerFlags(o, &ro)
	if err := fs.Parse(args); err != nil {
		return nil, registerSpec{}, err
	}
	return registerSpecOf(args, fs, o, &ro)
}

// registerFlags is register's flag set, setting o and ro.
func registerFlags(o *runOptions, ro *registerOptions) *flag.FlagSet {
	fs := newFlagSet("zklock register")
	o.conn.register(fs)
	o.conn.registerACL(fs)
	o.out.register(fs)
	fs.StringVar(&ro.base, "base", discovery.DefaultBasePath, "")
	fs.StringVar(&ro.service, "service", "", "")
	fs.StringVar(&ro.id, "id", "", "")
	fs.StringVar(&ro.address, "address", "", "")
	fs.IntVar(&ro.port, "port", 0, "")
	fs.StringVar(&ro.payloadFile, "payload-file", "", "")
	fs.Var(durationValue{d: &o.timeout}, "timeout", "")
	fs.Var(durationValue{d: &o.grace}, "grace", "")
	return fs
}

// registerSpecOf checks register's parsed command line (args as given,
// fs parsed) and says what to register.
func registerSpecOf(args []string, fs *flag.FlagSet, o *runOptions, ro *registerOptions) (*runOptions, registerSpec, error) {
	rest := fs.Args()
	if used := len(args) - len(rest); used == 0 || args[used-1] != "--" {
		if len(rest) > 0 {
			return nil, registerSpec{}, fmt.Errorf("missing -- before COMMAND (got %q)", rest[0])
		}
		return nil, registerSpec{}, errors.New("missing -- COMMAND")
	}
	switch {
	case len(rest) == 0:
		return nil, registerSpec{}, errors.New("no COMMAND after --")
	case rest[0] == "":
		return nil, registerSpec{}, errors.New("empty COMMAND")
	case ro.service == "":
		return nil, registerSpec{}, errors.New("missing --service NAME")
	case ro.address == "":
		return nil, registerSpec{}, errors.New("missing --address A")
	case ro.port < 1 || ro.port > 65535:
		return nil, registerSpec{}, fmt.Errorf("--port %d: want 1 to 65535", ro.port)
	}
	o.argv = rest
	if err := errors.Join(o.conn.validate(), o.out.validate()); err != nil {
		return nil, registerSpec{}, err
	}
	if ro.id == "" {
		ro.id = uuid.NewString()
	}
	inst := discovery.Instance{Name: ro.service, ID: ro.id, Address: ro.address, Port: new(ro.port), Type: discovery.Dynamic}
	if ro.payloadFile != "" {
		p, err := os.ReadFile(ro.payloadFile)
		if err != nil {
			return nil, registerSpec{}, fmt.Errorf("--payload-file: %w", err)
		}
		if p = bytes.TrimSpace(p); !json.Valid(p) {
			return nil, registerSpec{}, fmt.Errorf("--payload-file %s: not JSON", ro.payloadFile)
		}
		inst.Payload = p
	}
	path, err := discovery.InstancePath(ro.base, inst)
	if err != nil {
		return nil, registerSpec{}, err
	}
	if _, err := inst.Encode(); err != nil {
		return nil, registerSpec{}, err
	}
	o.path = path
	return o, registerSpec{base: ro.base, inst: inst}, nil
}
