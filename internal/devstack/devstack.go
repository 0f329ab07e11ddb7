//go:build unix

// Package devstack holds what the integration tests and cmd/bench share to
// run the local stack: free loopback ports, the environment for the
// project's own wrangler (Node 22 from node_modules), process groups that
// stop cleanly, and waiting for /health.
package devstack

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// StopTimeout is how long a stopped process group gets before SIGKILL.
const StopTimeout = 10 * time.Second

// OutputWaitDelay bounds how long Wait reads a process's output once the
// process has exited. Without it, a descendant that left the group (or
// was not yet killed) and holds the output pipe makes Wait, and whatever
// test or command stops the stack, block forever.
const OutputWaitDelay = 5 * time.Second

// given is every port FreePort handed out in this process: stacks started
// side by side (parallel tests) must not be handed the same port between
// its check and its use.
var given struct {
	sync.Mutex
	ports map[int]bool
}

// freePortTries bounds FreePort's retries when the kernel offers a port
// handed out already.
const freePortTries = 100

// FreePort returns a free TCP port on loopback, never one it returned before.
func FreePort() (int, error) {
	given.Lock()
	defer given.Unlock()
	if given.ports == nil {
		given.ports = map[int]bool{}
	}
	for range freePortTries {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !given.ports[p] {
			given.ports[p] = true
			return p, nil
		}
	}
	return 0, fmt.Errorf("no new free port after %d tries", freePortTries)
}

// Wrangler is the project's pinned wrangler under root.
func Wrangler(root string) string {
	return filepath.Join(root, "node_modules", ".bin", "wrangler")
}

// ToolEnv is the environment for wrangler: node_modules/.bin first on PATH
// (its Node 22), no metrics, non-interactive, no colours.
func ToolEnv(root string) []string {
	return append(os.Environ(),
		"PATH="+filepath.Join(root, "node_modules", ".bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"WRANGLER_SEND_METRICS=false",
		"CI=true",
		"NO_COLOR=1",
	)
}

// InGroup makes cmd start in its own process group, so StopGroup also
// stops what it spawns (wrangler runs workerd as a child). Wait never
// waits on output longer than OutputWaitDelay after the process exits.
func InGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = OutputWaitDelay
}

// RunBounded runs cmd in its own group (InGroup) and returns its combined
// output. If it has not ended after timeout, its group is killed and the
// error says so: a one-off tool that hangs fails its caller instead of
// holding it until the test binary's own timeout.
func RunBounded(name string, args []string, dir string, env []string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	InGroup(cmd)
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return out, fmt.Errorf("%s did not end within %s, killed: %w", filepath.Base(name), timeout, err)
	}
	return out, err
}

// StopGroup terminates cmd's process group and waits for it. Whatever of
// the group outlives cmd itself (Wait gives up on their output after
// OutputWaitDelay) is killed, so no runtime is left holding a port or the
// persisted state a restart reuses.
func StopGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(StopTimeout):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// SyncBuffer collects a process's output, safe to read while it writes.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// healthProbeTimeout bounds one /health probe: a server that accepts the
// connection while it is still starting must not hold the wait past its
// own timeout.
const healthProbeTimeout = 10 * time.Second

var healthClient = &http.Client{Timeout: healthProbeTimeout}

// WaitHealthy polls base/health until it answers 200 or timeout passes.
func WaitHealthy(base string, timeout time.Duration) error {
	return WaitHealthyUnless(base, timeout, func() error { return nil })
}

// WaitHealthyUnless is WaitHealthy that gives up early with failed's
// error once it says the server cannot come up (its process reported an
// error that waiting will not mend).
func WaitHealthyUnless(base string, timeout time.Duration, failed func() error) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if err := failed(); err != nil {
			return err
		}
		if resp, err := healthClient.Get(base + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	return fmt.Errorf("%s/health not healthy after %s", base, timeout)
}
