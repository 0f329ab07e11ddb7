// Package logx writes structured log events: one JSON object per line on
// stdout, so `wrangler tail`, Workers Logs and the test harness can parse them.
package logx

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Level names used in the "level" field.
const (
	Info  = "info"
	Warn  = "warn"
	Error = "error"
)

var (
	mu  sync.Mutex
	out io.Writer = os.Stdout
	now           = time.Now
)

// SetOutput redirects events (tests).
func SetOutput(w io.Writer) { mu.Lock(); out = w; mu.Unlock() }

// Event logs one event. fields are key/value pairs; "event" is the name,
// "level" defaults to info, "ts" is added.
func Event(name string, fields map[string]any) {
	rec := make(map[string]any, len(fields)+3)
	for k, v := range fields {
		rec[k] = v
	}
	rec["event"] = name
	if _, ok := rec["level"]; !ok {
		rec["level"] = Info
	}
	rec["ts"] = now().UTC().Format(time.RFC3339Nano)
	b, err := json.Marshal(rec)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"event": "log.unencodable", "level": Error, "name": name, "error": err.Error()})
	}
	b = append(b, '\n')
	mu.Lock()
	out.Write(b)
	mu.Unlock()
}

// Err logs a failure event with its error text.
func Err(name string, err error, fields map[string]any) {
	if fields == nil {
		fields = map[string]any{}
	}
	fields["level"] = Error
	if err != nil {
		fields["error"] = err.Error()
	}
	Event(name, fields)
}

// Recovered turns a value from recover() into an error and logs it as one
// "panic" event, so a goroutine the project starts never takes the shared
// Go instance (and every call in flight) down with it. nil means there was
// no panic. Use it in the goroutine's first deferred function:
//
//	defer func() { if err := logx.Recovered(recover(), "where"); err != nil { ... } }()
func Recovered(p any, where string) error {
	if p == nil {
		return nil
	}
	err := fmt.Errorf("panic in %s: %v", where, p)
	Event("panic", map[string]any{"level": Error, "where": where, "error": err.Error()})
	return err
}
