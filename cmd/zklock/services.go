package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/session"
)

// defaultServicesTimeout is --timeout's default for services: it bounds
// the whole of it, connection included, as ls's.
const defaultServicesTimeout = defaultLsTimeout

const servicesUsage = `Usage: zklock services [flags] [NAME]

Lists the services registered in curator-x-discovery's format (Curator's
ServiceDiscovery, Spring Cloud Zookeeper, Dubbo, Druid) under the base
path: without NAME their names, one per line; with NAME the instances of
that service, one per line, in node order, fields separated by a tab:
  ID          the instance's id
  ADDRESS     its address
  PORT        its port
  SSL_PORT    its SSL port
  TYPE        DYNAMIC, DYNAMIC_SEQUENTIAL, STATIC or PERMANENT
  URI         its URI spec built (Curator's buildUriSpec)
  REGISTERED  registrationTimeUTC, as RFC 3339 UTC to the millisecond
A field that is null is "-". A node whose data is no instance is left out
and named on stderr. No base path, or a service with no instance, prints
nothing.

-o json (or --json) prints JSON Lines: without NAME {"name": NAME} for
each service; with NAME each instance's JSON as stored (on one line), a
node whose data is not JSON left out and named on stderr.

Flags:
  --base PATH              the registry's root (default /services, Spring Cloud's)
  -o, --output text|json   the output format (default text; json: JSON Lines, above);
                           --json is -o json
  --timeout DUR            give up after DUR, connecting included (default 30s; 0: never)
  --servers HOST:PORT,...  ZooKeeper servers (default $ZK_SERVERS, else 127.0.0.1:2181)
  --namespace PATH         prefix of every path on the server
  --session-timeout DUR    ZooKeeper session timeout (default 15s)
  --auth-file FILE         authenticate with the "digest USER:PASSWORD" lines of FILE
  --tls-ca FILE            connect over TLS, trusting only the CAs in FILE
  --tls-cert FILE, --tls-key FILE  the client certificate and key, together
  -q, --quiet              print no error messages
  -v, --verbose            report connection trouble

Examples:
  zklock services --servers zk1:2181
  zklock services orders | cut -f2,3
  zklock services --base /dubbo/services -o json orders | jq -r .address

Exit status:
  0    listed (or nothing to list)
  64   usage error
  69   ZooKeeper not reached within --timeout, or it refused zklock
       (credentials, ACL, TLS)
`

// servicesOptions are services' own flags.
type servicesOptions struct {
	base    string
	json    bool
	timeout time.Duration // 0: never give up
}

// servicesFlags is services' flag set, setting conn, out and so.
func servicesFlags(conn *connOptions, out *outputOptions, so *servicesOptions) *flag.FlagSet {
	fs := newFlagSet("zklock services")
	conn.register(fs)
	out.register(fs)
	fs.StringVar(&so.base, "base", discovery.DefaultBasePath, "")
	registerFormat(fs, &so.json)
	fs.Var(durationValue{d: &so.timeout}, "timeout", "give up after this long (0: never)")
	return fs
}

// servicesMain is `zklock services [flags] [NAME]`.
func servicesMain(args []string, stdout, stderr io.Writer) int {
	var conn connOptions
	var out outputOptions
	so := servicesOptions{timeout: defaultServicesTimeout}
	fs := servicesFlags(&conn, &out, &so)
	name, err := parseServices(fs, args, &so)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, servicesUsage)
		return exitOK
	}
	if err == nil {
		err = errors.Join(conn.validate(), out.validate())
	}
	if err != nil {
		return usageError(stderr, "services: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if so.timeout > 0 {
		ctx, cancel = context.WithTimeoutCause(ctx, so.timeout, timedOut{so.timeout})
		defer cancel()
	}
	client, rep, code := connectOneShot(ctx, "services", &conn, out, stderr,
		session.WithConnectionTimeout(connectionBound(so.timeout)))
	if client == nil {
		return code
	}
	defer client.Close()
	d, err := discovery.New(client, discovery.WithBasePath(so.base))
	if err != nil {
		return usageError(stderr, "services: %v", err)
	}
	if name == "" {
		names, err := d.Names(ctx)
		if err != nil {
			rep.errorf("services: %s", zkFailure(&conn, err, fmt.Sprintf("listing %s: %v", so.base, err)))
			return exitUnavailable
		}
		for _, n := range names {
			if so.json {
				line, _ := json.Marshal(struct {
					Name string `json:"name"`
				}{n}) // a string: cannot fail
				fmt.Fprintf(stdout, "%s\n", line)
				continue
			}
			fmt.Fprintln(stdout, n)
		}
		return exitOK
	}
	nodes, err := d.Nodes(ctx, name)
	if err != nil {
		rep.errorf("services: %s", zkFailure(&conn, err, fmt.Sprintf("listing service %s under %s: %v", name, so.base, err)))
		return exitUnavailable
	}
	for _, n := range nodes {
		if so.json {
			// JSON Lines: one line each, and nothing that is not JSON.
			var line bytes.Buffer
			if err := json.Compact(&line, n.Data); err != nil {
				rep.errorf("services: node %s of %s: not JSON: %v", n.Name, name, err)
				continue
			}
			fmt.Fprintf(stdout, "%s\n", line.Bytes())
			continue
		}
		inst, err := discovery.Decode(n.Data)
		if err != nil {
			rep.errorf("services: node %s of %s: %v", n.Name, name, err)
			continue
		}
		fmt.Fprintln(stdout, instanceLine(inst))
	}
	return exitOK
}

// instanceLine is one line of `zklock services NAME`.
func instanceLine(inst discovery.Instance) string {
	or := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	port := func(p *int) string {
		if p == nil {
			return "-"
		}
		return strconv.Itoa(*p)
	}
	registered := "-"
	if !inst.Registered.IsZero() {
		registered = inst.Registered.UTC().Format("2006-01-02T15:04:05.000Z")
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s", displayData([]byte(inst.ID)), or(displayData([]byte(inst.Address))),
		port(inst.Port), port(inst.SSLPort), or(string(inst.Type)), or(displayData([]byte(inst.URISpec.Build(inst, nil)))), registered)
}

// parseServices parses services' arguments: flags, an optional NAME, and
// flags again.
func parseServices(fs *flag.FlagSet, args []string, so *servicesOptions) (string, error) {
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	name := ""
	if rest := fs.Args(); len(rest) > 0 {
		name = rest[0]
		if err := fs.Parse(rest[1:]); err != nil {
			return "", err
		}
		if len(fs.Args()) > 0 {
			return "", fmt.Errorf("unexpected argument %q after NAME", fs.Args()[0])
		}
	}
	if err := session.ValidatePath(so.base); err != nil {
		return "", fmt.Errorf("--base: %v", err)
	}
	if name != "" {
		if _, err := discovery.ServicePath(so.base, name); err != nil {
			return "", fmt.Errorf("NAME: %v", err)
		}
	}
	return name, nil
}
