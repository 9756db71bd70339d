package loadgen

import (
	"math"
	"math/bits"
	"time"
)

// Histogram records durations with a relative error below 1/128 (0.8%):
// values under 128 ns are exact, larger ones fall in one of 128 linear
// sub-buckets of their power of two (the layout of an HDR histogram with
// two significant digits). Count, Min, Max and Mean are exact. The zero
// value is ready to use; it is not safe for concurrent use (give each
// goroutine its own and Merge them).
type Histogram struct {
	counts [histBuckets]uint64
	n      uint64
	sum    float64
	min    time.Duration
	max    time.Duration
}

const (
	subBits     = 7
	subCount    = 1 << subBits // 128
	histBuckets = (64 - subBits + 1) * subCount
)

func bucketOf(v uint64) int {
	if v < subCount {
		return int(v)
	}
	e := bits.Len64(v) - subBits - 1 // v>>e is in [128, 255]
	return (e+1)*subCount + int(v>>e) - subCount
}

// bucketBounds returns the smallest and largest value of bucket i.
func bucketBounds(i int) (lo, hi uint64) {
	if i < subCount {
		return uint64(i), uint64(i)
	}
	e := i/subCount - 1
	m := uint64(i%subCount + subCount)
	lo = m << e
	return lo, lo + (uint64(1) << e) - 1
}

// Record adds one duration (negative counts as zero).
func (h *Histogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[bucketOf(uint64(d))]++
	if h.n == 0 || d < h.min {
		h.min = d
	}
	if d > h.max {
		h.max = d
	}
	h.n++
	h.sum += float64(d)
}

// Merge adds o's records to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// Count returns the number of records.
func (h *Histogram) Count() uint64 { return h.n }

// Max returns the largest record (exact).
func (h *Histogram) Max() time.Duration { return h.max }

// Min returns the smallest record (exact).
func (h *Histogram) Min() time.Duration { return h.min }

// Mean returns the mean of the records (exact up to float rounding).
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n))
}

// Quantile returns the nearest-rank q-quantile (0 < q <= 1): the smallest
// recorded value v such that at least q of the records are <= v, within
// the histogram's precision (the bucket's upper bound, clamped to the
// exact min and max).
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	if rank > h.n {
		rank = h.n
	}
	var seen uint64
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		seen += c
		if seen >= rank {
			_, hi := bucketBounds(i)
			v := time.Duration(hi)
			if v > h.max {
				v = h.max
			}
			if v < h.min {
				v = h.min
			}
			return v
		}
	}
	return h.max
}

// NearestRank returns the nearest-rank q-quantile of sorted (ascending)
// values, exactly; 0 when empty.
func NearestRank(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(q * float64(len(sorted))))
	if rank < 1 {
		rank = 1
	}
	if rank > len(sorted) {
		rank = len(sorted)
	}
	return sorted[rank-1]
}
