package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The exposition every target serves: node_exporter-like families in the
// Prometheus text format 0.0.4, sorted by name as client_golang sorts them,
// with # HELP and # TYPE lines. A host's shape (CPUs, disks, network
// devices, filesystems) grows with the series wanted; systemd unit states
// fill up to it, and the list is cut after exactly that many samples.

// valueKind says how a series' value moves from one scrape to the next.
type valueKind int

const (
	kConst    valueKind = iota // never changes
	kZero                      // always 0 (error and drop counters)
	kCounterF                  // counter, fractional increments (seconds)
	kCounterI                  // counter, integer increments of at least 10 (bytes, packets)
	kCounterN                  // counter, +1 per scrape (requests served)
	kGaugeF                    // fluctuates around its base
	kGaugeI                    // fluctuates around its base, an integer
	kTime                      // Unix time of the render, in seconds
)

// valueSpec is a value's kind and scale (the base of a gauge or a
// constant, the mean increment per scrape of a counter).
type valueSpec struct {
	kind  valueKind
	scale float64
}

func constant(v float64) valueSpec  { return valueSpec{kConst, v} }
func counterF(v float64) valueSpec  { return valueSpec{kCounterF, v} }
func counterI(v float64) valueSpec  { return valueSpec{kCounterI, v} }
func gaugeF(v float64) valueSpec    { return valueSpec{kGaugeF, v} }
func gaugeI(v float64) valueSpec    { return valueSpec{kGaugeI, v} }
func zero() valueSpec               { return valueSpec{kind: kZero} }
func perScrape() valueSpec          { return valueSpec{kind: kCounterN} }
func timeNow() valueSpec            { return valueSpec{kind: kTime} }
func info() valueSpec               { return constant(1) }
func lbl(kv ...string) []string     { return kv }
func series1(v valueSpec) []sample1 { return []sample1{{value: v}} }

// sample1 is one series of a family: its name suffix (summaries' _sum,
// _count), its labels as name, value pairs, its value.
type sample1 struct {
	suffix string
	labels []string
	value  valueSpec
}

// family is one metric family.
type family struct {
	name, typ, help string
	series          []sample1
}

// seriesLine is one rendered series: everything before the value.
type seriesLine struct {
	prefix []byte // "# HELP ...\n# TYPE ...\n" for a family's first series, then `name{labels} `
	name   string
	value  valueSpec
}

// exposition is the series catalog of one target shape.
type exposition struct {
	lines []seriesLine
	names []string // metric names, each once (for the count queries)
	shape string   // "16 CPUs, 4 disks, ..." for the report
}

// hostShape sizes the per-device families from the series wanted.
type hostShape struct{ cpus, disks, netdevs, filesystems int }

func shapeFor(series int) hostShape {
	k := float64(series) / 1000
	n := func(per1000 float64) int { return max(1, int(math.Round(per1000*k))) }
	return hostShape{cpus: n(16), disks: n(4), netdevs: n(8), filesystems: n(6)}
}

// newExposition builds the catalog of exactly series series.
func newExposition(series int) (*exposition, error) {
	if series < 1 {
		return nil, fmt.Errorf("series per target must be at least 1, got %d", series)
	}
	sh := shapeFor(series)
	fams := append(fixedFamilies(), cpuFamilies(sh.cpus)...)
	fams = append(fams, diskFamilies(sh.disks)...)
	fams = append(fams, netFamilies(sh.netdevs)...)
	fams = append(fams, fsFamilies(sh.filesystems)...)
	total := 0
	for _, f := range fams {
		total += len(f.series)
	}
	units := 0
	if total < series {
		units = (series - total + len(unitStates) - 1) / len(unitStates)
		fams = append(fams, systemdFamily(units))
	}
	sort.SliceStable(fams, func(i, j int) bool { return fams[i].name < fams[j].name })
	e := &exposition{shape: fmt.Sprintf("%d CPUs, %d disks, %d network devices, %d filesystems, %d systemd units", sh.cpus, sh.disks, sh.netdevs, sh.filesystems, units)}
	seen := map[string]bool{}
	for _, f := range fams {
		for i, s := range f.series {
			if len(e.lines) == series {
				return e, nil
			}
			var b bytes.Buffer
			if i == 0 {
				fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.typ)
			}
			name := f.name + s.suffix
			b.WriteString(name)
			if len(s.labels)%2 != 0 {
				return nil, fmt.Errorf("family %s: odd label list %q", f.name, s.labels)
			}
			if len(s.labels) > 0 {
				b.WriteByte('{')
				for j := 0; j < len(s.labels); j += 2 {
					if j > 0 {
						b.WriteByte(',')
					}
					fmt.Fprintf(&b, "%s=%s", s.labels[j], strconv.Quote(s.labels[j+1]))
				}
				b.WriteByte('}')
			}
			b.WriteByte(' ')
			e.lines = append(e.lines, seriesLine{prefix: b.Bytes(), name: name, value: s.value})
			if !seen[name] {
				seen[name] = true
				e.names = append(e.names, name)
			}
		}
	}
	if len(e.lines) != series {
		return nil, fmt.Errorf("catalog has %d series, want %d", len(e.lines), series)
	}
	return e, nil
}

