package harness

import (
	"strings"
	"testing"
)

// StartZKExtended gives t a standalone local ZooKeeper that allows TTL
// nodes (zookeeper.extendedTypesEnabled=true, set from zoo.cfg: the server
// turns a key it does not know into the system property "zookeeper." +
// key), stopped by t.Cleanup. StartZK's servers run without it, as
// ZooKeeper does by default. Servers from ZK_SERVERS or a ZKSource cannot
// be configured so: then t is ended by Unavailable.
func StartZKExtended(t testing.TB) *ZK {
	t.Helper()
	in, err := findZKInstall()
	if err != nil {
		skipOrFail(t, "zookeeper with extended types", err)
	}
	launch := func() (*ZK, error) {
		ensemble, err := freeZKPorts(1)
		if err != nil {
			return nil, err
		}
		return startLocalZKWith(in, ensemble, func(int) []zkPorts { return ensemble },
			func(int) string { return "extendedTypesEnabled=true\n" })
	}
	z, err := launch()
	if err != nil && strings.Contains(err.Error(), "Address already in use") {
		z, err = launch() // another process took a port between freePorts and the bind
	}
	if err != nil {
		skipOrFail(t, "zookeeper with extended types", err)
	}
	z.closeAtCleanup(t)
	return z
}
