//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
)

// coldStartRuns is how many fresh Node processes the cold start's median is
// taken over: 20 keeps the median steady to a few ms on a shared 2-core
// machine in about 10 s.
const coldStartRuns = 20

// initTraceRuns is how many GODEBUG=inittrace=1 runs each initialiser's
// median clock is taken over.
const initTraceRuns = 5

// initTraceTop is how many of the slowest package initialisers are printed.
const initTraceTop = 10

// coldStart is one run of cmd/bench/coldstart.mjs (see there for what each
// phase covers).
type coldStart struct {
	CompileMs    float64 `json:"compileMs"`
	InitMs       float64 `json:"initMs"`
	ReadyMs      float64 `json:"readyMs"`
	CompileCPUMs float64 `json:"compileCpuMs"`
	InitCPUMs    float64 `json:"initCpuMs"`
	ReadyCPUMs   float64 `json:"readyCpuMs"`
	Bindings     int     `json:"bindings"`
}

// benchColdStart prints the median cold start of the wasm module under Node
// 22 (the pinned devDependency, as wrangler uses), from the module's bytes to
// the Go program's `ready`, and the slowest package initialisers.
func benchColdStart(root, wasm string, runs int) {
	node := filepath.Join(root, "node_modules", ".bin", "node")
	script := filepath.Join(root, "cmd", "bench", "coldstart.mjs")
	execJS := filepath.Join(root, "build", "wasm_exec.js")
	version, err := exec.Command(node, "--version").Output()
	if err != nil {
		fail("node: %v (run make install)", err)
	}
	var all []coldStart
	for i := 0; i < runs; i++ {
		all = append(all, runColdStart(node, script, wasm, execJS, ""))
	}
	med := func(f func(coldStart) float64) float64 {
		v := make([]float64, len(all))
		for i, c := range all {
			v[i] = f(c)
		}
		return median(v)
	}
	ready := med(func(c coldStart) float64 { return c.ReadyMs })
	fmt.Printf("\nCold start, Node %s (fresh process per run, module bytes in memory → Go calls `ready`), median of %d runs\n",
		strings.TrimSpace(string(version)), runs)
	fmt.Printf("%-10s %9s %9s %9s %13s\n", "", "median ms", "min ms", "max ms", "CPU median ms")
	for _, p := range []struct {
		name    string
		f, cpuf func(coldStart) float64
	}{
		{"compile", func(c coldStart) float64 { return c.CompileMs }, func(c coldStart) float64 { return c.CompileCPUMs }},
		{"init", func(c coldStart) float64 { return c.InitMs }, func(c coldStart) float64 { return c.InitCPUMs }},
		{"ready", func(c coldStart) float64 { return c.ReadyMs }, func(c coldStart) float64 { return c.ReadyCPUMs }},
	} {
		lo, hi := spread(all, p.f)
		fmt.Printf("%-10s %9.1f %9.1f %9.1f %13.1f\n", p.name, med(p.f), lo, hi, med(p.cpuf))
	}
	fmt.Printf("ready median %.1f ms; goal ≤ 60 ms (the platform's startup limit is 1 s); %d entry points bound\n", ready, all[0].Bindings)
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		// Wall-clock figures grow with other work on the machine; CPU time less so.
		fmt.Printf("load average during the runs: %s (%d CPUs)\n", strings.Join(strings.Fields(string(load))[:3], " "), runtime.NumCPU())
	}

	// Package initialisers: each one's median clock over initTraceRuns runs.
	clocks := map[string][]float64{}
	var sums []float64
	for i := 0; i < initTraceRuns; i++ {
		trace := runInitTrace(node, script, wasm, execJS)
		sum := 0.0
		for pkg, ms := range trace {
			clocks[pkg] = append(clocks[pkg], ms)
			sum += ms
		}
		sums = append(sums, sum)
	}
	type pkgClock struct {
		pkg string
		ms  float64
	}
	var pkgs []pkgClock
	for pkg, v := range clocks {
		pkgs = append(pkgs, pkgClock{pkg, median(v)})
	}
	sort.Slice(pkgs, func(i, j int) bool {
		if pkgs[i].ms != pkgs[j].ms {
			return pkgs[i].ms > pkgs[j].ms
		}
		return pkgs[i].pkg < pkgs[j].pkg
	})
	fmt.Printf("package initialisers (GODEBUG=inittrace=1, median of %d runs): %d packages, %.1f ms in all; slowest:\n",
		initTraceRuns, len(pkgs), median(sums))
	for i := 0; i < initTraceTop && i < len(pkgs); i++ {
		fmt.Printf("  %6.2f ms  %s\n", pkgs[i].ms, pkgs[i].pkg)
	}
}

func runColdStart(node, script, wasm, execJS, godebug string) coldStart {
	args := []string{script, wasm, execJS}
	if godebug != "" {
		args = append(args, godebug)
	}
	cmd := exec.Command(node, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		fail("cold start: %v: %s", err, stderr.String())
	}
	var c coldStart
	if err := json.Unmarshal(out, &c); err != nil {
		fail("cold start: %v: %q", err, out)
	}
	return c
}

// initLine is one line of GODEBUG=inittrace=1:
// "init net/http @99 ms, 0.97 ms clock, 2392 bytes, 35 allocs".
var initLine = regexp.MustCompile(`^init (\S+) @[0-9.]+ ms, ([0-9.]+) ms clock`)

func runInitTrace(node, script, wasm, execJS string) map[string]float64 {
	cmd := exec.Command(node, script, wasm, execJS, "inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		fail("inittrace: %v: %s", err, stderr.String())
	}
	trace := map[string]float64{}
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		if m := initLine.FindStringSubmatch(sc.Text()); m != nil {
			ms, _ := strconv.ParseFloat(m[2], 64)
			trace[m[1]] += ms
		}
	}
	return trace
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func spread(all []coldStart, f func(coldStart) float64) (lo, hi float64) {
	for i, c := range all {
		v := f(c)
		if i == 0 || v < lo {
			lo = v
		}
		if i == 0 || v > hi {
			hi = v
		}
	}
	return lo, hi
}

// uploadLine is wrangler's size line: "Total Upload: 10043.15 KiB / gzip: 2736.75 KiB".
var uploadLine = regexp.MustCompile(`Total Upload: ([0-9.]+) KiB / gzip: ([0-9.]+) KiB`)

// printUploadSize prints the upload size wrangler reports for a deploy (the
// figure Cloudflare's size limits apply to), from a dry run: nothing is sent.
func printUploadSize(root string) {
	dir, err := os.MkdirTemp("", "bench-dry-run-")
	if err != nil {
		fail("temp dir: %v", err)
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command(filepath.Join(root, "node_modules", ".bin", "wrangler"), "deploy", "--dry-run", "--outdir", dir)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "WRANGLER_SEND_METRICS=false",
		"PATH="+filepath.Join(root, "node_modules", ".bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	m := uploadLine.FindSubmatch(out)
	if err != nil || m == nil {
		fail("wrangler deploy --dry-run: %v: %s", err, out)
	}
	fmt.Printf("upload (wrangler deploy --dry-run): %s KiB, gzip %s KiB; Cloudflare's limit is 64 MiB uncompressed (the build's guard: 16 MiB raw)\n", m[1], m[2])
}
