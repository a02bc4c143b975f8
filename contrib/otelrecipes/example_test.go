package otelrecipes_test

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/zkrecipes/zkrecipes/contrib/otelrecipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// prometheusMetrics wires a Trace to Prometheus: OTel's Prometheus exporter
// is the MeterProvider's reader, and serves what it reads through the
// returned handler (mount it on /metrics). Shut the MeterProvider down at
// the end.
func prometheusMetrics() (http.Handler, *locktrace.Trace, *sdkmetric.MeterProvider, error) {
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(
		otelprom.WithRegisterer(reg),
		// Shorter series, for the example's output; keep the scope labels
		// in a service if other libraries report to the same registry.
		otelprom.WithoutScopeInfo(),
	)
	if err != nil {
		return nil, nil, nil, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	t, err := otelrecipes.New(otelrecipes.WithMeterProvider(mp))
	if err != nil {
		_ = mp.Shutdown(context.Background())
		return nil, nil, nil, err
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), t, mp, nil
}

// Example serves the metrics of a Trace on /metrics for Prometheus. A
// service would attach the Trace to its clients and locks, and listen:
//
//	cli, err := session.Connect(ctx, servers, session.WithTrace(t)) // and session.WithClientTrace(ct)
//	http.Handle("/metrics", handler)
//	log.Fatal(http.ListenAndServe(":9464", nil))
//
// Here no server is contacted: the hooks are fed what a contended
// acquisition of 250ms, held for 2s, would report, and the handler is
// scraped once.
func Example() {
	handler, t, mp, err := prometheusMetrics()
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = mp.Shutdown(context.Background()) }()

	lock := locktrace.LockID{Backend: "zookeeper", Kind: "mutex", Name: "/locks/jobs"}
	start := time.Now()
	t.AcquireStart(locktrace.AcquireStartInfo{ID: 1, Lock: lock, Start: start, Context: context.Background()})
	t.AcquireQueued(locktrace.AcquireQueuedInfo{ID: 1, Lock: lock})
	t.AcquireDone(locktrace.AcquireDoneInfo{ID: 1, Lock: lock, Outcome: locktrace.OutcomeAcquired,
		Waited: 250 * time.Millisecond, Contended: true, Token: 7, HasToken: true})
	t.LeaseEnd(locktrace.LeaseEndInfo{Lock: lock, Held: 2 * time.Second, Cause: locktrace.EndReleased,
		Token: 7, HasToken: true})

	srv := httptest.NewServer(handler)
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		for _, p := range []string{
			"zkrecipes_lock_acquire_duration_seconds_count",
			"zkrecipes_lock_acquire_duration_seconds_sum",
			"zkrecipes_lock_hold_duration_seconds_sum",
			"zkrecipes_lock_held{",
		} {
			if strings.HasPrefix(line, p) {
				fmt.Println(line)
			}
		}
	}
	// Output:
	// zkrecipes_lock_acquire_duration_seconds_sum{contended="true",lock_backend="zookeeper",lock_kind="mutex",outcome="acquired",reentered="false",try="false"} 0.25
	// zkrecipes_lock_acquire_duration_seconds_count{contended="true",lock_backend="zookeeper",lock_kind="mutex",outcome="acquired",reentered="false",try="false"} 1
	// zkrecipes_lock_held{lock_backend="zookeeper",lock_kind="mutex"} 0
	// zkrecipes_lock_hold_duration_seconds_sum{end_cause="released",lock_backend="zookeeper",lock_kind="mutex"} 2
}
