package discovery_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
)

// updateGolden rewrites testdata/*.json from Curator's serializer (run
// by the agent): go test -run TestGoldenIsJackson -update ./discovery.
var updateGolden = flag.Bool("update", false, "rewrite testdata/*.json with what Curator's JsonInstanceSerializer writes")

// goldenCase is one instance, as the agent builds it in Java and as Go
// holds it; testdata/<file> is what Jackson writes for it.
type goldenCase struct {
	file string
	java curator.DiscoveryInstance
	full bool // Curator's full mode: the enabled field written
	inst discovery.Instance
}

var registered = time.UnixMilli(1764320000123).UTC()

func springPayload(t testing.TB, id, name string, meta map[string]string) json.RawMessage {
	t.Helper()
	p, err := discovery.NewPayload(discovery.SpringCloudClass, discovery.SpringCloudPayload{ID: id, Name: name, Metadata: meta})
	require.NoError(t, err)
	return p
}

func mustSpec(t testing.TB, raw string) *discovery.URISpec {
	t.Helper()
	s, err := discovery.ParseURISpec(raw)
	require.NoError(t, err)
	return s
}

// goldenCases: one per service type and payload shape, and the escapes.
func goldenCases(t testing.TB) []goldenCase {
	meta := map[string]string{"instance_status": "UP"}
	tricky := "quote\" back\\ tab\t nl\n ctl\x01\x1f <&> é \u2028 /"
	return []goldenCase{{
		file: "dynamic-spring.json",
		java: curator.DiscoveryInstance{Name: "orders", ID: "0b1f7e0c-6b7a-4c52-9a53-0d1c4f7a1e21", Address: "10.0.0.5",
			Port: new(8080), TimeMillis: registered.UnixMilli(), Type: "DYNAMIC", URISpec: "{scheme}://{address}:{port}",
			Payload: "spring", PayloadID: "orders-1", PayloadName: "orders", Metadata: meta},
		inst: discovery.Instance{Name: "orders", ID: "0b1f7e0c-6b7a-4c52-9a53-0d1c4f7a1e21", Address: "10.0.0.5",
			Port: new(8080), Payload: springPayload(t, "orders-1", "orders", meta), Registered: registered,
			Type: discovery.Dynamic, URISpec: mustSpec(t, "{scheme}://{address}:{port}")},
	}, {
		file: "dynamic-sequential.json",
		java: curator.DiscoveryInstance{Name: "billing", ID: "node-", Address: "billing.internal",
			Port: new(9000), SSLPort: new(9443), TimeMillis: registered.UnixMilli(),
			Type: "DYNAMIC_SEQUENTIAL", URISpec: "{scheme}://{address}:{ssl-port}/{name}/{id}?t={registration-time-utc}&k={service-type}{[}x{]}"},
		inst: discovery.Instance{Name: "billing", ID: "node-", Address: "billing.internal",
			Port: new(9000), SSLPort: new(9443), Registered: registered, Type: discovery.DynamicSequential,
			URISpec: mustSpec(t, "{scheme}://{address}:{ssl-port}/{name}/{id}?t={registration-time-utc}&k={service-type}{[}x{]}")},
	}, {
		file: "static-map.json",
		java: curator.DiscoveryInstance{Name: "legacy", ID: "db-1", Address: "192.0.2.7", Port: new(5432),
			TimeMillis: registered.UnixMilli(), Type: "STATIC", Payload: "map",
			Metadata: map[string]string{"role": "primary", "dc": "west"}, MetadataOrder: []string{"role", "dc"}},
		inst: discovery.Instance{Name: "legacy", ID: "db-1", Address: "192.0.2.7", Port: new(5432),
			Payload:    json.RawMessage(`{"@class":"java.util.LinkedHashMap","role":"primary","dc":"west"}`),
			Registered: registered, Type: discovery.Static},
	}, {
		file: "permanent-string.json",
		java: curator.DiscoveryInstance{Name: "docs", ID: "docs-1", Type: "PERMANENT", Payload: "string", PayloadID: tricky},
		inst: discovery.Instance{Name: "docs", ID: "docs-1", Type: discovery.Permanent, Payload: discovery.StringPayload(tricky)},
	}, {
		file: "escapes-spring.json",
		java: curator.DiscoveryInstance{Name: "ünïcode", ID: "id <1>", Address: "h\"st", Port: new(1),
			TimeMillis: registered.UnixMilli(), Type: "DYNAMIC", URISpec: "http://{address}/" + "\u00e9",
			Payload: "spring", PayloadID: tricky, PayloadName: "n", Metadata: map[string]string{"k": tricky}},
		inst: discovery.Instance{Name: "ünïcode", ID: "id <1>", Address: "h\"st", Port: new(1),
			Payload: springPayload(t, tricky, "n", map[string]string{"k": tricky}), Registered: registered,
			Type: discovery.Dynamic, URISpec: mustSpec(t, "http://{address}/\u00e9")},
	}, {
		file: "dynamic-enabled.json",
		full: true,
		java: curator.DiscoveryInstance{Name: "orders", ID: "off-1", Address: "10.0.0.6", Port: new(8080),
			TimeMillis: registered.UnixMilli(), Type: "DYNAMIC", Enabled: new(false)},
		inst: discovery.Instance{Name: "orders", ID: "off-1", Address: "10.0.0.6", Port: new(8080),
			Registered: registered, Type: discovery.Dynamic, Enabled: new(false)},
	}}
}

func readGolden(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	require.NoError(t, err, "the golden files come from Curator: go test -run TestGoldenIsJackson -update")
	return b
}

// Go's encoding of each case is byte for byte what Jackson wrote, and
// decoding Jackson's bytes gives the instance back.
func TestEncodeIsGolden(t *testing.T) {
	for _, c := range goldenCases(t) {
		t.Run(c.file, func(t *testing.T) {
			want := readGolden(t, c.file)
			got, err := c.inst.Encode()
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))

			back, err := discovery.Decode(want)
			require.NoError(t, err)
			require.Equal(t, c.inst, back)
		})
	}
}

// The golden files are what Curator 5.4's JsonInstanceSerializer writes
// (in the agent's JVM) for each case; -update rewrites them.
func TestGoldenIsJackson(t *testing.T) {
	a := curator.Start(t, sharedServers(t), curator.WithName("jackson"))
	for _, c := range goldenCases(t) {
		jackson := a.Serialize(t, c.java, c.full)
		if *updateGolden {
			require.NoError(t, os.WriteFile(filepath.Join("testdata", c.file), jackson, 0o644))
			continue
		}
		require.Equal(t, string(readGolden(t, c.file)), string(jackson), c.file)
	}
}
