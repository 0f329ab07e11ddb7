package pacing

import (
	"strings"
	"testing"
	"time"
)

func TestProbeParamsSetEachKind(t *testing.T) {
	q := DefaultProbeParams()
	for _, c := range [][2]string{{"PenaltyHolds", "3"}, {"PenaltyWaitMin", "30s"}, {"PenaltyMargin", "0.95"}, {"Beta", "0.8"}} {
		if err := q.Set(c[0], c[1]); err != nil {
			t.Fatalf("Set(%s, %s): %v", c[0], c[1], err)
		}
	}
	if q.PenaltyHolds != 3 || q.PenaltyWaitMin != 30*time.Second || q.PenaltyMargin != 0.95 || q.Beta != 0.8 {
		t.Errorf("not set: %+v", q)
	}
	if d := q.ClimbDepth - 0.2; d > 1e-12 || d < -1e-12 {
		t.Errorf("Beta 0.8 left ClimbDepth %v, want 1 − Beta", q.ClimbDepth)
	}
	if got, _ := q.Get("PenaltyWaitMin"); got != "30s" {
		t.Errorf("Get(PenaltyWaitMin) = %q", got)
	}
	if got, _ := q.Get("PenaltyHolds"); got != "3" {
		t.Errorf("Get(PenaltyHolds) = %q", got)
	}
}

func TestProbeParamsSetRefusesWhatItCannotRead(t *testing.T) {
	for _, c := range []struct{ field, value, want string }{
		{"NoSuch", "1", `no tuning constant "NoSuch"`},
		{"PenaltyWaitMin", "60", "want a duration"},
		{"PenaltyHolds", "2.5", "want a whole number"},
		{"PenaltyMargin", "-1", "want a number"},
		{"PenaltyMargin", "x", "want a number"},
	} {
		q := DefaultProbeParams()
		err := q.Set(c.field, c.value)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Set(%s, %s) = %v, want an error containing %q", c.field, c.value, err, c.want)
		}
		if q != DefaultProbeParams() {
			t.Errorf("Set(%s, %s) changed the params on an error", c.field, c.value)
		}
	}
}

func TestProbeParamNamesCoverEveryField(t *testing.T) {
	names := ProbeParamNames()
	q := DefaultProbeParams()
	for _, n := range names {
		if _, err := q.Get(n); err != nil {
			t.Errorf("Get(%s): %v", n, err)
		}
	}
	if len(names) < 40 {
		t.Errorf("%d names: %v", len(names), names)
	}
}
