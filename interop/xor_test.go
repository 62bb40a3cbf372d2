package interop_test

import (
	"bufio"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

const staleNaNBits = 0x7ff0000000000002 // Prometheus' stale marker

// xorSequence makes one chunk's samples: timestamps strictly increasing, with
// delta-of-deltas drawn from every width the XOR encoding has (0, 14, 17, 20
// bits and the 64-bit escape, both signs, at and just past each edge), and
// values from one of several regimes (counter, gauge, random bits, special
// values, bit patterns that hit the leading/trailing-zero edge cases).
func xorSequence(rng *rand.Rand, n int) (ts []int64, vs []float64) {
	// The edges of Prometheus' bitRange(dod, nbits): -(2^(n-1)-1) .. 2^(n-1).
	edges := []int64{0, 1, -1, 8191, 8192, 8193, -8191, -8192, 65535, 65536, 65537, -65535, -65536,
		524287, 524288, 524289, -524287, -524288, 1 << 30, -(1 << 30), 1 << 40}
	t := rng.Int63n(1<<42) - (1 << 41) // also before 1970
	if rng.Intn(4) == 0 {
		t = 1700000000000 + rng.Int63n(1<<30)
	}
	delta := int64(15000)
	switch rng.Intn(4) {
	case 0:
		delta = 1 + rng.Int63n(100)
	case 1:
		delta = 1 + rng.Int63n(1<<22)
	}
	regime := rng.Intn(6)
	v := rng.Float64() * 1000
	for i := 0; i < n; i++ {
		if i > 0 {
			var dod int64
			switch rng.Intn(8) {
			case 0, 1:
				dod = 0
			case 2:
				dod = edges[rng.Intn(len(edges))]
			case 3:
				dod = rng.Int63n(16384) - 8192
			case 4:
				dod = rng.Int63n(131072) - 65536
			case 5:
				dod = rng.Int63n(1048576) - 524288
			case 6:
				dod = rng.Int63n(1<<36) - (1 << 35)
			default:
				dod = rng.Int63n(11) - 5
			}
			nd := delta + dod
			if nd < 1 || nd > 1<<45 {
				nd = delta - dod // keep time moving forward
				if nd < 1 || nd > 1<<45 {
					nd = 1 + rng.Int63n(30000)
				}
			}
			delta = nd
			t += delta
		}
		switch regime {
		case 0: // counter
			if rng.Intn(10) > 0 {
				v += float64(rng.Intn(100))
			}
			if rng.Intn(50) == 0 {
				v = 0 // reset
			}
		case 1: // gauge
			v += rng.NormFloat64() * 10
		case 2: // random bits: any float64 incl. NaN payloads, denormals, infinities
			v = math.Float64frombits(rng.Uint64())
		case 3: // small integers and repeats
			if rng.Intn(3) == 0 {
				v = float64(rng.Intn(16))
			}
		case 4: // bit patterns: flip a window of bits of the previous value
			b := math.Float64bits(v)
			switch rng.Intn(5) {
			case 0:
				b ^= 1 // only the lowest bit: 63 leading zeros
			case 1:
				b ^= 1<<63 | 1 // 64 significant bits
			case 2:
				b ^= 1 << 63 // sign only: 63 trailing zeros
			case 3:
				lo := rng.Intn(64)
				w := 1 + rng.Intn(64-lo)
				b ^= (uint64(1)<<w - 1) << lo
			default:
				// unchanged: xor 0
			}
			v = math.Float64frombits(b)
		default: // mixed, with the special values
			switch rng.Intn(9) {
			case 0:
				v = math.Float64frombits(staleNaNBits)
			case 1:
				v = math.NaN()
			case 2:
				v = math.Inf(1)
			case 3:
				v = math.Inf(-1)
			case 4:
				v = math.Copysign(0, -1)
			case 5:
				v = 0
			case 6:
				v = math.Float64frombits(rng.Uint64())
			case 7:
				v = float64(rng.Intn(100000)) / 8
			default:
				// repeat
			}
		}
		ts = append(ts, t)
		vs = append(vs, v)
	}
	return ts, vs
}

// TestXorChunksByteIdentical: Ferrite's XOR encoder writes exactly the bytes
// of Prometheus' chunkenc.XORChunk for the same samples.
func TestXorChunksByteIdentical(t *testing.T) {
	ferriteBin(t)
	const seed = 20260101
	rng := rand.New(rand.NewSource(seed))
	var input strings.Builder
	var want []string
	var samples int
	lengths := []int{1, 2, 3, 120, 240}
	for c := 0; c < 400; c++ {
		n := 1 + rng.Intn(240)
		if c < len(lengths) {
			n = lengths[c]
		}
		ts, vs := xorSequence(rng, n)
		chunk := chunkenc.NewXORChunk()
		app, err := chunk.Appender()
		if err != nil {
			t.Fatal(err)
		}
		for i := range ts {
			app.Append(0, ts[i], vs[i]) // XOR stores no start timestamp
			fmt.Fprintf(&input, "%d %016x\n", ts[i], math.Float64bits(vs[i]))
		}
		input.WriteString("\n")
		samples += n
		want = append(want, fmt.Sprintf("%x", chunk.Bytes()))
	}
	file := filepath.Join(t.TempDir(), "samples.txt")
	if err := os.WriteFile(file, []byte(input.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runFerrite(t, "debug", "xor-encode", file)
	var got []string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			got = append(got, line)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("ferrite printed %d chunks, want %d (input %s)", len(got), len(want), file)
	}
	bad := 0
	for i := range want {
		if got[i] != want[i] {
			bad++
			if bad <= 5 {
				t.Errorf("chunk %d (seed %d) differs at hex digit %d:\n ferrite    %s\n prometheus %s",
					i, seed, firstDiff(got[i], want[i]), got[i], want[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d chunks differ", bad, len(want))
	}
	t.Logf("%d chunks, %d samples", len(want), samples)
}

func firstDiff(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
