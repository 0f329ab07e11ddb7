//go:build integration

// Package e2e runs the real Worker (build/app.wasm behind shim/) under
// `wrangler dev` (workerd with local D1, R2, KV, Queues and Durable Objects)
// against cmd/upstream-sim, all on free loopback ports, and checks it over HTTP.
package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"storecrawl/internal/devstack"
)

const (
	adminToken = "e2e-admin-token"
	// clientToken is the limiter client token (LIMITER_CLIENT_TOKEN) POST
	// /v1/limiter/acquire and client keys' status need.
	clientToken    = "e2e-client-token"
	startupTimeout = 120 * time.Second
	// testTallyS is LIMITER_TALLY_S where a test waits for limiter facts
	// or an idle key's retirement: a key's facts every 5 s instead of every
	// minute (the setting's default).
	testTallyS = 5
	// testIdleS is ENRICHMENT_IDLE_S where a test waits for an idle
	// controller to see new work: a poll every 5 s instead of every two
	// minutes (the default).
	testIdleS = 5
	// testConfirmS is LEDGER_CONFIRM_AFTER_S where a test waits for a
	// limiter key's retirement, which waits for its facts to be confirmed
	// in D1: a check 10 s after a send instead of 10 minutes (the default).
	testConfirmS = 10
)

var root = mustAbs("../..")

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return a
}

// outputDir is where logs of each run are kept for inspection.
func outputDir(t *testing.T) string {
	d := filepath.Join(root, ".test-output", t.Name())
	os.RemoveAll(d)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func freePort(t *testing.T) int {
	t.Helper()
	p, err := devstack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func toolEnv() []string { return devstack.ToolEnv(root) }

// syncBuffer collects a process's output for assertions on log lines.
type syncBuffer = devstack.SyncBuffer

// startProcess runs cmd in its own process group and stops the group at cleanup.
func startProcess(t *testing.T, cmd *exec.Cmd, logPath string) *syncBuffer {
	t.Helper()
	out := &syncBuffer{}
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.MultiWriter(out, f)
	cmd.Stderr = io.MultiWriter(out, f)
	devstack.InGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopGroup(cmd)
		f.Close()
	})
	return out
}

func stopGroup(cmd *exec.Cmd) { devstack.StopGroup(cmd) }

// sim is a running cmd/upstream-sim.
type sim struct {
	base string
	log  *syncBuffer
}

func startSim(t *testing.T, dir string, args ...string) *sim {
	t.Helper()
	return startSimulator(t, dir, "upstream-sim", args...)
}

// startSimulator starts cmd/<name> (built by TestMain) on a free loopback port
// (-addr 127.0.0.1:0), its log in dir/<name>.log, and waits for its
// "listening" event.
func startSimulator(t *testing.T, dir, name string, args ...string) *sim {
	t.Helper()
	bin, ok := binaries[name]
	if !ok {
		t.Fatalf("no binary of cmd/%s: TestMain builds %v", name, simulatorCommands)
	}
	cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	pr, pw := io.Pipe()
	logName := "sim.log"
	if name != "upstream-sim" {
		logName = name + ".log"
	}
	logf, _ := os.Create(filepath.Join(dir, logName))
	cmd.Stdout = pw
	errBuf := &syncBuffer{}
	cmd.Stderr = io.MultiWriter(errBuf, logf)
	devstack.InGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopGroup(cmd); pw.Close(); logf.Close() })
	addrCh := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			logf.Write(append(sc.Bytes(), '\n'))
			var ev struct{ Event, Addr string }
			if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Event == "listening" {
				addrCh <- ev.Addr
			}
		}
	}()
	select {
	case addr := <-addrCh:
		return &sim{base: "http://" + addr, log: errBuf}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not start: %s", name, errBuf.String())
	}
	return nil
}

// setConfig changes the simulator's hidden limit at runtime.
func (s *sim) setConfig(t *testing.T, cfg map[string]any) {
	t.Helper()
	var out map[string]any
	if code := doJSON(t, "POST", s.base+"/__config", "", cfg, &out); code != 200 {
		t.Fatalf("sim config %v: %d %v", cfg, code, out)
	}
}

func (s *sim) stats(t *testing.T) map[string]any {
	var out map[string]any
	doJSON(t, "GET", s.base+"/__stats", "", nil, &out)
	return out
}

// worker is a running `wrangler dev`.
type worker struct {
	base    string
	persist string
	simBase string
	dir     string
	log     *syncBuffer
	cmd     *exec.Cmd
	vars    []string // extra --var NAME:VALUE
	// owner is the top-level test: processes started from subtests (restart)
	// must live until it ends, not until the subtest does.
	owner *testing.T
}

