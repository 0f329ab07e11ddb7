//go:build unix

package devstack

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
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
	cmd, _ := startPrintingPID(t, "setsid sleep 60 & echo $!; sleep 60")
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

// startPrintingPID starts script with sh in its own group (InGroup) and
// returns it with the pid the script prints first (a process it started
// in the background), which is killed when the test ends.
func startPrintingPID(t *testing.T, script string) (*exec.Cmd, int) {
	t.Helper()
	var out SyncBuffer
	cmd := exec.Command("sh", "-c", script)
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
		t.Fatalf("%q printed no pid", script)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return cmd, pid
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
	cmd, pid := startPrintingPID(t, `(trap "" TERM; exec >/dev/null 2>&1; sleep 60) & echo $!; wait`)
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
