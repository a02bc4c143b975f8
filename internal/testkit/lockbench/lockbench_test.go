package lockbench

import (
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	if m := Median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median of 3 1 2 = %v", m)
	}
	if m := Median([]time.Duration{4, 1, 3, 2}); m != 3 {
		t.Errorf("median of 4 1 3 2 = %v, want the upper middle", m)
	}
	if m := Median[int64](nil); m != 0 {
		t.Errorf("median of none = %v", m)
	}
	xs := []float64{2, 1}
	Median(xs)
	if xs[0] != 2 {
		t.Error("Median sorted its argument")
	}
}

func TestQuantile(t *testing.T) {
	xs := make([]float64, 100)
	for i := range xs {
		xs[i] = float64(100 - i)
	}
	if q := Quantile(xs, 0.99); q != 99 {
		t.Errorf("p99 of 1..100 = %v", q)
	}
	if q := Quantile(xs, 0.5); q != 50 {
		t.Errorf("p50 of 1..100 = %v", q)
	}
	if q := Quantile(xs, 0); q != 1 {
		t.Errorf("p0 of 1..100 = %v", q)
	}
	if q := Quantile[int64](nil, 0.5); q != 0 {
		t.Errorf("quantile of none = %v", q)
	}
}
