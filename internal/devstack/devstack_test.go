//go:build unix

package devstack

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A server that cannot come up is given up on as soon as its process
// says so, not after the whole timeout; a healthy one is waited for.
func TestWaitHealthyUnless(t *testing.T) {
	t.Parallel()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }))
	defer down.Close()
	taken := errors.New("address already in use")
	calls := 0
	start := time.Now()
	err := WaitHealthyUnless(down.URL, time.Minute, func() error {
		if calls++; calls > 2 {
			return taken
		}
		return nil
	})
	if !errors.Is(err, taken) || time.Since(start) > 10*time.Second {
		t.Fatalf("err %v after %s: want the process's error, early", err, time.Since(start))
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer up.Close()
	if err := WaitHealthy(up.URL, time.Minute); err != nil {
		t.Fatal(err)
	}
}

// A descendant that left the group and still holds the output pipe (here
// a setsid sleep) must not hold StopGroup: Wait gives up on the output
// after OutputWaitDelay. Without it, StopGroup waits out the sleep.
func TestStopGroupDoesNotWaitOnALeakedPipe(t *testing.T) {
	t.Parallel()
	const leaked = 60 * time.Second
	var out syncOutput
	cmd := exec.Command("sh", "-c", fmt.Sprintf("setsid sleep %d & echo $!; sleep %d", int(leaked.Seconds()), int(leaked.Seconds())))
	cmd.Stdout = &out
	InGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(10 * time.Second); pid == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		fmt.Sscan(out.String(), &pid)
	}
	if pid == 0 {
		t.Fatal("the leaked process did not start")
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	start := time.Now()
	StopGroup(cmd)
	if took := time.Since(start); took > StopTimeout {
		t.Fatalf("StopGroup took %s with a leaked pipe holder: want at most %s", took, StopTimeout)
	}
}

// A one-off command that hangs is killed, group and all, at its timeout.
func TestRunBoundedKillsAHang(t *testing.T) {
	t.Parallel()
	start := time.Now()
	out, err := RunBounded("sh", []string{"-c", "echo started; sleep 60 & sleep 60"}, "", nil, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "did not end within") {
		t.Fatalf("err %v: want the timeout", err)
	}
	if took := time.Since(start); took > OutputWaitDelay+2*time.Second || !strings.Contains(string(out), "started") {
		t.Fatalf("took %s, output %q", took, out)
	}
	if out, err := RunBounded("sh", []string{"-c", "echo ok"}, "", nil, 10*time.Second); err != nil || string(out) != "ok\n" {
		t.Fatalf("a command that ends: %q %v", out, err)
	}
}

// syncOutput is a bytes.Buffer safe to read while a process writes it.
type syncOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncOutput) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncOutput) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// A server that accepts the connection and never answers is given up on
// at the wait's timeout, not held on for good.
func TestWaitHealthyGivesUpOnAServerThatNeverAnswers(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-hold }))
	defer silent.Close()
	defer close(hold)
	start := time.Now()
	if err := WaitHealthy(silent.URL, time.Second); err == nil {
		t.Fatal("a server that never answers was taken as healthy")
	}
	if took := time.Since(start); took > healthProbeTimeout+2*time.Second {
		t.Fatalf("gave up after %s", took)
	}
}

// A group member that ignores SIGTERM and has let go of the output (as a
// runtime still shutting down may) does not outlive StopGroup.
func TestStopGroupLeavesNoMemberRunning(t *testing.T) {
	t.Parallel()
	var out syncOutput
	cmd := exec.Command("sh", "-c", `(trap "" TERM; exec >/dev/null 2>&1; sleep 60) & echo $!; wait`)
	cmd.Stdout = &out
	InGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(10 * time.Second); pid == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		fmt.Sscan(out.String(), &pid)
	}
	if pid == 0 {
		t.Fatal("the member did not start")
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	StopGroup(cmd)
	for deadline := time.Now().Add(2 * time.Second); running(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d of the group still runs after StopGroup", pid)
		}
	}
}

// running reports whether pid is a live process: not gone, not a zombie.
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, after, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(after, "Z")
}
