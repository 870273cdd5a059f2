package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// result is one measurement: one kind of client at one client count.
type result struct {
	kind      string // "raw" or "http"
	clients   int
	elapsed   time.Duration
	latencies []time.Duration // of the successful calls, sorted
	cpu       cpuSample       // used over the measurement
	cpuKnown  bool
	errors    int
	firstErr  error
}

// add counts part, a later measurement of the same clients, into r.
func (r *result) add(part result) {
	r.elapsed += part.elapsed
	r.latencies = append(r.latencies, part.latencies...)
	r.cpu = r.cpu.plus(part.cpu)
	r.cpuKnown = r.cpuKnown && part.cpuKnown
	r.errors += part.errors
	r.firstErr = cmp.Or(r.firstErr, part.firstErr)
}

func (r result) perSecond() float64 {
	return float64(len(r.latencies)) / r.elapsed.Seconds()
}

// percentile is the nearest-rank percentile of the latencies.
func (r result) percentile(p float64) time.Duration { return percentile(r.latencies, p) }

// percentile is the nearest-rank percentile of sorted latencies, 0 for none.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

func (r result) cpuPerRequest() (cpuSample, bool) {
	if !r.cpuKnown || len(r.latencies) == 0 {
		return cpuSample{}, false
	}
	n := time.Duration(len(r.latencies))
	return cpuSample{firebird: r.cpu.firebird / n, server: r.cpu.server / n, generator: r.cpu.generator / n}, true
}

// printTable prints raw and http side by side; results holds a raw result
// followed by the http result of the same client count.
func printTable(w io.Writer, results []result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "clients\tkind\treq/s\tp50\tp99\tratio(http/raw)\tfirebird CPU/req\tserver\tgenerator\tbox CPU/req")
	var raw result
	for _, r := range results {
		ratio, fb, srv, gen, box := "-", "n/a", "n/a", "n/a", "n/a"
		perReq, ok := r.cpuPerRequest()
		if ok {
			fb, srv, gen, box = ms(perReq.firebird), ms(perReq.server), ms(perReq.generator), ms(perReq.box())
		}
		if r.kind == "raw" {
			raw = r
		} else {
			if raw.perSecond() > 0 {
				ratio = fmt.Sprintf("%.2f", r.perSecond()/raw.perSecond())
			}
			if rawPerReq, rawOK := raw.cpuPerRequest(); ok && rawOK && rawPerReq.firebird > 0 && rawPerReq.box() > 0 {
				fb += fmt.Sprintf(" (%.2fx raw)", float64(perReq.firebird)/float64(rawPerReq.firebird))
				box += fmt.Sprintf(" (%.2fx raw)", float64(perReq.box())/float64(rawPerReq.box()))
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			r.clients, r.kind, r.perSecond(), ms(r.percentile(50)), ms(r.percentile(99)), ratio, fb, srv, gen, box)
	}
	return tw.Flush()
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}

// clockTicksPerSecond is sysconf(_SC_CLK_TCK), the unit of /proc/<pid>/stat's
// CPU times: 100 on every Linux architecture Go supports, and reading it for
// real would need cgo.
const clockTicksPerSecond = 100

// cpuSample is CPU time (user + system): Firebird's, the local server's and
// this generator's (whose clients are the raw calls or the HTTP ones). On a
// box they share, what a call costs them all (box) is what bounds the calls
// per second.
type cpuSample struct{ firebird, server, generator time.Duration }

func (c cpuSample) box() time.Duration { return c.firebird + c.server + c.generator }

func (c cpuSample) plus(d cpuSample) cpuSample {
	return cpuSample{firebird: c.firebird + d.firebird, server: c.server + d.server, generator: c.generator + d.generator}
}

func (c cpuSample) minus(d cpuSample) cpuSample {
	return cpuSample{firebird: c.firebird - d.firebird, server: c.server - d.server, generator: c.generator - d.generator}
}

// sampleCPU is the CPU time used so far, the local server's being the
// process serverPID's.
func sampleCPU(serverPID int) (cpuSample, error) {
	fb, err := firebirdCPU()
	if err != nil {
		return cpuSample{}, err
	}
	self, err := processCPU("/proc/self/stat")
	if err != nil {
		return cpuSample{}, err
	}
	srv, err := processCPU(fmt.Sprintf("/proc/%d/stat", serverPID))
	if err != nil {
		return cpuSample{}, err
	}
	return cpuSample{firebird: fb, server: srv, generator: self}, nil
}

// firebirdCPU is the CPU time (user + system) the Firebird server processes
// have used so far, summed because Classic Server runs one per attachment.
func firebirdCPU() (time.Duration, error) {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return 0, err
	}
	var total time.Duration
	found := false
	for _, dir := range dirs {
		comm, err := os.ReadFile(filepath.Join(dir, "comm"))
		if err != nil || strings.TrimSpace(string(comm)) != "firebird" {
			continue // most processes are not Firebird; some exit while we scan
		}
		cpu, err := processCPU(filepath.Join(dir, "stat"))
		if err != nil {
			return 0, err
		}
		total += cpu
		found = true
	}
	if !found {
		return 0, errors.New("no process named firebird on this machine")
	}
	return total, nil
}

// processCPU reads utime and stime, fields 14 and 15 of a /proc/<pid>/stat.
func processCPU(statPath string) (time.Duration, error) {
	data, err := os.ReadFile(statPath)
	if err != nil {
		return 0, fmt.Errorf("CPU: %w", err)
	}
	// Field 2, the command, is in parentheses and may hold spaces, so count
	// from the last ")": what follows starts at field 3.
	end := strings.LastIndexByte(string(data), ')')
	fields := strings.Fields(string(data[end+1:]))
	if end < 0 || len(fields) < 13 {
		return 0, fmt.Errorf("CPU: %s: unexpected format", statPath)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("CPU: %s: %w", statPath, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicksPerSecond, nil
}
