// Package blockfiles is the Prometheus side of `ferrite debug block-files`:
// it writes chunk segment files, tombstones and meta.json from a text spec
// with Prometheus' own writers, and dumps them with Prometheus' own readers,
// in the same text forms as ferrite (crates/block/src/text.rs):
//
// Chunks spec: `segment_size N` (optional, first), then `write E:HEX ...` per
// chunks.Writer.WriteChunks call. Writing prints `ref SEG:OFF` per chunk. The
// dump is `segments N`, then per segment `segment I NAME size BYTES` and one
// `chunk SEG:OFF enc E len N HEX` per chunk read at successive offsets from
// 8 with Reader.ChunkOrIterable, or `bad SEG:OFF` (ending that segment) when
// it fails.
//
// Tombstones spec and dump: `REF MINT MAXT` lines (MemTombstones.AddInterval
// in order); the dump lists what tombstones.ReadTombstones returns in ref
// order and ends with `# intervals N`.
//
// Meta spec and dump: `ulid`, `min_time`, `max_time`, `num_samples`,
// `num_float_samples`, `num_histogram_samples`, `num_series`, `num_chunks`,
// `num_tombstones`, `level`, `source U` (repeated), `deletable`,
// `parent U MIN MAX` (repeated), `failed`, `hint HEX` (repeated), `version`.
package blockfiles

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/oklog/ulid/v2"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/tsdb/tombstones"
)

// Main runs the command line; it returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	usage := "usage: promblockfiles dump-chunks DIR | write-chunks SPEC DIR | dump-tombstones FILE | " +
		"write-tombstones SPEC FILE | dump-meta FILE | write-meta SPEC FILE"
	if len(args) < 2 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	var out string
	var err error
	readSpec := func() string {
		b, e := os.ReadFile(args[1])
		if e != nil {
			err = e
		}
		return string(b)
	}
	switch {
	case args[0] == "dump-chunks" && len(args) == 2:
		out, err = DumpChunks(args[1])
	case args[0] == "write-chunks" && len(args) == 3:
		if s := readSpec(); err == nil {
			out, err = WriteChunks(s, args[2])
		}
	case args[0] == "dump-tombstones" && len(args) == 2:
		out, err = DumpTombstones(args[1])
	case args[0] == "write-tombstones" && len(args) == 3:
		if s := readSpec(); err == nil {
			err = WriteTombstones(s, args[2])
		}
	case args[0] == "dump-meta" && len(args) == 2:
		out, err = DumpMeta(args[1])
	case args[0] == "write-meta" && len(args) == 3:
		if s := readSpec(); err == nil {
			err = WriteMeta(s, args[2])
		}
	default:
		fmt.Fprintln(stderr, usage)
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "promblockfiles:", err)
		return 1
	}
	fmt.Fprint(stdout, out)
	return 0
}

type specLine struct {
	n     int
	words []string
}

func specLines(spec string) []specLine {
	var out []specLine
	for i, l := range strings.Split(spec, "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		out = append(out, specLine{i + 1, strings.Fields(t)})
	}
	return out
}

func (l specLine) errorf(format string, a ...any) error {
	return fmt.Errorf("spec line %d (%q): %s", l.n, strings.Join(l.words, " "), fmt.Sprintf(format, a...))
}

// ---- chunks ----

