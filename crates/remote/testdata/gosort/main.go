// Command gosort prints the orders Go's slices.SortFunc gives the inputs
// of crates/remote/src/gosort.rs' test orders_like_go (a hash of each), the
// reference for Ferrite's replay of Go's sort. It calls Go's internal
// pdqsortCmpFunc (to choose the limit too), so it runs next to a copy of
// Go's own file:
//
//	cd crates/remote/testdata/gosort && tmp=$(mktemp -d) && cp main.go "$tmp" &&
//	sed 's/^package slices/package main/' "$(go env GOROOT)/src/slices/zsortanyfunc.go" >"$tmp/z.go" &&
//	(cd "$tmp" && go mod init gosort >/dev/null 2>&1 && go run .) >go_orders.txt
//
// A limit of -1 is slices.SortFunc's own (bits.Len(n)).
package main

import (
	"fmt"
	"math"
	"math/bits"
	"runtime"
)

// As in Go's slices/sort.go, which zsortanyfunc.go needs.
type sortedHint int

const (
	unknownHint sortedHint = iota
	increasingHint
	decreasingHint
)

type xorshift uint64

func (r *xorshift) Next() uint64 {
	*r ^= *r << 13
	*r ^= *r >> 7
	*r ^= *r << 17
	return uint64(*r)
}

func nextPowerOfTwo(length int) uint { return 1 << bits.Len(uint(length)) }

type item struct {
	k  float64
	id uint32
}

type sm struct{ s uint64 }

func (r *sm) next() uint64 {
	r.s += 0x9E3779B97F4A7C15
	z := r.s
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

func gen(n, pattern int) []item {
	r := &sm{s: uint64(n*31 + pattern)}
	v := make([]item, n)
	for i := range v {
		var k float64
		switch pattern {
		case 0:
			k = float64(r.next() % uint64(n/3+1))
		case 1:
			k = float64(i / 2)
		case 2:
			k = float64(n - i)
		case 3:
			k = 1
		case 4:
			if r.next()%4 == 0 {
				k = math.NaN()
			} else {
				k = float64(r.next() % 10)
			}
		case 5:
			k = float64(i % 7)
		case 6:
			k = float64(i)
		case 7:
			k = float64(r.next() % 1000000)
		}
		v[i] = item{k, uint32(i)}
	}
	if pattern == 6 && n > 1 {
		for s := 0; s < 3; s++ {
			a, b := int(r.next()%uint64(n)), int(r.next()%uint64(n))
			v[a], v[b] = v[b], v[a]
		}
	}
	return v
}

func main() {
	cmp := func(a, b item) int {
		if a.k < b.k {
			return -1
		} else if a.k > b.k {
			return 1
		}
		return 0
	}
	fmt.Printf("# %s: n pattern limit FNV-1a-64(ids in sorted order)\n", runtime.Version())
	for _, n := range []int{0, 1, 5, 12, 13, 20, 49, 50, 51, 64, 100, 257, 1000} {
		for p := 0; p < 8; p++ {
			for _, lim := range []int{-1, 0, 1, 2} {
				if lim >= 0 && n < 50 {
					continue
				}
				v := gen(n, p)
				l := lim
				if l < 0 {
					l = bits.Len(uint(n))
				}
				pdqsortCmpFunc(v, 0, n, l, cmp)
				h := uint64(0xcbf29ce484222325)
				for _, it := range v {
					for b := 0; b < 4; b++ {
						h ^= uint64(byte(it.id >> (8 * b)))
						h *= 0x100000001b3
					}
				}
				fmt.Printf("%d %d %d 0x%016x\n", n, p, lim, h)
			}
		}
	}
}