// render writes the body a target of variant v serves at its scrape number
// gen: counters grow with gen, gauges move, every variant has its own values.
func (e *exposition) render(v int, gen int64, now time.Time) []byte {
	out := make([]byte, 0, len(e.lines)*64)
	for i, l := range e.lines {
		out = append(out, l.prefix...)
		out = strconv.AppendFloat(out, l.value.at(uint64(i), uint64(v), gen, now), 'g', -1, 64)
		out = append(out, '\n')
	}
	return out
}

// at is the value of series i of variant v at scrape gen.
func (s valueSpec) at(i, v uint64, gen int64, now time.Time) float64 {
	r := unit(mix(i, v, 0)) // the series' own constant draw
	switch s.kind {
	case kConst:
		return s.scale
	case kZero:
		return 0
	case kTime:
		return float64(now.UnixMilli()) / 1000
	case kCounterN:
		return math.Floor(r*1e4) + float64(gen)
	case kCounterF, kCounterI:
		inc := s.scale * (0.5 + r)
		base := inc * 1e5 * unit(mix(i, v, 1))
		// base + gen*inc + 0.9*inc*jitter(gen) grows by at least 0.1*inc per scrape.
		x := base + float64(gen)*inc + 0.9*inc*unit(mix(i, v, uint64(gen)+2))
		if s.kind == kCounterI {
			return math.Floor(x)
		}
		return math.Round(x*100) / 100
	case kGaugeF, kGaugeI:
		base := s.scale * (0.5 + r)
		x := base * (0.9 + 0.2*unit(mix(i, v, uint64(gen)+2)))
		if s.kind == kGaugeI {
			return math.Round(x)
		}
		return roundSig(x, 5)
	}
	return 0
}

