package curator

import (
	"encoding/hex"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"testing"
)

// DiscoveryInstance is an instance as the agent builds a curator-x-discovery
// ServiceInstance from it (CuratorDiscovery.java). Nil pointers and empty
// strings are Java nulls (Name and ID must be set).
type DiscoveryInstance struct {
	Name, ID, Address string
	Port, SSLPort     *int
	TimeMillis        int64
	Type              string // DYNAMIC, DYNAMIC_SEQUENTIAL, STATIC, PERMANENT; "" null
	URISpec           string // UriSpec's template ("{scheme}://{address}:{port}"); "" null
	// Payload is none (""), "spring" (Spring Cloud's ZookeeperInstance of
	// PayloadID, PayloadName and Metadata, a HashMap), "map" (a
	// LinkedHashMap of Metadata in MetadataOrder) or "string" (the String
	// PayloadID).
	Payload                string
	PayloadID, PayloadName string
	Metadata               map[string]string
	MetadataOrder          []string // the order of Metadata's keys for "map"; nil: sorted
	// Enabled is the instance's enabled flag (Java's default true when
	// nil); Curator writes it only in full mode.
	Enabled *bool
}

// words is the instance as the agent's KEY=VALUE words.
func (d DiscoveryInstance) words(base string) string {
	kv := func(k, v string) string { return " " + k + "=" + url.QueryEscape(v) }
	null := func(s string) string {
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
	s := kv("name", d.Name) + kv("id", d.ID) + kv("address", null(d.Address)) + kv("port", port(d.Port)) +
		kv("sslPort", port(d.SSLPort)) + kv("time", strconv.FormatInt(d.TimeMillis, 10)) +
		kv("type", null(d.Type)) + kv("uri", null(d.URISpec))
	if base != "" {
		s = kv("base", base) + s
	}
	if d.Payload != "" {
		s += kv("payload", d.Payload) + kv("pid", null(d.PayloadID)) + kv("pname", null(d.PayloadName))
	}
	keys := d.MetadataOrder
	if keys == nil {
		keys = slices.Sorted(maps.Keys(d.Metadata))
	}
	for _, k := range keys {
		s += kv("meta."+k, d.Metadata[k])
	}
	if d.Enabled != nil {
		s += kv("enabled", strconv.FormatBool(*d.Enabled))
	}
	return s
}

// Serialize returns the bytes curator-x-discovery's JsonInstanceSerializer
// writes for the instance: in its default compatible mode, or with full
// (compatibleSerializationMode false, the enabled field written).
func (a *Agent) Serialize(t testing.TB, d DiscoveryInstance, full bool) []byte {
	t.Helper()
	mode := "compat"
	if full {
		mode = "full"
	}
	cmd := "disc-serialize" + d.words("") + " mode=" + mode
	items := a.List(t, cmd, "json")
	if len(items) != 1 {
		t.Fatalf("%s: reply to %q: want one JSON, got %d\n%s", a.name, cmd, len(items), a.report())
	}
	return a.unhex(t, cmd, items[0])
}

// Register registers the instance under base with Curator's
// ServiceDiscovery.registerService.
func (a *Agent) Register(t testing.TB, base string, d DiscoveryInstance) {
	t.Helper()
	a.DoExpect(t, "disc-register"+d.words(base), "registered")
}

// Unregister unregisters the instance Register registered under base
// with that id.
func (a *Agent) Unregister(t testing.TB, base, id string) {
	t.Helper()
	a.DoExpect(t, fmt.Sprintf("disc-unregister %s %s", base, id), "unregistered")
}

// ServiceNames returns Curator's queryForNames under base, sorted.
func (a *Agent) ServiceNames(t testing.TB, base string) []string {
	t.Helper()
	return a.List(t, "disc-names "+base, "names")
}

// QueryInstances returns Curator's queryForInstances of name under base,
// in id order, each as JsonInstanceSerializer writes it in full mode (so
// every field Java read, enabled included, is in it).
func (a *Agent) QueryInstances(t testing.TB, base, name string) [][]byte {
	t.Helper()
	cmd := fmt.Sprintf("disc-query %s %s", base, name)
	return a.hexList(t, cmd)
}

// StartServiceCache starts a Curator ServiceCache of name under base,
// closing the one the agent ran before.
func (a *Agent) StartServiceCache(t testing.TB, base, name string) {
	t.Helper()
	a.DoExpect(t, fmt.Sprintf("disc-cache %s %s", base, name), "ok")
}

// ServiceCacheInstances returns the ServiceCache's getInstances, as
// QueryInstances does.
func (a *Agent) ServiceCacheInstances(t testing.TB) [][]byte {
	t.Helper()
	return a.hexList(t, "disc-cache-view")
}

// CloseServiceCache closes the agent's ServiceCache.
func (a *Agent) CloseServiceCache(t testing.TB) {
	t.Helper()
	a.DoExpect(t, "disc-cache-close", "closed")
}

func (a *Agent) hexList(t testing.TB, cmd string) [][]byte {
	t.Helper()
	items := a.List(t, cmd, "instances")
	out := make([][]byte, 0, len(items))
	for _, it := range items {
		out = append(out, a.unhex(t, cmd, it))
	}
	return out
}

func (a *Agent) unhex(t testing.TB, cmd, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("%s: reply to %q: %v\n%s", a.name, cmd, err, a.report())
	}
	return b
}
