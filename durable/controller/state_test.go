package controller

import (
	"testing"
	"time"
)

// The outbox's partial message is held while its oldest app is younger
// than AnnounceWithin, then sent whole; an outbox kept before its time
// was recorded is sent at once.
func TestOutboxHoldsAPartialMessageUpToAnnounceWithin(t *testing.T) {
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var s State
	if !s.holdPartial(start) {
		t.Fatal("an empty outbox: the run's apps may wait for a full message")
	}
	s.settleOutbox([]int64{1, 2, 3}, start)
	if s.OutboxSince != start.UnixMilli() || !s.holdPartial(start.Add(AnnounceWithin-time.Second)) || s.holdPartial(start.Add(AnnounceWithin)) {
		t.Fatalf("since %d: held until AnnounceWithin", s.OutboxSince)
	}
	// A later run handed the three, sent none, added two: the oldest's time is kept.
	s.OutboxHanded = 3
	s.settleOutbox([]int64{1, 2, 3, 4, 5}, start.Add(10*time.Second))
	if len(s.EventOutbox) != 5 || s.OutboxSince != start.UnixMilli() {
		t.Fatalf("outbox %v since %d", s.EventOutbox, s.OutboxSince)
	}
	// All sent: empty, no time.
	s.OutboxHanded = 5
	s.settleOutbox(nil, start.Add(time.Minute))
	if s.EventOutbox != nil || s.OutboxSince != 0 {
		t.Fatalf("drained: %v since %d", s.EventOutbox, s.OutboxSince)
	}
	legacy := State{EventOutbox: []int64{7}}
	if legacy.holdPartial(start) {
		t.Fatal("an outbox kept without its time is sent whole")
	}
}