// wrangler runs a one-off wrangler command against the persisted local state.
func wrangler(t *testing.T, persist string, args ...string) string {
	t.Helper()
	var out []byte
	var err error
	// A local D1 command beside a running wrangler dev meets its write lock
	// when the Worker is writing at that instant (SQLITE_BUSY): that
	// write ends in milliseconds, so the command is tried again.
	for attempt := 0; attempt < wranglerBusyAttempts; attempt++ {
		out, err = devstack.RunBounded(devstack.Wrangler(root), append(args, "--persist-to", persist), root, toolEnv(), toolTimeout)
		if err == nil || !strings.Contains(string(out), "SQLITE_BUSY") {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		t.Fatalf("wrangler %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// wranglerBusyAttempts bounds the tries of a local D1 command that meets
// wrangler dev's write lock.
const wranglerBusyAttempts = 5

// toolTimeout bounds a one-off tool run (a wrangler D1 command, the dry-run
// bundle, the migrations): one that hangs fails its test with its output
// instead of holding the whole suite until go test's -timeout, which
// names no test. They take seconds; 6 stacks at once on 2 cores, tens.
const toolTimeout = 3 * time.Minute

// prepareDB gives persist the migrated local state with the simulator's
// first n apps queued: a copy of the run's snapshot for n (TestMain's
// seededState), so no test runs wrangler's migrations or the seed itself.
func prepareDB(t *testing.T, persist, dir string, n int) {
	t.Helper()
	snap, err := seededState(n)
	if err != nil {
		t.Fatalf("local state with %d apps: %v", n, err)
	}
	if err := copyTree(snap, persist); err != nil {
		t.Fatalf("copy the local state: %v", err)
	}
}

// seedSQL runs a script against the local D1 under persist before wrangler
// dev starts on it (what `wrangler d1 execute --local --file` did, without
// starting a runtime for it).
func seedSQL(t *testing.T, persist, script string) {
	t.Helper()
	if err := execSQL(persist, script); err != nil {
		t.Fatalf("seed the local D1: %v", err)
	}
}

func startWorker(t *testing.T, dir, persist, simBase string) *worker {
	t.Helper()
	w := &worker{persist: persist, simBase: simBase, dir: dir, owner: t}
	w.start(t, "wrangler-1.log")
	return w
}

// startAttempts bounds the starts of wrangler dev. A start is tried again
// when its free port was taken between our pick and its bind (parallel
// tests pick ports at once), or when it did not answer /health within
// startupTimeout: one wedged start of the local runtime is given a new
// process instead of failing its test. Each failed start is logged with
// its log's tail, so a start that keeps failing still fails the test.
const startAttempts = 3

// errPortTaken: wrangler dev found its port in use.
var errPortTaken = errors.New("wrangler dev: address already in use")

func (w *worker) start(t *testing.T, logName string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		err := w.startOnce(t, logName)
		if err == nil {
			return
		}
		if attempt < startAttempts {
			t.Logf("wrangler dev start %d of %d failed, trying again: %v; log:\n%s", attempt, startAttempts, err, tail(w.log.String(), 2000))
			stopGroup(w.cmd)
			continue
		}
		t.Fatalf("wrangler dev did not become healthy: %v; log:\n%s", err, tail(w.log.String(), 4000))
	}
}

func (w *worker) startOnce(t *testing.T, logName string) error {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(devstack.Wrangler(root), "dev",
		"--ip", "127.0.0.1", "--port", fmt.Sprint(port),
		"--inspector-port", fmt.Sprint(freePort(t)),
		"--persist-to", w.persist,
		"--test-scheduled", "--show-interactive-dev-session=false",
		"--var", "UPSTREAM_API_BASE:"+w.simBase,
		"--var", "UPSTREAM_STORE_BASE:"+w.simBase,
		"--var", "UPSTREAM_HINTS_BASE:"+w.simBase,
		"--var", "ADMIN_TOKEN:"+adminToken,
		"--var", "LIMITER_CLIENT_TOKEN:"+clientToken,
		// Alert webhooks to the tests' receivers on loopback.
		"--var", "ALLOW_LOOPBACK_WEBHOOKS:1",
	)
	for _, v := range w.vars {
		cmd.Args = append(cmd.Args, "--var", v)
	}
	cmd.Dir = root
	cmd.Env = toolEnv()
	w.cmd = cmd
	owner := w.owner
	if owner == nil {
		owner = t
	}
	w.log = startProcess(owner, cmd, filepath.Join(w.dir, logName))
	w.base = fmt.Sprintf("http://127.0.0.1:%d", port)
	log := w.log
	return devstack.WaitHealthyUnless(w.base, startupTimeout, func() error {
		if strings.Contains(log.String(), "Address already in use") {
			return errPortTaken
		}
		return nil
	})
}

// restart stops wrangler dev and starts it again on the same persisted state.
func (w *worker) restart(t *testing.T, logName string) {
	t.Helper()
	stopGroup(w.cmd)
	w.start(t, logName)
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func itoa(n int) string { return fmt.Sprint(n) }

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

var client = &http.Client{Timeout: 30 * time.Second}

// doJSON sends an optional JSON body (or a raw string) and decodes the answer.
func doJSON(t *testing.T, method, url, token string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, url, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: undecodable %q", method, url, raw)
		}
	}
	return resp.StatusCode
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s; last: %s", timeout, what, last)
}
