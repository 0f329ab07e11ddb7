package logx

import (
	"bytes"
	"encoding/json"
	"errors"
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
