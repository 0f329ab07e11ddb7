//go:build unix

// Package devstack holds what the integration tests and cmd/bench share to
// run the local stack: free loopback ports, the environment for the
// project's own wrangler (Node 22 from node_modules), process groups that
// stop cleanly, and waiting for /health.
package devstack

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// StopTimeout is how long a stopped process group gets before SIGKILL.
const StopTimeout = 10 * time.Second

// FreePort returns a free TCP port on loopback.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
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
// stops what it spawns (wrangler runs workerd as a child).
func InGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// StopGroup terminates cmd's process group and waits for it.
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
}

// WaitHealthy polls base/health until it answers 200 or timeout passes.
func WaitHealthy(base string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(base + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	return fmt.Errorf("%s/health not healthy after %s", base, timeout)
}
