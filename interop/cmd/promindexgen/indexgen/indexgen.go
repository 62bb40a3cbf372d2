// Package indexgen is the Prometheus side of `ferrite debug index`: it writes
// a block index from a text spec with Prometheus' own index.NewWriter, and
// dumps any index through Prometheus' own index reader into a deterministic
// text form. Ferrite implements the same two formats
// (crates/index/src/text.rs); the interop tests compare the two sides line
// by line and byte by byte.
//
// Strings: bytes 0x21..0x7e stand for themselves except '%', '=' and '~';
// any other byte is %XX (uppercase hex); the empty string is "~".
//
// Spec, one item per line ('#' starts a comment line):
//
//	symbol <string>                        an extra symbol
//	series <name>=<value> <name>=<value>   the next series, added in this order
//	chunk <mint> <maxt> <ref>              a chunk of the series above
//
// The symbol table is all symbol strings and label names and values, sorted
// and unique.
//
// Dump:
//
//	version <v>
//	toc symbols=<o> series=<o> label_indices=<o> label_indices_table=<o> postings=<o> postings_table=<o>
//	symbols <n>, then symbol <string> per symbol
//	label_names <n>, then per name: label <name> values <n>,
//	  value <value> postings <n> <ref>... per value, union <name> postings <n> <ref>...
//	all_postings <n>, then per series: series <ref> <name>=<value>... and chunk <mint> <maxt> <ref>...
package indexgen

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/tsdb/index"
)

// Series is one series of a spec: labels in the order given (not re-sorted),
// and its chunk metas.
type Series struct {
	Labels [][2]string
	Chunks []chunks.Meta
}

// Spec is what to write.
type Spec struct {
	Symbols []string
	Series  []Series
}

// Escape returns the text form of s.
func Escape(s string) string {
	if s == "" {
		return "~"
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x21 && c <= 0x7e && c != '%' && c != '=' && c != '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// Unescape is the inverse of Escape.
func Unescape(s string) (string, error) {
	if s == "~" {
		return "", nil
	}
	var b []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%':
			if i+3 > len(s) {
				return "", fmt.Errorf("bad escape in %q", s)
			}
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil || strings.ToUpper(s[i+1:i+3]) != s[i+1:i+3] {
				return "", fmt.Errorf("bad escape in %q", s)
			}
			b = append(b, byte(v))
			i += 2
		case c >= 0x21 && c <= 0x7e && c != '=' && c != '~':
			b = append(b, c)
		default:
			return "", fmt.Errorf("bad byte %#x in %q", c, s)
		}
	}
	if len(b) == 0 {
		return "", fmt.Errorf("empty string must be written as ~")
	}
	return string(b), nil
}

// ParseSpec reads the spec text format.
func ParseSpec(text string) (*Spec, error) {
	spec := &Spec{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		bad := func(format string, a ...any) error {
			return fmt.Errorf("spec line %d: %s", i+1, fmt.Sprintf(format, a...))
		}
		f := strings.Fields(line)
		switch f[0] {
		case "symbol":
			if len(f) != 2 {
				return nil, bad("symbol takes one string")
			}
			s, err := Unescape(f[1])
			if err != nil {
				return nil, bad("%v", err)
			}
			spec.Symbols = append(spec.Symbols, s)
		case "series":
			var s Series
			for _, p := range f[1:] {
				n, v, ok := strings.Cut(p, "=")
				if !ok {
					return nil, bad("label without '='")
				}
				un, err := Unescape(n)
				if err != nil {
					return nil, bad("%v", err)
				}
				uv, err := Unescape(v)
				if err != nil {
					return nil, bad("%v", err)
				}
				s.Labels = append(s.Labels, [2]string{un, uv})
			}
			spec.Series = append(spec.Series, s)
		case "chunk":
			if len(f) != 4 {
				return nil, bad("chunk takes mint maxt ref")
			}
			mint, err1 := strconv.ParseInt(f[1], 10, 64)
			maxt, err2 := strconv.ParseInt(f[2], 10, 64)
			ref, err3 := strconv.ParseUint(f[3], 10, 64)
			if err1 != nil || err2 != nil || err3 != nil {
				return nil, bad("bad number")
			}
			if len(spec.Series) == 0 {
				return nil, bad("chunk before any series")
			}
			s := &spec.Series[len(spec.Series)-1]
			s.Chunks = append(s.Chunks, chunks.Meta{MinTime: mint, MaxTime: maxt, Ref: chunks.ChunkRef(ref)})
		default:
			return nil, bad("expected symbol, series or chunk")
		}
	}
	return spec, nil
}