// WriteChunks writes the chunks of spec into dir with chunks.Writer and
// returns the `ref` lines.
func WriteChunks(spec, dir string) (string, error) {
	segSize := int64(chunks.DefaultChunkSegmentSize)
	var groups [][]chunks.Meta
	for _, l := range specLines(spec) {
		switch {
		case l.words[0] == "segment_size" && len(l.words) == 2 && len(groups) == 0:
			n, err := strconv.ParseInt(l.words[1], 10, 64)
			if err != nil || n <= 0 {
				return "", l.errorf("bad segment size")
			}
			segSize = n
		case l.words[0] == "write":
			g := []chunks.Meta{}
			for _, w := range l.words[1:] {
				e, h, ok := strings.Cut(w, ":")
				if !ok {
					return "", l.errorf("chunk is not <encoding>:<hex>")
				}
				enc, err := strconv.ParseUint(e, 10, 8)
				if err != nil {
					return "", l.errorf("bad encoding")
				}
				data, err := hex.DecodeString(h)
				if err != nil {
					return "", l.errorf("bad hex")
				}
				c, err := chunkenc.FromData(chunkenc.Encoding(enc), data)
				if err != nil {
					return "", l.errorf("%v", err)
				}
				g = append(g, chunks.Meta{Chunk: c})
			}
			groups = append(groups, g)
		default:
			return "", l.errorf("unknown line")
		}
	}
	w, err := chunks.NewWriter(dir, chunks.WithSegmentSize(segSize))
	if err != nil {
		return "", err
	}
	var out strings.Builder
	for _, g := range groups {
		if err := w.WriteChunks(g...); err != nil {
			w.Close()
			return "", err
		}
		for _, m := range g {
			s, o := chunks.BlockChunkRef(m.Ref).Unpack()
			fmt.Fprintf(&out, "ref %d:%d\n", s, o)
		}
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	return out.String(), nil
}

// segmentFiles lists the files chunks.NewDirReader takes, in its order.
func segmentFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if _, err := strconv.ParseUint(e.Name(), 10, 64); err == nil {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// DumpChunks dumps a chunks directory through chunks.NewDirReader.
func DumpChunks(dir string) (string, error) {
	r, err := chunks.NewDirReader(dir, nil)
	if err != nil {
		return "", err
	}
	defer r.Close()
	names, err := segmentFiles(dir)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	fmt.Fprintf(&out, "segments %d\n", len(names))
	for i, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&out, "segment %d %s size %d\n", i, name, len(b))
		for off := chunks.SegmentHeaderSize; off < len(b); {
			ref := chunks.NewBlockChunkRef(uint64(i), uint64(off))
			c, _, err := r.ChunkOrIterable(chunks.Meta{Ref: chunks.ChunkRef(ref)})
			if err != nil {
				fmt.Fprintf(&out, "bad %d:%d\n", i, off)
				break
			}
			// The reader succeeded, so a length field ends within 5 bytes here.
			_, n := binary.Uvarint(b[off:min(off+chunks.MaxChunkLengthFieldSize, len(b))])
			data := c.Bytes()
			fmt.Fprintf(&out, "chunk %d:%d enc %d len %d %s\n", i, off, c.Encoding(), len(data), hex.EncodeToString(data))
			off += n + 1 + len(data) + 4
		}
	}
	return out.String(), nil
}

// ---- tombstones ----

// sortedTombstones iterates a MemTombstones in ref order, so that the file
// tombstones.WriteFile writes is deterministic (MemTombstones.Iter walks a
// Go map in random order).
type sortedTombstones struct{ *tombstones.MemTombstones }

func (s sortedTombstones) Iter(f func(storage.SeriesRef, tombstones.Intervals) error) error {
	return iterSorted(s.MemTombstones, f)
}

func iterSorted(r tombstones.Reader, f func(storage.SeriesRef, tombstones.Intervals) error) error {
	m := map[storage.SeriesRef]tombstones.Intervals{}
	if err := r.Iter(func(ref storage.SeriesRef, ivs tombstones.Intervals) error {
		m[ref] = ivs
		return nil
	}); err != nil {
		return err
	}
	refs := make([]storage.SeriesRef, 0, len(m))
	for ref := range m {
		refs = append(refs, ref)
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i] < refs[j] })
	for _, ref := range refs {
		if err := f(ref, m[ref]); err != nil {
			return err
		}
	}
	return nil
}

