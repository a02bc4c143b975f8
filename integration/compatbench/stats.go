package compatbench

import (
	"bufio"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// CommandStats reads INFO commandstats of every server and sums the calls
// by command: what Redis executed, the commands scripts ran inside it
// included, INFO too (scripts may call it): take what ran between two
// readings with Executed, which leaves out the readings' own INFO.
func CommandStats(ctx context.Context, servers ...*redis.Client) (Counts, error) {
	sum := Counts{ByName: map[string]int64{}}
	for _, r := range servers {
		text, err := r.Info(ctx, "commandstats", "cpu").Result()
		if err != nil {
			return Counts{}, err
		}
		c, err := parseCommandStats(text)
		if err != nil {
			return Counts{}, err
		}
		cpu, err := parseCPU(text)
		if err != nil {
			return Counts{}, err
		}
		c.CPU = cpu
		sum = sum.Add(c)
	}
	return sum, nil
}

// Executed is what the servers executed between the readings e0 and e1 of
// CommandStats over them: e1 − e0, less the INFO that read e0 on each
// (a reading's own INFO is counted once it has run).
func Executed(e0, e1 Counts, servers int) Counts {
	d := e1.Sub(e0)
	if d.ByName["INFO"] -= int64(servers); d.ByName["INFO"] == 0 {
		delete(d.ByName, "INFO")
	}
	d.Total -= int64(servers)
	return d
}

// parseCommandStats reads lines like
// "cmdstat_evalsha:calls=12,usec=80,usec_per_call=6.67,rejected_calls=0,failed_calls=0".
func parseCommandStats(text string) (Counts, error) {
	c := Counts{ByName: map[string]int64{}}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		rest, ok := strings.CutPrefix(line, "cmdstat_")
		if !ok {
			continue
		}
		name, fields, ok := strings.Cut(rest, ":")
		if !ok {
			return Counts{}, fmt.Errorf("commandstats line %q", line)
		}
		name = strings.ToUpper(name)
		for f := range strings.SplitSeq(fields, ",") {
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return Counts{}, fmt.Errorf("commandstats line %q: %w", line, err)
				}
				c.ByName[name] += n
				c.Total += n
			}
		}
	}
	return c, sc.Err()
}

// parseCPU reads the server's CPU time so far (used_cpu_sys and
// used_cpu_user, the main thread and the others) from INFO cpu.
func parseCPU(text string) (time.Duration, error) {
	var total float64
	found := 0
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok || (k != "used_cpu_sys" && k != "used_cpu_user") {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("INFO cpu %s: %w", k, err)
		}
		total += f
		found++
	}
	if found != 2 {
		return 0, fmt.Errorf("INFO cpu: used_cpu_sys and used_cpu_user not found")
	}
	return time.Duration(total * float64(time.Second)), sc.Err()
}

// Mean of xs (0 for none).
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// Breakdown formats counts per operation by name, largest first, as
// "EVALSHA 2.00 SUBSCRIBE 0.01".
func Breakdown(c Counts, per int) string {
	type kv struct {
		k string
		v int64
	}
	var all []kv
	for k, v := range c.ByName {
		all = append(all, kv{k, v})
	}
	slices.SortFunc(all, func(a, b kv) int {
		if a.v != b.v {
			return int(b.v - a.v)
		}
		return strings.Compare(a.k, b.k)
	})
	var sb strings.Builder
	for i, e := range all {
		if i > 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "%s %.3g", e.k, float64(e.v)/float64(per))
	}
	return sb.String()
}
