package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/session"
)

// Defaults of the flags.
const (
	defaultServers        = "127.0.0.1:2181"
	defaultSessionTimeout = session.DefaultSessionTimeout
	defaultGrace          = 5 * time.Second
)

// connOptions are the flags that say how to reach ZooKeeper.
type connOptions struct {
	servers        string
	namespace      string
	sessionTimeout time.Duration
	authFile       string       // --auth-file
	creds          []digestCred // read from authFile by validate
	tls            tlsOptions   // also Redis's: see backendOptions.tls
	acl            string       // --acl (the run only: ls creates nothing); validate sets the default
}

func (c *connOptions) register(fs *flag.FlagSet) {
	def := os.Getenv("ZK_SERVERS")
	if def == "" {
		def = defaultServers
	}
	fs.StringVar(&c.servers, "servers", def, "ZooKeeper servers, comma separated")
	fs.StringVar(&c.namespace, "namespace", "", "prefix of every path on the server")
	c.sessionTimeout = defaultSessionTimeout
	fs.Var(durationValue{d: &c.sessionTimeout, min: time.Millisecond, max: session.MaxSessionTimeout},
		"session-timeout", "ZooKeeper session timeout (the server clamps it to its own limits)")
	fs.StringVar(&c.authFile, "auth-file", "", "ZooKeeper: authenticate with the \"digest USER:PASSWORD\" lines of FILE")
	c.tls.register(fs)
}

// registerACL adds --acl, which only the lock-and-run takes.
func (c *connOptions) registerACL(fs *flag.FlagSet) {
	fs.StringVar(&c.acl, "acl", "", "ZooKeeper: the ACL of the nodes zklock creates: creator, open or read "+
		"(default creator with --auth-file, else open)")
}

// serverList splits --servers; the addresses themselves are checked by
// session.Connect.
func (c *connOptions) serverList() ([]string, error) {
	if strings.TrimSpace(c.servers) == "" {
		return nil, errors.New("empty --servers: give at least one HOST:PORT")
	}
	var out []string
	for _, s := range strings.Split(c.servers, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, fmt.Errorf("--servers %q: empty server address", c.servers)
		}
		out = append(out, s)
	}
	return out, nil
}

// validate checks the flags and reads the files they name (ZooKeeper's
// only: zk is the backend, or ls).
func (c *connOptions) validate() error {
	if _, err := c.serverList(); err != nil {
		return err
	}
	if c.namespace != "" {
		if err := session.ValidatePath(c.namespace); err != nil {
			return fmt.Errorf("invalid --namespace: %s", invalidReason(err))
		}
	}
	if c.authFile != "" {
		creds, err := readAuthFile(c.authFile)
		if err != nil {
			return err
		}
		c.creds = creds
	}
	if err := validateACL(&c.acl, c.authFile); err != nil {
		return err
	}
	return c.tls.validate()
}

// secrets are the credentials of --auth-file, masked in every message.
func (c *connOptions) secrets() []string {
	var out []string
	for _, cr := range c.creds {
		out = append(out, cr.user+":"+cr.password, cr.password)
	}
	return out
}

// outputOptions are -q and -v.
type outputOptions struct {
	quiet, verbose bool
}

func (o *outputOptions) register(fs *flag.FlagSet) {
	fs.BoolVar(&o.quiet, "q", false, "print no messages")
	fs.BoolVar(&o.quiet, "quiet", false, "print no messages")
	fs.BoolVar(&o.verbose, "v", false, "report progress")
	fs.BoolVar(&o.verbose, "verbose", false, "report progress")
}

func (o *outputOptions) validate() error {
	if o.quiet && o.verbose {
		return errors.New("-q and -v cannot be used together")
	}
	return nil
}

// runOptions is a parsed `zklock [flags] PATH -- COMMAND [ARGS...]`.
type runOptions struct {
	conn      connOptions
	out       outputOptions
	timeout   time.Duration // 0: wait forever
	progress  time.Duration // -v: how often a wait is reported; 0: never
	grace     time.Duration
	try       bool
	backend   backendOptions
	kind      lockKind
	maxLeases int // --semaphore N
	data      string
	dataSet   bool // --data was given (possibly empty)
	path      string
	argv      []string
}