// ErrPanicked marks an error that is a recovered panic inside Prometheus.
// Prometheus' Intervals.Add (unchanged from v3.9.1 to v3.16.0) indexes out
// of range when the added interval ends at math.MaxInt64 and starts after the
// first existing one.
var ErrPanicked = errors.New("prometheus panicked")

// WriteTombstones writes file with tombstones.WriteFile (through a fresh
// directory, since WriteFile names the file itself).
func WriteTombstones(spec, file string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", ErrPanicked, p)
		}
	}()
	mt := tombstones.NewMemTombstones()
	for _, l := range specLines(spec) {
		if len(l.words) != 3 {
			return l.errorf("want <ref> <mint> <maxt>")
		}
		ref, err1 := strconv.ParseUint(l.words[0], 10, 64)
		mint, err2 := strconv.ParseInt(l.words[1], 10, 64)
		maxt, err3 := strconv.ParseInt(l.words[2], 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return l.errorf("bad number")
		}
		mt.AddInterval(storage.SeriesRef(ref), tombstones.Interval{Mint: mint, Maxt: maxt})
	}
	tmp, err := os.MkdirTemp(filepath.Dir(file), ".promblockfiles")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if _, err := tombstones.WriteFile(slog.New(slog.DiscardHandler), tmp, sortedTombstones{mt}); err != nil {
		return err
	}
	return os.Rename(filepath.Join(tmp, tombstones.TombstonesFilename), file)
}

// DumpTombstones reads file with tombstones.ReadTombstones. Prometheus
// panics on some malformed files; that is reported as an error.
func DumpTombstones(file string) (out string, err error) {
	if _, err := os.Stat(file); err != nil {
		return "", err
	}
	dir := filepath.Dir(file)
	if filepath.Base(file) != tombstones.TombstonesFilename {
		tmp, err := os.MkdirTemp("", "promblockfiles")
		if err != nil {
			return "", err
		}
		defer os.RemoveAll(tmp)
		b, err := os.ReadFile(file)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(tmp, tombstones.TombstonesFilename), b, 0o666); err != nil {
			return "", err
		}
		dir = tmp
	}
	defer func() {
		if p := recover(); p != nil {
			out, err = "", fmt.Errorf("%w reading tombstones: %v", ErrPanicked, p)
		}
	}()
	r, _, err := tombstones.ReadTombstones(dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	err = iterSorted(r, func(ref storage.SeriesRef, ivs tombstones.Intervals) error {
		for _, iv := range ivs {
			fmt.Fprintf(&b, "%d %d %d\n", ref, iv.Mint, iv.Maxt)
		}
		return nil
	})
	fmt.Fprintf(&b, "# intervals %d\n", r.Total())
	return b.String(), err
}

// ---- meta.json ----

