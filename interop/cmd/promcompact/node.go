package main

import (
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/labels"
)

// A synthetic node_exporter: each target exposes ~320 series shaped like a
// real node_exporter's (metric and label names, counters that grow by
// realistic increments, gauges with realistic noise and resolution), scraped
// every interval with a per-target phase and occasional millisecond jitter.
// Everything is deterministic (splitmix64 per series and per target), so the
// same arguments always give the same samples.

type kind int

const (
	kConst       kind = iota // never changes (sizes, info metrics, success flags)
	kCounterInt              // integer increments around rate*interval (bytes, packets, ops)
	kCounterTick             // integer ticks / 100 (CPU seconds: USER_HZ resolution)
	kGaugePages              // bytes in 4 KiB pages, mean-reverting random walk
	kGaugeNoisy              // full-precision float in [lo, hi) (durations)
	kGaugeLoad               // load average: 2 decimals, smoothed
	kGaugeInt                // small integer, random walk within [lo, hi]
	kTimeSeconds             // node_time_seconds: the scrape time with microseconds
	kCounterSec              // float seconds counter with microsecond resolution
	kGaugeSlow               // bytes in 4 KiB pages, changing on one scrape in 50
)

type spec struct {
	name   string
	labels []string // extra label pairs
	kind   kind
	lo, hi float64 // value range (gauges) or rate per second (counters: lo..hi)
}

type nodeSeries struct {
	lset labels.Labels
	spec spec
	rng  uint64
	v    float64 // current value (counters: accumulated; ticks: tick count)
	rate float64 // counters: per-second rate, fixed per series
}

