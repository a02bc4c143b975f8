// Package compatbench benchmarks the Redis locks of compat (redislock on
// one server, redlock over three) against their Go peers: bsm/redislock,
// go-redsync/redsync and rueidis' rueidislock, on the same local
// redis-server(s) in one run, the implementations alternating (issue 10).
// docs/benchmarks.md has the commands and the results:
//
//	cd integration
//	export ZKR_REQUIRE_INTEGRATION=1
//	go test -run '^$' -timeout 30m -bench 'CompatUncontended' -benchtime 100x ./compatbench/
//	go test -run '^$' -timeout 30m -bench 'CompatContended' -benchtime 10x ./compatbench/
//	go test -run '^$' -timeout 30m -bench 'CompatRedlockUncontended' -benchtime 100x ./compatbench/
//	go test -run '^$' -timeout 30m -bench 'CompatRedlockContended' -benchtime 10x ./compatbench/
//	go test -run '^$' -timeout 30m -bench 'CompatLossSignal' -benchtime 5x ./compatbench/
//	go test -run '^$' -timeout 30m -bench 'CompatPair' -benchtime 2x ./compatbench/
//
// Each prints its table on the standard output (lines starting with
// "=== Benchmark..."), besides the metrics on the benchmark's line.
//
// Commands sent are counted on the wire by Counter, which each client's
// dialer installs; commands executed come from INFO commandstats. The
// package is test support: nothing here is API.
package compatbench
