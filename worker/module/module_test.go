package module

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRunIsolatedTurnsAPanicIntoAFailedRun(t *testing.T) {
	boom := Task{Name: "boom", Run: func(context.Context, func() time.Time) Result { panic("pruner bug") }}
	if res := boom.RunIsolated(context.Background(), time.Now); res.OK || !strings.Contains(res.Error, "panic: pruner bug") {
		t.Fatalf("a panicking run: %+v", res)
	}
	ok := Task{Name: "ok", Run: func(context.Context, func() time.Time) Result { return Result{OK: true, Summary: "done"} }}
	if res := ok.RunIsolated(context.Background(), time.Now); !res.OK || res.Summary != "done" {
		t.Fatalf("%+v", res)
	}
	if res := Failed(errors.New("D1 unavailable")); res.OK || res.Error != "D1 unavailable" {
		t.Fatalf("%+v", res)
	}
}