// ParseMetaSpec reads a meta spec into Prometheus' BlockMeta.
func ParseMetaSpec(spec string) (tsdb.BlockMeta, error) {
	var m tsdb.BlockMeta
	for _, l := range specLines(spec) {
		want := 2
		switch l.words[0] {
		case "parent":
			want = 4
		case "hint":
			want = min(max(len(l.words), 1), 2)
		}
		if len(l.words) != want {
			return m, l.errorf("bad argument count")
		}
		var err error
		i64 := func(i int) int64 {
			v, e := strconv.ParseInt(l.words[i], 10, 64)
			err = errors.Join(err, e)
			return v
		}
		u64 := func(i int) uint64 {
			v, e := strconv.ParseUint(l.words[i], 10, 64)
			err = errors.Join(err, e)
			return v
		}
		id := func(i int) ulid.ULID {
			v, e := ulid.ParseStrict(l.words[i])
			err = errors.Join(err, e)
			return v
		}
		boolean := func(i int) bool {
			switch l.words[i] {
			case "true":
				return true
			case "false":
				return false
			}
			err = errors.Join(err, errors.New("bad boolean"))
			return false
		}
		s, c := &m.Stats, &m.Compaction
		switch l.words[0] {
		case "ulid":
			m.ULID = id(1)
		case "min_time":
			m.MinTime = i64(1)
		case "max_time":
			m.MaxTime = i64(1)
		case "num_samples":
			s.NumSamples = u64(1)
		case "num_float_samples":
			s.NumFloatSamples = u64(1)
		case "num_histogram_samples":
			s.NumHistogramSamples = u64(1)
		case "num_series":
			s.NumSeries = u64(1)
		case "num_chunks":
			s.NumChunks = u64(1)
		case "num_tombstones":
			s.NumTombstones = u64(1)
		case "level":
			c.Level = int(i64(1))
		case "source":
			c.Sources = append(c.Sources, id(1))
		case "deletable":
			c.Deletable = boolean(1)
		case "parent":
			c.Parents = append(c.Parents, tsdb.BlockDesc{ULID: id(1), MinTime: i64(2), MaxTime: i64(3)})
		case "failed":
			c.Failed = boolean(1)
		case "hint":
			h := ""
			if len(l.words) == 2 {
				h = l.words[1]
			}
			b, e := hex.DecodeString(h)
			err = errors.Join(err, e)
			c.Hints = append(c.Hints, string(b))
		case "version":
			m.Version = int(i64(1))
		default:
			return m, l.errorf("unknown line")
		}
		if err != nil {
			return m, l.errorf("%v", err)
		}
	}
	return m, nil
}

// MetaJSON is what Prometheus' (unexported) writeMetaFile writes for m:
// version forced to 1, json.MarshalIndent with a tab.
func MetaJSON(m tsdb.BlockMeta) ([]byte, error) {
	m.Version = 1
	return json.MarshalIndent(&m, "", "\t")
}

// WriteMeta writes file as writeMetaFile does: FILE.tmp, fsync, rename.
func WriteMeta(spec, file string) error {
	m, err := ParseMetaSpec(spec)
	if err != nil {
		return err
	}
	b, err := MetaJSON(m)
	if err != nil {
		return err
	}
	tmp := file + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// DumpMeta reads file as Prometheus' readMetaFile does (json.Unmarshal into
// tsdb.BlockMeta, version must be 1).
func DumpMeta(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	var m tsdb.BlockMeta
	if err := json.Unmarshal(b, &m); err != nil {
		return "", err
	}
	if m.Version != 1 {
		return "", fmt.Errorf("unexpected meta file version %d", m.Version)
	}
	return FormatMeta(m), nil
}

// FormatMeta is the dump form of m.
func FormatMeta(m tsdb.BlockMeta) string {
	var o strings.Builder
	s, c := m.Stats, m.Compaction
	fmt.Fprintf(&o, "ulid %s\nmin_time %d\nmax_time %d\n", m.ULID, m.MinTime, m.MaxTime)
	fmt.Fprintf(&o, "num_samples %d\nnum_float_samples %d\nnum_histogram_samples %d\n",
		s.NumSamples, s.NumFloatSamples, s.NumHistogramSamples)
	fmt.Fprintf(&o, "num_series %d\nnum_chunks %d\nnum_tombstones %d\n", s.NumSeries, s.NumChunks, s.NumTombstones)
	fmt.Fprintf(&o, "level %d\n", c.Level)
	for _, u := range c.Sources {
		fmt.Fprintf(&o, "source %s\n", u)
	}
	fmt.Fprintf(&o, "deletable %t\n", c.Deletable)
	for _, p := range c.Parents {
		fmt.Fprintf(&o, "parent %s %d %d\n", p.ULID, p.MinTime, p.MaxTime)
	}
	fmt.Fprintf(&o, "failed %t\n", c.Failed)
	for _, h := range c.Hints {
		fmt.Fprintf(&o, "hint %s\n", hex.EncodeToString([]byte(h)))
	}
	fmt.Fprintf(&o, "version %d\n", m.Version)
	return o.String()
}