// newFlagSet returns a flag set that reports errors to its caller only.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseRun parses the lock-and-run command line. The error is a usage
// error, or flag.ErrHelp for -h/--help.
func parseRun(args []string) (*runOptions, error) {
	o := &runOptions{grace: defaultGrace, progress: defaultProgress}
	var kinds kindFlags
	fs, bs, takers := runFlags(o, &kinds)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return nil, errors.New("missing PATH")
	}
	o.path, rest = rest[0], rest[1:]
	if err := validateLockPath(o.path); err != nil {
		return nil, err
	}
	// Flags may also come between PATH and "--".
	sawDash := false
	if len(rest) > 0 {
		if rest[0] == "--" {
			sawDash, rest = true, rest[1:]
		} else {
			if err := fs.Parse(rest); err != nil {
				return nil, err
			}
			used := len(rest) - len(fs.Args())
			sawDash = used > 0 && rest[used-1] == "--"
			rest = fs.Args()
		}
	}
	if !sawDash {
		if len(rest) > 0 {
			return nil, fmt.Errorf("missing -- between PATH and COMMAND (got %q after PATH)", rest[0])
		}
		return nil, errors.New("missing -- COMMAND after PATH")
	}
	if len(rest) == 0 {
		return nil, errors.New("no COMMAND after --")
	}
	if rest[0] == "" {
		return nil, errors.New("empty COMMAND")
	}
	o.argv = rest
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	o.dataSet = set["data"]
	b, err := pick(bs, o.backend.name)
	if err != nil {
		return nil, err
	}
	if err := takers.check(b.name(), set); err != nil {
		return nil, err
	}
	if err := b.validate(set); err != nil {
		return nil, err
	}
	if err := o.out.validate(); err != nil {
		return nil, err
	}
	kind, err := kinds.kind()
	if err != nil {
		return nil, err
	}
	o.kind, o.maxLeases = kind, kinds.semaphore
	return o, nil
}

// runFlags is the flag set of the lock-and-run, setting o and kinds, with
// the backends and the flags each takes.
func runFlags(o *runOptions, kinds *kindFlags) (*flag.FlagSet, []backend, backendFlags) {
	fs := newFlagSet("zklock")
	o.out.register(fs)
	fs.Var(durationValue{d: &o.timeout}, "timeout", "stop waiting after this long (0: forever)")
	fs.Var(durationValue{d: &o.progress}, "progress", "with -v: report a wait that goes on this often (0: never)")
	fs.Var(durationValue{d: &o.grace}, "grace", "time between SIGTERM and SIGKILL after the lock is lost")
	fs.BoolVar(&o.try, "try", false, "fail at once if the lock is held")
	fs.StringVar(&o.data, "data", "", "stored in the lock node (default HOSTNAME:PID)")
	fs.StringVar(&o.backend.name, "backend", backendZK, "where the lock lives: "+backendNames)
	bs := o.backends(kinds)
	return fs, bs, registerBackends(fs, bs)
}

// validateLockPath checks a lock path given on the command line.
func validateLockPath(p string) error {
	if err := session.ValidatePath(p); err != nil {
		msg := "invalid PATH: " + invalidReason(err)
		if p == "ls" || p == "watch" || p == "version" || p == "completion" {
			msg += "; subcommands come first: zklock " + p + " [flags] ..."
		}
		return errors.New(msg)
	}
	if p == "/" {
		return errors.New("invalid PATH: the root / cannot be a lock path")
	}
	return nil
}

// invalidReason is a session.ErrInvalidArgument error's message without the
// sentinel's own text.
func invalidReason(err error) string {
	return strings.TrimPrefix(err.Error(), session.ErrInvalidArgument.Error()+": ")
}

// durationValue is a flag.Value for a non-negative duration, given as a Go
// duration ("500ms", "2m") or as plain seconds ("10", "0.5"). A value that is
// not zero but rounds to zero nanoseconds is refused: 0 means "forever" for
// some flags, and a positive duration must never mean that.
type durationValue struct {
	d        *time.Duration
	min, max time.Duration // when set: the range allowed (min > 0 refuses 0)
}

func (v durationValue) String() string {
	if v.d == nil {
		return ""
	}
	return v.d.String()
}

func (v durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		switch {
		case ferr != nil || math.IsNaN(f) || math.IsInf(f, 0):
			return errors.New("not a duration (examples: 500ms, 10s, 2m, or 10 for seconds)")
		case math.Abs(f) > float64(math.MaxInt64)/float64(time.Second):
			return errors.New("duration too large")
		}
		d = time.Duration(f * float64(time.Second))
	}
	switch {
	case d < 0:
		return errors.New("negative duration")
	case d == 0 && strings.ContainsAny(s, "123456789"):
		return errors.New("rounds to 0 (durations have nanosecond resolution)")
	case d == 0 && v.min > 0:
		return errors.New("must be positive")
	case d < v.min:
		return fmt.Errorf("must be at least %v", v.min)
	case v.max > 0 && d > v.max:
		return fmt.Errorf("must be at most %v", v.max)
	}
	*v.d = d
	return nil
}