// Text renders the spec in its text format.
func (s *Spec) Text() string {
	var b strings.Builder
	for _, sym := range s.Symbols {
		fmt.Fprintf(&b, "symbol %s\n", Escape(sym))
	}
	for _, se := range s.Series {
		b.WriteString("series")
		for _, l := range se.Labels {
			fmt.Fprintf(&b, " %s=%s", Escape(l[0]), Escape(l[1]))
		}
		b.WriteByte('\n')
		for _, c := range se.Chunks {
			fmt.Fprintf(&b, "chunk %d %d %d\n", c.MinTime, c.MaxTime, uint64(c.Ref))
		}
	}
	return b.String()
}

// SymbolTable is every extra symbol and label string, sorted and unique.
func (s *Spec) SymbolTable() []string {
	all := slices.Clone(s.Symbols)
	for _, se := range s.Series {
		for _, l := range se.Labels {
			all = append(all, l[0], l[1])
		}
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// Write writes the spec as an index at path with Prometheus' index.NewWriter.
func (s *Spec) Write(path string) error {
	w, err := index.NewWriter(context.Background(), path)
	if err != nil {
		return err
	}
	err = func() error {
		for _, sym := range s.SymbolTable() {
			if err := w.AddSymbol(sym); err != nil {
				return err
			}
		}
		var b labels.ScratchBuilder
		for i, se := range s.Series {
			b.Reset()
			for _, l := range se.Labels {
				b.Add(l[0], l[1])
			}
			if err := w.AddSeries(storage.SeriesRef(i), b.Labels(), se.Chunks...); err != nil {
				return err
			}
		}
		return nil
	}()
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

func writeRefs(b *bufio.Writer, p index.Postings) error {
	refs, err := index.ExpandPostings(p)
	if err != nil {
		return err
	}
	fmt.Fprintf(b, "postings %d", len(refs))
	for _, r := range refs {
		fmt.Fprintf(b, " %d", uint64(r))
	}
	b.WriteByte('\n')
	return nil
}

// Dump returns the dump text of the index at path, read with Prometheus'
// index.NewFileReader.
func Dump(path string) (string, error) {
	ctx := context.Background()
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	r, err := index.NewFileReader(path, index.DecodePostingsRaw)
	if err != nil {
		return "", err
	}
	defer r.Close()
	var sb strings.Builder
	b := bufio.NewWriter(&sb)
	fmt.Fprintf(b, "version %d\n", r.Version())
	toc, err := index.NewTOCFromByteSlice(realByteSlice(raw))
	if err != nil {
		return "", err
	}
	fmt.Fprintf(b, "toc symbols=%d series=%d label_indices=%d label_indices_table=%d postings=%d postings_table=%d\n",
		toc.Symbols, toc.Series, toc.LabelIndices, toc.LabelIndicesTable, toc.Postings, toc.PostingsTable)
	var syms []string
	it := r.Symbols()
	for it.Next() {
		syms = append(syms, it.At())
	}
	if it.Err() != nil {
		return "", it.Err()
	}
	fmt.Fprintf(b, "symbols %d\n", len(syms))
	for _, s := range syms {
		fmt.Fprintf(b, "symbol %s\n", Escape(s))
	}
	names, err := r.LabelNames(ctx)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(b, "label_names %d\n", len(names))
	for _, n := range names {
		values, err := r.SortedLabelValues(ctx, n, nil)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(b, "label %s values %d\n", Escape(n), len(values))
		for _, v := range values {
			p, err := r.Postings(ctx, n, v)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(b, "value %s ", Escape(v))
			if err := writeRefs(b, p); err != nil {
				return "", err
			}
		}
		p, err := r.Postings(ctx, n, slices.Clone(values)...)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(b, "union %s ", Escape(n))
		if err := writeRefs(b, p); err != nil {
			return "", err
		}
	}
	allName, allValue := index.AllPostingsKey()
	p, err := r.Postings(ctx, allName, allValue)
	if err != nil {
		return "", err
	}
	all, err := index.ExpandPostings(p)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(b, "all_postings %d\n", len(all))
	var builder labels.ScratchBuilder
	var chks []chunks.Meta
	for _, ref := range all {
		if err := r.Series(ref, &builder, &chks); err != nil {
			return "", fmt.Errorf("series %d: %w", ref, err)
		}
		fmt.Fprintf(b, "series %d", uint64(ref))
		builder.Labels().Range(func(l labels.Label) {
			fmt.Fprintf(b, " %s=%s", Escape(l.Name), Escape(l.Value))
		})
		b.WriteByte('\n')
		for _, c := range chks {
			fmt.Fprintf(b, "chunk %d %d %d\n", c.MinTime, c.MaxTime, uint64(c.Ref))
		}
	}
	if err := b.Flush(); err != nil {
		return "", err
	}
	return sb.String(), nil
}

type realByteSlice []byte

func (b realByteSlice) Len() int                    { return len(b) }
func (b realByteSlice) Range(start, end int) []byte { return b[start:end] }
