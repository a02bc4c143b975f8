package lockbench

import (
	"runtime"
	"runtime/metrics"
	"syscall"
	"testing"
	"time"
)

// cost is what this process spent: CPU time (user and system), heap
// allocations and goroutines started (each a hop: one more goroutine to
// wake, on a loaded machine one more wait for a CPU).
type cost struct {
	cpu        time.Duration
	allocs     uint64
	goroutines uint64
}

// goroutinesCreated is the runtime's count of goroutines started.
const goroutinesCreated = "/sched/goroutines-created:goroutines"

func costNow() cost {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	started := []metrics.Sample{{Name: goroutinesCreated}}
	metrics.Read(started)
	var g uint64
	if started[0].Value.Kind() == metrics.KindUint64 {
		g = started[0].Value.Uint64()
	}
	return cost{
		cpu:        time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		allocs:     ms.Mallocs,
		goroutines: g,
	}
}

// ClientCost alternates the implementations round by round, as SideBySide
// does, and reports each one's median CPU time, heap allocations and
// goroutines started per operation of this process: the client's cost, for implementations that
// run in this process (the server, and a JVM peer, run in others). Every
// goroutine of the process counts, so nothing else may run meanwhile.
func ClientCost(b *testing.B, names []string, round func(impl int) (ops int, err error)) {
	b.Helper()
	cpu := make([][]float64, len(names))
	allocs := make([][]float64, len(names))
	started := make([][]float64, len(names))
	for r := 0; b.Loop(); r++ {
		for k := range names {
			i := (r + k) % len(names)
			before := costNow()
			ops, err := round(i)
			if err != nil {
				b.Fatal(err)
			}
			after := costNow()
			cpu[i] = append(cpu[i], (after.cpu-before.cpu).Seconds()/float64(ops))
			allocs[i] = append(allocs[i], float64(after.allocs-before.allocs)/float64(ops))
			started[i] = append(started[i], float64(after.goroutines-before.goroutines)/float64(ops))
		}
	}
	for i, name := range names {
		b.ReportMetric(Median(cpu[i])*1e6, name+"-cpu-µs/op")
		b.ReportMetric(Median(allocs[i]), name+"-allocs/op")
		b.ReportMetric(Median(started[i]), name+"-goroutines/op")
		if i > 0 {
			b.ReportMetric(Median(cpu[i])/Median(cpu[0]), name+"-cpu/"+names[0])
		}
	}
}
