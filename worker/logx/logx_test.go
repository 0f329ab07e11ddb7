package logx

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestOneJSONObjectPerLine(t *testing.T) {
	var buf bytes.Buffer
	SetOutput(&buf)
	defer SetOutput(nil)
	Event("a.b", map[string]any{"n": 3, "msg": "line\nbreak"})
	Err("c.d", errors.New("boom"), nil)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %q", buf.String())
	}
	var first, second map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	if first["event"] != "a.b" || first["level"] != Info || first["n"] != 3.0 || first["ts"] == nil {
		t.Fatalf("first: %v", first)
	}
	if second["level"] != Error || second["error"] != "boom" {
		t.Fatalf("second: %v", second)
	}
}

func TestRecovered(t *testing.T) {
	var buf bytes.Buffer
	SetOutput(&buf)
	defer SetOutput(os.Stdout)
	if Recovered(nil, "x") != nil || buf.Len() != 0 {
		t.Fatal("no panic, no error, no log")
	}
	err := func() (err error) {
		defer func() { err = Recovered(recover(), "worker goroutine") }()
		panic("boom")
	}()
	if err == nil || !strings.Contains(err.Error(), "panic in worker goroutine: boom") || !strings.Contains(buf.String(), `"event":"panic"`) {
		t.Fatalf("%v %s", err, buf.String())
	}
}