// roundSig rounds x to digits significant digits.
func roundSig(x float64, digits int) float64 {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	p := math.Pow(10, float64(digits)-math.Ceil(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
}

// mix is splitmix64 over three words.
func mix(a, b, c uint64) uint64 {
	x := a*0x9e3779b97f4a7c15 ^ b*0xbf58476d1ce4e5b9 ^ c*0x94d049bb133111eb
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// unit maps x to [0, 1).
func unit(x uint64) float64 { return float64(x>>11) / (1 << 53) }

// body is one rendered exposition, plain and gzip-compressed.
type body struct {
	plain, gz []byte
}

// bodyCache keeps the recent bodies of every variant: all targets of a
// variant at the same scrape number serve the same bytes, rendered and
// compressed once.
type bodyCache struct {
	exp   *exposition
	slots [][]bodySlot // [variant][gen % ring]
}

const bodyRing = 4

type bodySlot struct {
	mu  sync.Mutex
	gen int64
	b   *body
}

func newBodyCache(exp *exposition, variants int) *bodyCache {
	c := &bodyCache{exp: exp, slots: make([][]bodySlot, variants)}
	for v := range c.slots {
		c.slots[v] = make([]bodySlot, bodyRing)
	}
	return c
}

// get returns the body of variant v at scrape number gen.
func (c *bodyCache) get(v int, gen int64) (*body, error) {
	s := &c.slots[v][gen%bodyRing]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b != nil && s.gen == gen {
		return s.b, nil
	}
	plain := c.exp.render(v, gen, time.Now())
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz) // the default level, as client_golang's promhttp
	if _, err := w.Write(plain); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	s.gen, s.b = gen, &body{plain: plain, gz: gz.Bytes()}
	return s.b, nil
}

// ---- the families ----

var cpuModes = []struct {
	mode  string
	scale float64 // seconds per 15 s scrape
}{{"idle", 12}, {"iowait", 0.1}, {"irq", 0.01}, {"nice", 0.02}, {"softirq", 0.05}, {"steal", 0.001}, {"system", 0.8}, {"user", 2}}

var unitStates = []string{"activating", "active", "deactivating", "failed", "inactive"}

func fixedFamilies() []family {
	var fams []family
	add := func(name, typ, help string, ss []sample1) {
		fams = append(fams, family{name: name, typ: typ, help: help, series: ss})
	}
	gauge := func(name, help string, v valueSpec) { add(name, "gauge", help, series1(v)) }
	counter := func(name, help string, v valueSpec) { add(name, "counter", help, series1(v)) }
	untyped := func(name, help string, v valueSpec) { add(name, "untyped", help, series1(v)) }

	var gc []sample1
	for _, q := range []string{"0", "0.25", "0.5", "0.75", "1"} {
		gc = append(gc, sample1{labels: lbl("quantile", q), value: gaugeF(4e-5)})
	}
	gc = append(gc, sample1{suffix: "_sum", value: counterF(1e-3)}, sample1{suffix: "_count", value: counterI(10)})
	add("go_gc_duration_seconds", "summary", "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.", gc)
	gauge("go_goroutines", "Number of goroutines that currently exist.", gaugeI(10))
	add("go_info", "gauge", "Information about the Go environment.", []sample1{{labels: lbl("version", "go1.23.4"), value: info()}})
	for _, m := range []struct {
		name, help string
		v          valueSpec
	}{
		{"alloc_bytes", "Number of bytes allocated in heap and currently in use. Equals to /memory/classes/heap/objects:bytes.", gaugeI(5e6)},
		{"alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already. Equals to /gc/heap/allocs:bytes.", counterI(1e7)},
		{"buck_hash_sys_bytes", "Number of bytes used by the profiling bucket hash table. Equals to /memory/classes/profiling/buckets:bytes.", constant(1.5e6)},
		{"frees_total", "Total number of heap objects frees. Equals to /gc/heap/frees:objects + /gc/heap/tiny/allocs:objects.", counterI(1e5)},
		{"gc_sys_bytes", "Number of bytes used for garbage collection system metadata. Equals to /memory/classes/metadata/other:bytes.", gaugeI(3e6)},
		{"heap_alloc_bytes", "Number of heap bytes allocated and currently in use, same as go_memstats_alloc_bytes. Equals to /memory/classes/heap/objects:bytes.", gaugeI(5e6)},
		{"heap_idle_bytes", "Number of heap bytes waiting to be used. Equals to /memory/classes/heap/released:bytes + /memory/classes/heap/free:bytes.", gaugeI(4e6)},
		{"heap_inuse_bytes", "Number of heap bytes that are in use. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes", gaugeI(7e6)},
		{"heap_objects", "Number of currently allocated objects. Equals to /gc/heap/objects:objects.", gaugeI(3e4)},
		{"heap_released_bytes", "Number of heap bytes released to OS. Equals to /memory/classes/heap/released:bytes.", gaugeI(2e6)},
		{"heap_sys_bytes", "Number of heap bytes obtained from system. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes + /memory/classes/heap/released:bytes + /memory/classes/heap/free:bytes.", gaugeI(1.2e7)},
		{"last_gc_time_seconds", "Number of seconds since 1970 of last garbage collection.", timeNow()},
		{"mallocs_total", "Total number of heap objects allocated, both live and gc-ed. Semantically a counter version for go_memstats_heap_objects gauge. Equals to /gc/heap/allocs:objects + /gc/heap/tiny/allocs:objects.", counterI(1e5)},
		{"mcache_inuse_bytes", "Number of bytes in use by mcache structures. Equals to /memory/classes/metadata/mcache/inuse:bytes.", constant(2400)},
		{"mcache_sys_bytes", "Number of bytes used for mcache structures obtained from system. Equals to /memory/classes/metadata/mcache/inuse:bytes + /memory/classes/metadata/mcache/free:bytes.", constant(15600)},
		{"mspan_inuse_bytes", "Number of bytes in use by mspan structures. Equals to /memory/classes/metadata/mspan/inuse:bytes.", gaugeI(1.2e5)},
		{"mspan_sys_bytes", "Number of bytes used for mspan structures obtained from system. Equals to /memory/classes/metadata/mspan/inuse:bytes + /memory/classes/metadata/mspan/free:bytes.", constant(1.6e5)},
		{"next_gc_bytes", "Number of heap bytes when next garbage collection will take place. Equals to /gc/heap/goal:bytes.", gaugeI(8e6)},
		{"other_sys_bytes", "Number of bytes used for other system allocations. Equals to /memory/classes/other:bytes.", gaugeI(1e6)},
		{"stack_inuse_bytes", "Number of bytes obtained from system for stack allocator in non-CGO environments. Equals to /memory/classes/heap/stacks:bytes.", gaugeI(8e5)},
		{"stack_sys_bytes", "Number of bytes obtained from system for stack allocator. Equals to /memory/classes/heap/stacks:bytes + /memory/classes/os-stacks:bytes.", gaugeI(8e5)},
		{"sys_bytes", "Number of bytes obtained from system. Equals to /memory/classes/total:byte.", constant(2.5e7)},
	} {
		typ := "gauge"
		if strings.HasSuffix(m.name, "_total") {
			typ = "counter"
		}
		add("go_memstats_"+m.name, typ, m.help, series1(m.v))
	}
	gauge("go_threads", "Number of OS threads created.", constant(8))

	gauge("node_boot_time_seconds", "Node boot time, in unixtime.", constant(1.7301e9))
	counter("node_context_switches_total", "Total number of context switches.", counterI(5e4))
	gauge("node_entropy_available_bits", "Bits of available entropy.", gaugeI(256))
	add("node_exporter_build_info", "gauge", "A metric with a constant '1' value labeled by version, revision, branch, goversion from which node_exporter was built, and the goos and goarch for the build.",
		[]sample1{{labels: lbl("branch", "HEAD", "goarch", "amd64", "goos", "linux", "goversion", "go1.23.4", "revision", "f1e0e8360aa60b6cb5e5cc1560bed348fc2c1895", "tags", "unknown", "version", "1.8.2"), value: info()}})
	gauge("node_filefd_allocated", "File descriptor statistics: allocated.", gaugeI(2000))
	gauge("node_filefd_maximum", "File descriptor statistics: maximum.", constant(9.223372036854776e18))
	counter("node_forks_total", "Total number of forks.", counterI(300))
	counter("node_intr_total", "Total number of interrupts serviced.", counterI(3e4))
	gauge("node_load1", "1m load average.", gaugeF(1.5))
	gauge("node_load15", "15m load average.", gaugeF(1.2))
	gauge("node_load5", "5m load average.", gaugeF(1.3))
	for _, m := range []struct {
		name string
		v    valueSpec
	}{
		{"Active_anon_bytes", gaugeI(2e9)}, {"Active_bytes", gaugeI(6e9)}, {"Active_file_bytes", gaugeI(4e9)},
		{"AnonHugePages_bytes", gaugeI(5e8)}, {"AnonPages_bytes", gaugeI(2.5e9)}, {"Bounce_bytes", zero()},
		{"Buffers_bytes", gaugeI(3e8)}, {"Cached_bytes", gaugeI(8e9)}, {"CommitLimit_bytes", constant(1.68e10)},
		{"Committed_AS_bytes", gaugeI(9e9)}, {"DirectMap1G_bytes", constant(2.6e10)}, {"DirectMap2M_bytes", constant(7.4e9)},
		{"DirectMap4k_bytes", constant(4.5e8)}, {"Dirty_bytes", gaugeI(2e5)}, {"FileHugePages_bytes", zero()},
		{"FilePmdMapped_bytes", zero()}, {"HardwareCorrupted_bytes", zero()}, {"HugePages_Free", zero()},
		{"HugePages_Rsvd", zero()}, {"HugePages_Surp", zero()}, {"HugePages_Total", zero()},
		{"Hugepagesize_bytes", constant(2097152)}, {"Hugetlb_bytes", zero()}, {"Inactive_anon_bytes", gaugeI(1e8)},
		{"Inactive_bytes", gaugeI(5e9)}, {"Inactive_file_bytes", gaugeI(4.9e9)}, {"KReclaimable_bytes", gaugeI(6e8)},
		{"KernelStack_bytes", gaugeI(1.5e7)}, {"Mapped_bytes", gaugeI(7e8)}, {"MemAvailable_bytes", gaugeI(2.2e10)},
		{"MemFree_bytes", gaugeI(1.4e10)}, {"MemTotal_bytes", constant(3.36e10)}, {"Mlocked_bytes", constant(3.2e7)},
		{"NFS_Unstable_bytes", zero()}, {"PageTables_bytes", gaugeI(3e7)}, {"Percpu_bytes", constant(2.1e7)},
		{"SReclaimable_bytes", gaugeI(6e8)}, {"SUnreclaim_bytes", gaugeI(2e8)}, {"SecPageTables_bytes", zero()},
		{"ShmemHugePages_bytes", zero()}, {"ShmemPmdMapped_bytes", zero()}, {"Shmem_bytes", gaugeI(1.5e8)},
		{"Slab_bytes", gaugeI(8e8)}, {"SwapCached_bytes", zero()}, {"SwapFree_bytes", constant(0)},
		{"SwapTotal_bytes", constant(0)}, {"Unaccepted_bytes", zero()}, {"Unevictable_bytes", constant(3.2e7)},
		{"VmallocChunk_bytes", zero()}, {"VmallocTotal_bytes", constant(3.5184372087808e13)}, {"VmallocUsed_bytes", gaugeI(9e7)},
		{"WritebackTmp_bytes", zero()}, {"Writeback_bytes", zero()}, {"Zswap_bytes", zero()}, {"Zswapped_bytes", zero()},
	} {
		field := strings.TrimSuffix(m.name, "_bytes")
		help := "Memory information field " + m.name + "."
		if field != m.name {
			help = "Memory information field " + field + "_bytes."
		}
		gauge("node_memory_"+m.name, help, m.v)
	}
	for _, m := range []struct {
		name string
		v    valueSpec
	}{
		{"Icmp6_InErrors", zero()}, {"Icmp6_InMsgs", counterI(10)}, {"Icmp6_OutMsgs", counterI(10)},
		{"Icmp_InErrors", zero()}, {"Icmp_InMsgs", counterI(10)}, {"Icmp_OutMsgs", counterI(10)},
		{"Ip6_InOctets", counterI(1e5)}, {"Ip6_OutOctets", counterI(1e5)}, {"IpExt_InOctets", counterI(1e7)},
		{"IpExt_OutOctets", counterI(1e7)}, {"Ip_Forwarding", constant(1)}, {"TcpExt_ListenDrops", zero()},
		{"TcpExt_ListenOverflows", zero()}, {"TcpExt_SyncookiesFailed", zero()}, {"TcpExt_SyncookiesRecv", zero()},
		{"TcpExt_SyncookiesSent", zero()}, {"TcpExt_TCPSynRetrans", counterI(10)}, {"TcpExt_TCPTimeouts", counterI(10)},
		{"Tcp_ActiveOpens", counterI(50)}, {"Tcp_CurrEstab", gaugeI(120)}, {"Tcp_InErrs", zero()},
		{"Tcp_InSegs", counterI(2e4)}, {"Tcp_OutRsts", counterI(20)}, {"Tcp_OutSegs", counterI(2e4)},
		{"Tcp_PassiveOpens", counterI(50)}, {"Tcp_RetransSegs", counterI(10)}, {"Udp6_InDatagrams", counterI(10)},
		{"Udp6_InErrors", zero()}, {"Udp6_NoPorts", zero()}, {"Udp6_OutDatagrams", counterI(10)},
		{"Udp6_RcvbufErrors", zero()}, {"Udp6_SndbufErrors", zero()}, {"UdpLite6_InErrors", zero()},
		{"UdpLite_InErrors", zero()}, {"Udp_InDatagrams", counterI(200)}, {"Udp_InErrors", zero()},
		{"Udp_NoPorts", counterI(10)}, {"Udp_OutDatagrams", counterI(200)}, {"Udp_RcvbufErrors", zero()},
		{"Udp_SndbufErrors", zero()},
	} {
		untyped("node_netstat_"+m.name, "Statistic "+strings.ReplaceAll(m.name, "_", "")+".", m.v)
	}
	gauge("node_procs_blocked", "Number of processes blocked waiting for I/O to complete.", gaugeI(1))
	gauge("node_procs_running", "Number of processes in runnable state.", gaugeI(4))
	add("node_scrape_collector_duration_seconds", "gauge", "node_exporter: Duration of a collector scrape.", collectorSeries(gaugeF(0.002)))
	add("node_scrape_collector_success", "gauge", "node_exporter: Whether a collector succeeded.", collectorSeries(info()))
	for _, m := range []struct {
		name string
		v    valueSpec
	}{
		{"FRAG6_inuse", zero()}, {"FRAG6_memory", zero()}, {"FRAG_inuse", zero()}, {"FRAG_memory", zero()},
		{"RAW6_inuse", constant(1)}, {"RAW_inuse", zero()}, {"TCP6_inuse", gaugeI(20)}, {"TCP_alloc", gaugeI(150)},
		{"TCP_inuse", gaugeI(100)}, {"TCP_mem", gaugeI(30)}, {"TCP_mem_bytes", gaugeI(122880)}, {"TCP_orphan", zero()},
		{"TCP_tw", gaugeI(40)}, {"UDP6_inuse", constant(2)}, {"UDPLITE6_inuse", zero()}, {"UDPLITE_inuse", zero()},
		{"UDP_inuse", constant(4)}, {"UDP_mem", gaugeI(8)}, {"UDP_mem_bytes", gaugeI(32768)}, {"sockets_used", gaugeI(600)},
	} {
		gauge("node_sockstat_"+m.name, "Number of "+m.name+" sockets in state "+m.name+".", m.v)
	}
	gauge("node_time_seconds", "System time in seconds since epoch (1970).", timeNow())
	add("node_uname_info", "gauge", "Labeled system information as provided by the uname system call.",
		[]sample1{{labels: lbl("domainname", "(none)", "machine", "x86_64", "nodename", "node-host", "release", "6.8.0-49-generic", "sysname", "Linux", "version", "#49-Ubuntu SMP PREEMPT_DYNAMIC Mon Nov  4 02:06:24 UTC 2024"), value: info()}})
	for _, m := range []struct {
		name string
		v    valueSpec
	}{
		{"oom_kill", zero()}, {"pgfault", counterI(1e5)}, {"pgmajfault", counterI(10)}, {"pgpgin", counterI(1e3)},
		{"pgpgout", counterI(1e4)}, {"pswpin", zero()}, {"pswpout", zero()},
	} {
		untyped("node_vmstat_"+m.name, "/proc/vmstat information field "+m.name+".", m.v)
	}
	counter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", counterF(0.05))
	gauge("process_max_fds", "Maximum number of open file descriptors.", constant(1048576))
	counter("process_network_receive_bytes_total", "Number of bytes received by the process over the network.", counterI(1e4))
	counter("process_network_transmit_bytes_total", "Number of bytes sent by the process over the network.", counterI(1e5))
	gauge("process_open_fds", "Number of open file descriptors.", gaugeI(12))
	gauge("process_resident_memory_bytes", "Resident memory size in bytes.", gaugeI(2.5e7))
	gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", constant(1.73010004527e9))
	gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", gaugeI(1.3e9))
	gauge("process_virtual_memory_max_bytes", "Maximum amount of virtual memory available in bytes.", constant(1.8446744073709552e19))
	add("promhttp_metric_handler_errors_total", "counter", "Total number of internal errors encountered by the promhttp metric handler.",
		[]sample1{{labels: lbl("cause", "encoding"), value: zero()}, {labels: lbl("cause", "gathering"), value: zero()}})
	gauge("promhttp_metric_handler_requests_in_flight", "Current number of scrapes being served.", constant(1))
	add("promhttp_metric_handler_requests_total", "counter", "Total number of scrapes by HTTP status code.",
		[]sample1{{labels: lbl("code", "200"), value: perScrape()}, {labels: lbl("code", "500"), value: zero()}, {labels: lbl("code", "503"), value: zero()}})
	return fams
}

func collectorSeries(v valueSpec) []sample1 {
	var ss []sample1
	for _, c := range []string{"arp", "bcache", "bonding", "btrfs", "conntrack", "cpu", "cpufreq", "diskstats", "dmi", "edac", "entropy",
		"fibrechannel", "filefd", "filesystem", "hwmon", "infiniband", "ipvs", "loadavg", "mdadm", "meminfo", "netclass", "netdev",
		"netstat", "nfs", "nfsd", "nvme", "os", "powersupplyclass", "pressure", "rapl", "schedstat", "selinux", "sockstat", "softnet",
		"stat", "tapestats", "textfile", "thermal_zone", "time", "timex", "udp_queues", "uname", "vmstat", "watchdog", "xfs", "zfs"} {
		ss = append(ss, sample1{labels: lbl("collector", c), value: v})
	}
	return ss
}

// perDevice makes one series per device, labeled by lab (plus extra labels).
func perDevice(devs [][]string, v valueSpec) []sample1 {
	ss := make([]sample1, len(devs))
	for i, d := range devs {
		ss[i] = sample1{labels: d, value: v}
	}
	return ss
}

func cpuFamilies(n int) []family {
	var cpus [][]string
	for i := range n {
		cpus = append(cpus, lbl("cpu", strconv.Itoa(i)))
	}
	var secs, guest []sample1
	for _, c := range cpus {
		for _, m := range cpuModes {
			secs = append(secs, sample1{labels: append(append([]string{}, c...), "mode", m.mode), value: counterF(m.scale)})
		}
		for _, m := range []string{"nice", "user"} {
			guest = append(guest, sample1{labels: append(append([]string{}, c...), "mode", m), value: zero()})
		}
	}
	return []family{
		{"node_cpu_guest_seconds_total", "counter", "Seconds the CPUs spent in guests (VMs) for each mode.", guest},
		{"node_cpu_scaling_frequency_hertz", "gauge", "Current scaled CPU thread frequency in hertz.", perDevice(cpus, gaugeI(2.5e9))},
		{"node_cpu_seconds_total", "counter", "Seconds the CPUs spent in each mode.", secs},
		{"node_schedstat_running_seconds_total", "counter", "Number of seconds CPU spent running a process.", perDevice(cpus, counterF(3))},
		{"node_schedstat_timeslices_total", "counter", "Number of timeslices executed by CPU.", perDevice(cpus, counterI(3e3))},
		{"node_schedstat_waiting_seconds_total", "counter", "Number of seconds spent by processing waiting for this CPU.", perDevice(cpus, counterF(0.3))},
		{"node_softnet_dropped_total", "counter", "Number of dropped packets", perDevice(cpus, zero())},
		{"node_softnet_processed_total", "counter", "Number of processed packets", perDevice(cpus, counterI(500))},
		{"node_softnet_times_squeezed_total", "counter", "Number of times processing packets ran out of quota", perDevice(cpus, zero())},
	}
}

func diskFamilies(n int) []family {
	var devs [][]string
	var infos []sample1
	for i := range n {
		name := fmt.Sprintf("nvme%dn1", i)
		if i >= 2 {
			name = "sd" + diskLetters(i-2)
		}
		devs = append(devs, lbl("device", name))
		infos = append(infos, sample1{labels: lbl("device", name, "major", "259", "minor", strconv.Itoa(i*2), "model", "SAMSUNG MZVL21T0HCLR-00B00",
			"path", fmt.Sprintf("pci-0000:0%d:00.0-nvme-1", i%10), "revision", "GXA7801Q", "serial", fmt.Sprintf("S676NF0R%06d", 500000+i)), value: info()})
	}
	d := func(name, typ, help string, v valueSpec) family {
		return family{"node_disk_" + name, typ, help, perDevice(devs, v)}
	}
	return []family{
		d("discard_time_seconds_total", "counter", "This is the total number of seconds spent by all discards.", zero()),
		d("discarded_sectors_total", "counter", "The total number of sectors discarded successfully.", zero()),
		d("discards_completed_total", "counter", "The total number of discards completed successfully.", zero()),
		d("discards_merged_total", "counter", "The total number of discards merged.", zero()),
		d("flush_requests_time_seconds_total", "counter", "This is the total number of seconds spent by all flush requests.", counterF(0.01)),
		d("flush_requests_total", "counter", "The total number of flush requests completed successfully", counterI(10)),
		{"node_disk_info", "gauge", "Info of /sys/block/<block_device>.", infos},
		d("io_now", "gauge", "The number of I/Os currently in progress.", gaugeI(1)),
		d("io_time_seconds_total", "counter", "Total seconds spent doing I/Os.", counterF(0.2)),
		d("io_time_weighted_seconds_total", "counter", "The weighted # of seconds spent doing I/Os.", counterF(0.4)),
		d("read_bytes_total", "counter", "The total number of bytes read successfully.", counterI(1e6)),
		d("read_time_seconds_total", "counter", "The total number of seconds spent by all reads.", counterF(0.05)),
		d("reads_completed_total", "counter", "The total number of reads completed successfully.", counterI(100)),
		d("reads_merged_total", "counter", "The total number of reads merged.", counterI(10)),
		d("write_time_seconds_total", "counter", "This is the total number of seconds spent by all writes.", counterF(0.3)),
		d("writes_completed_total", "counter", "The total number of writes completed successfully.", counterI(400)),
		d("writes_merged_total", "counter", "The number of writes merged.", counterI(200)),
		d("written_bytes_total", "counter", "The total number of bytes written successfully.", counterI(5e6)),
	}
}

// diskLetters is a, b, ..., z, aa, ab, ...
func diskLetters(i int) string {
	s := ""
	for {
		s = string(rune('a'+i%26)) + s
		i = i/26 - 1
		if i < 0 {
			return s
		}
	}
}

func netFamilies(n int) []family {
	var devs [][]string
	var infos []sample1
	for i := range n {
		name := "lo"
		switch {
		case i == 1:
			name = "eth0"
		case i == 2:
			name = "docker0"
		case i > 2:
			name = fmt.Sprintf("veth%07x", mix(uint64(i), 7, 7)>>36)
		}
		devs = append(devs, lbl("device", name))
		infos = append(infos, sample1{labels: lbl("address", fmt.Sprintf("02:42:ac:11:%02x:%02x", i/256%256, i%256), "adminstate", "up",
			"broadcast", "ff:ff:ff:ff:ff:ff", "device", name, "duplex", "full", "ifalias", "", "operstate", "up"), value: info()})
	}
	nd := func(name, typ, help string, v valueSpec) family {
		return family{"node_network_" + name, typ, help, perDevice(devs, v)}
	}
	stat := func(dir, what string, v valueSpec) family {
		return nd(dir+"_"+what+"_total", "counter", "Network device statistic "+dir+"_"+what+".", v)
	}
	return []family{
		nd("address_assign_type", "gauge", "Network device property: address_assign_type", zero()),
		nd("carrier", "gauge", "Network device property: carrier", info()),
		nd("carrier_changes_total", "counter", "Network device property: carrier_changes_total", constant(2)),
		nd("carrier_down_changes_total", "counter", "Network device property: carrier_down_changes_total", constant(1)),
		nd("carrier_up_changes_total", "counter", "Network device property: carrier_up_changes_total", constant(1)),
		nd("device_id", "gauge", "Network device property: device_id", zero()),
		nd("dormant", "gauge", "Network device property: dormant", zero()),
		nd("flags", "gauge", "Network device property: flags", constant(4099)),
		nd("iface_id", "gauge", "Network device property: iface_id", constant(2)),
		nd("iface_link", "gauge", "Network device property: iface_link", constant(2)),
		nd("iface_link_mode", "gauge", "Network device property: iface_link_mode", zero()),
		{"node_network_info", "gauge", "Non-numeric data from /sys/class/net/<iface>, value is always 1.", infos},
		nd("mtu_bytes", "gauge", "Network device property: mtu_bytes", constant(1500)),
		nd("name_assign_type", "gauge", "Network device property: name_assign_type", constant(3)),
		nd("net_dev_group", "gauge", "Network device property: net_dev_group", zero()),
		nd("protocol_type", "gauge", "Network device property: protocol_type", constant(1)),
		stat("receive", "bytes", counterI(2e6)), stat("receive", "compressed", zero()), stat("receive", "drop", zero()),
		stat("receive", "errs", zero()), stat("receive", "fifo", zero()), stat("receive", "frame", zero()),
		stat("receive", "multicast", zero()), stat("receive", "nohandler", zero()), stat("receive", "packets", counterI(3e3)),
		nd("speed_bytes", "gauge", "Network device property: speed_bytes", constant(1.25e9)),
		stat("transmit", "bytes", counterI(2e6)), stat("transmit", "carrier", zero()), stat("transmit", "colls", zero()),
		stat("transmit", "compressed", zero()), stat("transmit", "drop", zero()), stat("transmit", "errs", zero()),
		stat("transmit", "fifo", zero()), stat("transmit", "packets", counterI(3e3)),
		nd("transmit_queue_length", "gauge", "Network device property: transmit_queue_length", constant(1000)),
		nd("up", "gauge", "Value is 1 if operstate is 'up', 0 otherwise.", info()),
	}
}

func fsFamilies(n int) []family {
	base := [][]string{
		lbl("device", "/dev/nvme0n1p2", "fstype", "ext4", "mountpoint", "/"),
		lbl("device", "/dev/nvme0n1p1", "fstype", "vfat", "mountpoint", "/boot/efi"),
		lbl("device", "tmpfs", "fstype", "tmpfs", "mountpoint", "/run"),
		lbl("device", "tmpfs", "fstype", "tmpfs", "mountpoint", "/run/lock"),
		lbl("device", "tmpfs", "fstype", "tmpfs", "mountpoint", "/run/user/1000"),
		lbl("device", "/dev/nvme1n1", "fstype", "xfs", "mountpoint", "/var/lib/data"),
	}
	var fss [][]string
	for i := range n {
		if i < len(base) {
			fss = append(fss, base[i])
			continue
		}
		fss = append(fss, lbl("device", fmt.Sprintf("/dev/mapper/vg0-vol%d", i), "fstype", "ext4", "mountpoint", fmt.Sprintf("/mnt/vol%d", i)))
	}
	f := func(name, help string, v valueSpec) family {
		return family{"node_filesystem_" + name, "gauge", help, perDevice(fss, v)}
	}
	return []family{
		f("avail_bytes", "Filesystem space available to non-root users in bytes.", gaugeI(2e11)),
		f("device_error", "Whether an error occurred while getting statistics for the given device.", zero()),
		f("files", "Filesystem total file nodes.", constant(3.2e7)),
		f("files_free", "Filesystem total free file nodes.", gaugeI(3e7)),
		f("free_bytes", "Filesystem free space in bytes.", gaugeI(2.2e11)),
		f("readonly", "Filesystem read-only status.", zero()),
		f("size_bytes", "Filesystem size in bytes.", constant(5e11)),
	}
}

var unitNames = []string{"cron", "dbus", "getty@tty1", "networkd-dispatcher", "polkit", "rsyslog", "snapd", "ssh",
	"systemd-journald", "systemd-logind", "systemd-networkd", "systemd-resolved", "systemd-timesyncd", "systemd-udevd",
	"unattended-upgrades", "containerd", "docker", "node_exporter", "chrony", "multipathd"}

// systemdFamily fills the catalog: 5 states for each of n units.
func systemdFamily(n int) family {
	var ss []sample1
	for i := range n {
		name := fmt.Sprintf("app-%d.service", i)
		if i < len(unitNames) {
			name = unitNames[i] + ".service"
		}
		for _, st := range unitStates {
			v := zero()
			if st == "active" {
				v = info()
			}
			ss = append(ss, sample1{labels: lbl("name", name, "state", st, "type", "simple"), value: v})
		}
	}
	return family{"node_systemd_unit_state", "gauge", "Systemd unit", ss}
}