func splitmix(s *uint64) uint64 {
	*s += 0x9e3779b97f4a7c15
	z := *s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// unit is a uniform float in [0, 1).
func unit(s *uint64) float64 { return float64(splitmix(s)>>11) / (1 << 53) }

func nodeSpecs() []spec {
	var out []spec
	add := func(name string, k kind, lo, hi float64, ls ...string) {
		out = append(out, spec{name: name, labels: ls, kind: k, lo: lo, hi: hi})
	}
	// CPU: 8 cores x 8 modes, ticks of 1/100 s; shares of the 100 ticks/s.
	modes := []struct {
		m      string
		lo, hi float64
	}{{"idle", 60, 90}, {"iowait", 0.1, 2}, {"irq", 0, 0.2}, {"nice", 0, 0.1}, {"softirq", 0.2, 1}, {"steal", 0, 0.5}, {"system", 2, 8}, {"user", 5, 25}}
	for c := 0; c < 8; c++ {
		for _, m := range modes {
			add("node_cpu_seconds_total", kCounterTick, m.lo, m.hi, "cpu", fmt.Sprint(c), "mode", m.m)
		}
		add("node_cpu_guest_seconds_total", kConst, 0, 0, "cpu", fmt.Sprint(c), "mode", "nice")
		add("node_cpu_guest_seconds_total", kConst, 0, 0, "cpu", fmt.Sprint(c), "mode", "user")
	}
	// Memory (bytes): totals constant, the rest wandering in pages.
	for _, n := range []string{"MemTotal", "SwapTotal", "HugePages_Total", "Hugepagesize", "CommitLimit", "VmallocTotal", "DirectMap4k", "DirectMap2M", "DirectMap1G", "HardwareCorrupted"} {
		add("node_memory_"+n+"_bytes", kConst, 1<<20, 64<<30)
	}
	for _, n := range []string{"MemFree", "MemAvailable", "Buffers", "Cached", "Active", "Inactive", "Active_anon", "Inactive_anon", "Active_file", "Inactive_file", "Dirty", "AnonPages", "Mapped", "Shmem", "Slab"} {
		add("node_memory_"+n+"_bytes", kGaugePages, 64<<20, 16<<30)
	}
	for _, n := range []string{"SwapCached", "Unevictable", "Mlocked", "SwapFree", "Writeback"} {
		add("node_memory_"+n+"_bytes", kGaugeSlow, 0, 1<<30)
	}
	// Network.
	for _, d := range []struct {
		dev  string
		rate float64
	}{{"eth0", 200e3}, {"lo", 20e3}, {"docker0", 5e3}} {
		for _, dir := range []string{"receive", "transmit"} {
			add("node_network_"+dir+"_bytes_total", kCounterInt, d.rate/2, d.rate, "device", d.dev)
			add("node_network_"+dir+"_packets_total", kCounterInt, d.rate/2000, d.rate/1000, "device", d.dev)
			add("node_network_"+dir+"_errs_total", kCounterInt, 0, 0.001, "device", d.dev)
			add("node_network_"+dir+"_drop_total", kCounterInt, 0, 0.01, "device", d.dev)
		}
		add("node_network_up", kConst, 1, 1, "device", d.dev)
		add("node_network_mtu_bytes", kConst, 1500, 1500, "device", d.dev)
		add("node_network_speed_bytes", kConst, 125e6, 125e6, "device", d.dev)
	}
	// Disks.
	for _, d := range []string{"nvme0n1", "sda"} {
		add("node_disk_reads_completed_total", kCounterInt, 1, 50, "device", d)
		add("node_disk_writes_completed_total", kCounterInt, 5, 100, "device", d)
		add("node_disk_reads_merged_total", kCounterInt, 0, 5, "device", d)
		add("node_disk_writes_merged_total", kCounterInt, 1, 30, "device", d)
		add("node_disk_read_bytes_total", kCounterInt, 4096, 2e6, "device", d)
		add("node_disk_written_bytes_total", kCounterInt, 40960, 4e6, "device", d)
		add("node_disk_io_time_seconds_total", kCounterSec, 0.01, 0.2, "device", d)
		add("node_disk_read_time_seconds_total", kCounterSec, 0.001, 0.05, "device", d)
		add("node_disk_write_time_seconds_total", kCounterSec, 0.01, 0.3, "device", d)
		add("node_disk_io_now", kGaugeInt, 0, 4, "device", d)
	}
	// File systems.
	for _, fs := range [][3]string{{"/dev/nvme0n1p1", "ext4", "/"}, {"/dev/nvme0n1p2", "ext4", "/var"}, {"/dev/sda1", "xfs", "/data"}, {"tmpfs", "tmpfs", "/run"}} {
		ls := []string{"device", fs[0], "fstype", fs[1], "mountpoint", fs[2]}
		add("node_filesystem_size_bytes", kConst, 10<<30, 1<<40, ls...)
		fk := kGaugePages
		if fs[2] != "/var" {
			fk = kGaugeSlow
		}
		add("node_filesystem_avail_bytes", fk, 1<<30, 500<<30, ls...)
		add("node_filesystem_free_bytes", fk, 1<<30, 500<<30, ls...)
		add("node_filesystem_files", kConst, 1e6, 6e7, ls...)
		add("node_filesystem_files_free", kGaugeInt, 5e5, 5.9e7, ls...)
		add("node_filesystem_readonly", kConst, 0, 0, ls...)
		add("node_filesystem_device_error", kConst, 0, 0, ls...)
	}
	add("node_load1", kGaugeLoad, 0, 8)
	add("node_load5", kGaugeLoad, 0, 6)
	add("node_load15", kGaugeLoad, 0, 4)
	for _, n := range []string{"pgfault", "pgpgin", "pgpgout", "numa_hit"} {
		add("node_vmstat_"+n, kCounterInt, 100, 5000)
	}
	for _, n := range []string{"pgmajfault", "pswpin", "pswpout", "oom_kill", "pgsteal_kswapd", "pgscan_kswapd"} {
		add("node_vmstat_"+n, kCounterInt, 0, 0.01)
	}
	for _, n := range []string{"Tcp_ActiveOpens", "Tcp_PassiveOpens", "Tcp_CurrEstab", "Tcp_InErrs", "Tcp_InSegs", "Tcp_OutRsts", "Tcp_OutSegs", "Tcp_RetransSegs", "Udp_InDatagrams", "Udp_InErrors", "Udp_NoPorts", "Udp_OutDatagrams", "Udp_RcvbufErrors", "Udp_SndbufErrors", "Icmp_InErrors", "Icmp_InMsgs", "Icmp_OutMsgs", "TcpExt_ListenDrops", "TcpExt_ListenOverflows", "TcpExt_SyncookiesSent"} {
		add("node_netstat_"+n, kCounterInt, 0, 100)
	}
	for _, n := range []string{"sockets_used", "TCP_alloc", "TCP_inuse", "TCP_mem", "TCP_mem_bytes", "TCP_orphan", "TCP_tw", "UDP_inuse", "UDP_mem", "FRAG_inuse"} {
		add("node_sockstat_"+n, kGaugeInt, 0, 1000)
	}
	add("node_context_switches_total", kCounterInt, 2000, 20000)
	add("node_intr_total", kCounterInt, 1000, 10000)
	add("node_forks_total", kCounterInt, 1, 30)
	add("node_procs_running", kGaugeInt, 1, 12)
	add("node_procs_blocked", kGaugeInt, 0, 2)
	add("node_boot_time_seconds", kConst, 1.69e9, 1.7e9)
	add("node_time_seconds", kTimeSeconds, 0, 0)
	add("node_entropy_available_bits", kGaugeInt, 256, 256)
	add("node_filefd_allocated", kGaugeInt, 1000, 20000)
	add("node_filefd_maximum", kConst, 9.2e18, 9.2e18)
	for _, c := range []string{"arp", "bcache", "conntrack", "cpu", "cpufreq", "diskstats", "edac", "entropy", "filefd", "filesystem", "hwmon", "loadavg", "meminfo", "netclass", "netdev", "netstat", "sockstat", "stat", "time", "vmstat"} {
		add("node_scrape_collector_duration_seconds", kGaugeNoisy, 1e-5, 0.02, "collector", c)
		add("node_scrape_collector_success", kConst, 1, 1, "collector", c)
	}
	for _, q := range []string{"0", "0.25", "0.5", "0.75", "1"} {
		add("go_gc_duration_seconds", kGaugeNoisy, 2e-5, 4e-4, "quantile", q)
	}
	add("go_gc_duration_seconds_sum", kCounterSec, 0, 0.001)
	add("go_gc_duration_seconds_count", kCounterInt, 0, 0.2)
	add("go_goroutines", kGaugeInt, 7, 12)
	add("go_threads", kGaugeInt, 8, 12)
	for _, n := range []string{"alloc_bytes", "heap_alloc_bytes", "heap_inuse_bytes", "heap_idle_bytes", "heap_sys_bytes", "stack_inuse_bytes", "sys_bytes", "mspan_inuse_bytes", "next_gc_bytes", "heap_objects"} {
		add("go_memstats_"+n, kGaugePages, 1<<20, 32<<20)
	}
	add("go_memstats_alloc_bytes_total", kCounterInt, 2e5, 1e6)
	add("go_memstats_mallocs_total", kCounterInt, 1e3, 5e3)
	add("go_memstats_frees_total", kCounterInt, 1e3, 5e3)
	add("process_cpu_seconds_total", kCounterTick, 0.5, 3)
	add("process_resident_memory_bytes", kGaugePages, 16<<20, 40<<20)
	add("process_virtual_memory_bytes", kGaugePages, 700<<20, 800<<20)
	add("process_open_fds", kGaugeInt, 8, 14)
	add("process_max_fds", kConst, 1048576, 1048576)
	add("process_start_time_seconds", kConst, 1.69e9, 1.7e9)
	add("node_uname_info", kConst, 1, 1, "domainname", "(none)", "machine", "x86_64", "release", "6.8.0-45-generic", "sysname", "Linux", "version", "#45-Ubuntu SMP")
	add("node_os_info", kConst, 1, 1, "id", "ubuntu", "name", "Ubuntu", "pretty_name", "Ubuntu 24.04.1 LTS", "version_id", "24.04")
	// What the scrape itself adds.
	add("up", kConst, 1, 1)
	add("scrape_duration_seconds", kGaugeNoisy, 0.01, 0.06)
	add("scrape_samples_scraped", kConst, 0, 0) // set to the series count below
	add("scrape_samples_post_metric_relabeling", kConst, 0, 0)
	add("scrape_series_added", kConst, 0, 0)
	return out
}

// nodeTarget is one scraped node_exporter.
type nodeTarget struct {
	instance string
	phaseMs  int64
	rng      uint64
	series   []nodeSeries
}

func newNodeTargets(n int) []*nodeTarget {
	specs := nodeSpecs()
	ts := make([]*nodeTarget, n)
	for i := range ts {
		inst := fmt.Sprintf("host-%04d:9100", i)
		t := &nodeTarget{instance: inst, rng: uint64(i)*0x1000193 + 7}
		t.phaseMs = int64(splitmix(&t.rng) % 15000)
		for k, sp := range specs {
			b := labels.NewScratchBuilder(len(sp.labels)/2 + 3)
			b.Add("__name__", sp.name)
			b.Add("instance", inst)
			b.Add("job", "node")
			for x := 0; x+1 < len(sp.labels); x += 2 {
				b.Add(sp.labels[x], sp.labels[x+1])
			}
			b.Sort()
			s := nodeSeries{lset: b.Labels(), spec: sp, rng: uint64(i)<<20 ^ uint64(k)*0x9e37 ^ 0x5eed}
			r := &s.rng
			switch sp.kind {
			case kConst:
				s.v = math.Round(sp.lo + (sp.hi-sp.lo)*unit(r))
				if sp.name == "scrape_samples_scraped" || sp.name == "scrape_samples_post_metric_relabeling" {
					s.v = float64(len(specs) - 5)
				}
			case kCounterInt, kCounterSec:
				s.rate = sp.lo + (sp.hi-sp.lo)*unit(r)
				s.v = math.Round(s.rate * 86400 * (1 + 30*unit(r))) // uptime of 1..31 days
				if sp.kind == kCounterSec {
					s.v /= 1e6
				}
			case kCounterTick:
				s.rate = sp.lo + (sp.hi-sp.lo)*unit(r)
				s.v = math.Round(s.rate * 86400 * (1 + 30*unit(r)))
			case kGaugePages, kGaugeSlow:
				s.v = math.Round((sp.lo + (sp.hi-sp.lo)*unit(r)) / 4096)
			case kGaugeInt:
				s.v = math.Round(sp.lo + (sp.hi-sp.lo)*unit(r))
			case kGaugeLoad:
				s.v = (sp.hi - sp.lo) * unit(r) / 2
			}
			t.series = append(t.series, s)
		}
		ts[i] = t
	}
	return ts
}

// scrapeTime is the timestamp of scrape j: start + j*interval + the target's
// phase, with a few milliseconds of jitter on one scrape in ten. It stays
// inside [start + j*interval, start + (j+1)*interval), so scrapes aligned to
// a block range never leave it.
func (t *nodeTarget) scrapeTime(startMs, intervalMs int64, j int64) int64 {
	ts := startMs + j*intervalMs + 3 + t.phaseMs%(intervalMs-6)
	if splitmix(&t.rng)%10 == 0 {
		ts += int64(splitmix(&t.rng)%7) - 3
	}
	return ts
}

// next advances a series by one scrape of intervalS seconds at time tMs and
// returns its value.
func (s *nodeSeries) next(intervalS float64, tMs int64) float64 {
	r := &s.rng
	sp := &s.spec
	switch sp.kind {
	case kConst:
		return s.v
	case kCounterInt:
		// Bursty: most scrapes near the rate, some much higher.
		f := 0.5 + unit(r)
		if unit(r) < 0.05 {
			f *= 5
		}
		s.v += math.Round(s.rate * intervalS * f)
		return s.v
	case kCounterSec:
		s.v += math.Round(s.rate*intervalS*(0.5+unit(r))*1e6) / 1e6
		return math.Round(s.v*1e6) / 1e6
	case kCounterTick:
		s.v += math.Round(s.rate * intervalS * (0.7 + 0.6*unit(r)))
		return s.v / 100
	case kGaugePages:
		mid := (sp.lo + sp.hi) / 2 / 4096
		s.v += math.Round((unit(r)-0.5)*mid*0.01 + (mid-s.v)*0.01)
		if s.v < 1 {
			s.v = 1
		}
		return s.v * 4096
	case kGaugeSlow:
		if unit(r) < 0.02 {
			s.v = math.Max(1, s.v+math.Round((unit(r)-0.5)*256))
		}
		return s.v * 4096
	case kGaugeNoisy:
		return sp.lo + (sp.hi-sp.lo)*unit(r)*unit(r)
	case kGaugeLoad:
		target := (sp.hi - sp.lo) * unit(r) * unit(r)
		s.v += (target - s.v) * 0.1
		return math.Round(s.v*100) / 100
	case kGaugeInt:
		if sp.lo == sp.hi {
			return sp.lo
		}
		step := math.Round((unit(r) - 0.5) * math.Max(1, (sp.hi-sp.lo)*0.02))
		s.v = math.Min(sp.hi, math.Max(sp.lo, s.v+step))
		return s.v
	case kTimeSeconds:
		return float64(tMs)/1000 + float64(splitmix(r)%1000)/1e6
	}
	return 0
}
