package ledger

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

var t0 = time.UnixMilli(1_800_000_000_000)

func TestNewFactHasUniqueIDsAndDropsZeroCounters(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		f := New("controller:main", "controller.tick", t0, map[string]int64{"completed": 3, "failed": 0}, nil)
		if err := f.Validate(); err != nil {
			t.Fatal(err)
		}
		if seen[f.ID] {
			t.Fatalf("duplicate id %s", f.ID)
		}
		seen[f.ID] = true
		if _, ok := f.Counters["failed"]; ok || f.Counters["completed"] != 3 {
			t.Fatalf("counters %v", f.Counters)
		}
	}
}

func TestNextDebouncesABurstIntoOneFlush(t *testing.T) {
	p := Next(Writer{}, Step{Op: "append"}, DefaultRetention, t0)
	if want := t0.Add(DebounceDelay).UnixMilli(); p.DueAt != want {
		t.Fatalf("due %d, want %d", p.DueAt, want)
	}
	// Later appends of the burst do not push the flush out.
	p2 := Next(p.Writer, Step{Op: "append"}, DefaultRetention, t0.Add(3*time.Second))
	if p2.DueAt != p.DueAt {
		t.Fatalf("append moved the flush: %d → %d", p.DueAt, p2.DueAt)
	}
	if p2.BatchLimit != MaxBatchFacts || p2.PruneBefore != t0.Add(3*time.Second).Add(-DefaultRetention).UnixMilli() {
		t.Fatalf("plan %+v", p2)
	}
}

func TestNextAfterSendAndFailure(t *testing.T) {
	w := Writer{DueAt: t0.UnixMilli()}
	p := Next(w, Step{Op: "sent", Remaining: 0}, DefaultRetention, t0)
	if p.DueAt != 0 || p.Failures != 0 {
		t.Fatalf("all sent: %+v", p)
	}
	p = Next(w, Step{Op: "sent", Remaining: 250}, DefaultRetention, t0)
	if p.DueAt != t0.Add(NextBatchDelay).UnixMilli() {
		t.Fatalf("more pending: %+v", p)
	}
	// Failures back off, doubling, capped; a success clears them.
	var waits []time.Duration
	for i := 0; i < 10; i++ {
		p = Next(p.Writer, Step{Op: "failed", Remaining: 5}, DefaultRetention, t0)
		waits = append(waits, time.Duration(p.DueAt-t0.UnixMilli())*time.Millisecond)
	}
	if waits[0] != RetryMin || waits[1] != 2*RetryMin || waits[9] != RetryMax {
		t.Fatalf("backoff %v", waits)
	}
	if p = Next(p.Writer, Step{Op: "sent"}, DefaultRetention, t0); p.Failures != 0 || p.DueAt != 0 {
		t.Fatalf("after success %+v", p)
	}
}

func TestParseBatch(t *testing.T) {
	f := New("scheduler:v1", "scheduler.task_run", t0, map[string]int64{"runs.charts-refresh": 1}, map[string]any{"ok": true})
	good, _ := json.Marshal(Batch{Type: BatchType, Source: "scheduler:v1", Facts: []Fact{f}})
	b, err := ParseBatch(good)
	if err != nil || len(b.Facts) != 1 || b.Facts[0].ID != f.ID {
		t.Fatalf("good batch: %v %+v", err, b)
	}
	other := f
	other.Source = "limiter:x"
	noID := f
	noID.ID = "7"
	reserved := f
	reserved.Counters = map[string]int64{"_facts": 1}
	var many []Fact
	for i := 0; i <= MaxBatchFacts; i++ {
		many = append(many, f)
	}
	for name, body := range map[string]any{
		"not json":      "{",
		"wrong type":    Batch{Type: "app-enriched", Source: "scheduler:v1", Facts: []Fact{f}},
		"empty":         Batch{Type: BatchType, Source: "scheduler:v1"},
		"too many":      Batch{Type: BatchType, Source: "scheduler:v1", Facts: many},
		"mixed sources": Batch{Type: BatchType, Source: "scheduler:v1", Facts: []Fact{f, other}},
		"bad id":        Batch{Type: BatchType, Source: "scheduler:v1", Facts: []Fact{noID}},
		"reserved name": Batch{Type: BatchType, Source: "scheduler:v1", Facts: []Fact{reserved}},
	} {
		raw, _ := json.Marshal(body)
		if s, ok := body.(string); ok {
			raw = []byte(s)
		}
		if _, err := ParseBatch(raw); !errors.Is(err, ErrBadBatch) {
			t.Errorf("%s: err %v, want ErrBadBatch", name, err)
		}
	}
}

func TestFullBatchFitsAQueueMessage(t *testing.T) {
	data := map[string]any{"error": strings.Repeat("x", 300), "pacing": "probe", "batch_before": 12, "batch_after": 14}
	counters := map[string]int64{"dispatched": 9, "completed": 7, "failed": 1, "rate_limited": 1, "item_errors": 1, "gave_up": 0, "ticks": 1, "cooldowns": 1}
	var facts []Fact
	for i := 0; i < MaxBatchFacts; i++ {
		facts = append(facts, New("controller:main", "controller.tick", t0, counters, data))
	}
	raw, _ := json.Marshal(Batch{Type: BatchType, Source: "controller:main", Facts: facts})
	if len(raw) > 128<<10 {
		t.Fatalf("full batch is %d bytes, over the 128 KB queue message limit", len(raw))
	}
}

func TestReconcile(t *testing.T) {
	report := Report{
		Source: "controller:main", Counters: map[string]int64{"completed": 10, "failed": 2},
		Pending: map[string]int64{"completed": 3}, PendingFacts: 1, Appended: 4, LastSentAt: t0.UnixMilli(),
	}
	d1 := map[string]int64{"completed": 7, "failed": 2, FactsCounter: 3}
	if r := Reconcile(report, d1, t0.Add(time.Hour)); r.Status != StatusOK || r.Diff != nil {
		t.Fatalf("consistent: %+v", r)
	}
	// A batch in flight: D1 short by whole facts right after a send.
	short := map[string]int64{"completed": 5, "failed": 2, FactsCounter: 2}
	if r := Reconcile(report, short, t0.Add(10*time.Second)); r.Status != StatusSettling || r.Diff["completed"] != 2 {
		t.Fatalf("in flight: %+v", r)
	}
	// The same long after the last send: lost facts.
	if r := Reconcile(report, short, t0.Add(SettleWindow+time.Second)); r.Status != StatusMismatch {
		t.Fatalf("lost: %+v", r)
	}
	// Duplicates are never "in flight".
	dup := map[string]int64{"completed": 9, "failed": 2, FactsCounter: 4}
	if r := Reconcile(report, dup, t0); r.Status != StatusMismatch || r.Diff[FactsCounter] != -1 {
		t.Fatalf("duplicate: %+v", r)
	}
	// Every fact there, a counter off: the writer's counter drifted.
	drift := map[string]int64{"completed": 7, "failed": 1, FactsCounter: 3}
	if r := Reconcile(report, drift, t0); r.Status != StatusMismatch || r.Diff["failed"] != 1 {
		t.Fatalf("drift: %+v", r)
	}
}

func TestRetentionFromDays(t *testing.T) {
	if d, err := RetentionFromDays(0); err != nil || d != DefaultRetention {
		t.Fatal(d, err)
	}
	if d, err := RetentionFromDays(2); err != nil || d != 48*time.Hour {
		t.Fatal(d, err)
	}
	if _, err := RetentionFromDays(1000); err == nil {
		t.Fatal("1000 days accepted")
	}
}

// The queue accepting a batch is not D1 having it: a send arms a check,
// the check confirms what D1 has and resends the rest, and a check that
// cannot be made is tried again.
func TestSentFactsAreConfirmedAgainstD1(t *testing.T) {
	p := Next(Writer{DueAt: t0.UnixMilli()}, Step{Op: "sent"}, DefaultRetention, t0)
	if p.ConfirmAt != t0.Add(ConfirmAfter).UnixMilli() || p.DueAt != 0 {
		t.Fatalf("a send must arm the check: %+v", p)
	}
	// A second send keeps the first check's time (the oldest decides).
	if p2 := Next(p.Writer, Step{Op: "sent"}, DefaultRetention, t0.Add(time.Minute)); p2.ConfirmAt != p.ConfirmAt {
		t.Fatalf("check moved: %+v", p2)
	}
	at := t0.Add(ConfirmAfter)
	if p.ConfirmSentBefore != t0.Add(-ConfirmAfter).UnixMilli() || p.ConfirmBatch != ConfirmBatch {
		t.Fatalf("check bounds: %+v", p)
	}
	// R2 and D1 were down through all the dead-letter retries: D1 has
	// one of the three facts; the two others go back to unsent.
	confirmed, resend := Confirm([]string{"a", "b", "c"}, map[string]bool{"b": true})
	if len(confirmed) != 1 || confirmed[0] != "b" || len(resend) != 2 {
		t.Fatalf("confirmed %v resend %v", confirmed, resend)
	}
	p = Next(p.Writer, Step{Op: "confirmed", Resent: len(resend), OldestSentAt: t0.Add(time.Minute).UnixMilli()}, DefaultRetention, at)
	if p.DueAt != at.Add(NextBatchDelay).UnixMilli() || p.ConfirmAt != t0.Add(time.Minute+ConfirmAfter).UnixMilli() {
		t.Fatalf("resend soon, next check when the oldest unconfirmed is due: %+v", p)
	}
	p = Next(p.Writer, Step{Op: "confirmed"}, DefaultRetention, at)
	if p.ConfirmAt != 0 {
		t.Fatalf("all confirmed: %+v", p)
	}
	if p = Next(p.Writer, Step{Op: "confirm_failed"}, DefaultRetention, at); p.ConfirmAt != at.Add(RetryMax).UnixMilli() {
		t.Fatalf("a failed check is tried again: %+v", p)
	}
}

// TestConfirmAfterIsASetting: a shorter confirm wait (LEDGER_CONFIRM_AFTER_S)
// moves the check and what it may ask D1 about; 0 is the default, and a
// value out of bounds is refused with the default kept.
func TestConfirmAfterIsASetting(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	p := NextWith(Writer{}, Step{Op: "sent"}, DefaultRetention, 10*time.Second, t0)
	if p.ConfirmAt != t0.Add(10*time.Second).UnixMilli() || p.ConfirmSentBefore != t0.Add(-10*time.Second).UnixMilli() {
		t.Fatalf("10 s: %+v", p)
	}
	if d := NextWith(Writer{}, Step{Op: "sent"}, DefaultRetention, 0, t0); d != Next(Writer{}, Step{Op: "sent"}, DefaultRetention, t0) {
		t.Fatalf("0 is not the default: %+v", d)
	}
	for s, want := range map[int]time.Duration{0: ConfirmAfter, 5: 5 * time.Second, 600: ConfirmAfter} {
		if d, err := ConfirmAfterFromSeconds(s); err != nil || d != want {
			t.Errorf("%d s: %s %v", s, d, err)
		}
	}
	for _, s := range []int{1, 4, 601, -5} {
		if d, err := ConfirmAfterFromSeconds(s); err == nil || d != ConfirmAfter {
			t.Errorf("%d s accepted: %s", s, d)
		}
	}
}

// A send or check due shortly before the object's own alarm rides on it
// (one wake, not two); one due long before, or with no alarm of the
// object's own, wakes it at its time.
func TestWakeAtRidesOnTheObjectsOwnAlarm(t *testing.T) {
	const work = int64(10_000_000)
	ride, check := SendRideAlong.Milliseconds(), CheckRideAlong.Milliseconds()
	for _, c := range []struct {
		name string
		work int64
		w    Writer
		want int64
	}{
		{"nothing due", 0, Writer{}, 0},
		{"work only", work, Writer{}, work},
		{"a send 5 s before the tick rides on it", work, Writer{DueAt: work - 5_000}, work},
		{"a send just inside its ride rides", work, Writer{DueAt: work - ride}, work},
		{"a check rides further", work, Writer{ConfirmAt: work - check}, work},
		{"a check due longer before wakes at its time", work, Writer{ConfirmAt: work - check - 1}, work - check - 1},
		{"a send due long before wakes at its time", work, Writer{DueAt: work - ride - 1, ConfirmAt: work - 1}, work - ride - 1},
		{"no alarm of its own: the ledger's earliest", 0, Writer{DueAt: 700, ConfirmAt: 500}, 500},
		{"a send after the work alarm: the work alarm", work, Writer{DueAt: work + 5}, work},
	} {
		if got := WakeAt(c.work, c.w); got != c.want {
			t.Errorf("%s: wake at %d, want %d", c.name, got, c.want)
		}
	}
	// A flush makes the unsent facts due now: no wake DebounceDelay later.
	now := time.UnixMilli(1_800_000_000_000)
	p := Next(Next(Writer{}, Step{Op: "append"}, DefaultRetention, now).Writer, Step{Op: "flush"}, DefaultRetention, now)
	if p.DueAt != now.UnixMilli() {
		t.Fatalf("flush: due %d, want now %d", p.DueAt, now.UnixMilli())
	}
}

// An object whose own alarms come seconds apart (the controller's ticks)
// sends the facts of a minute of ticks in one batch, riding on its wakes;
// one whose next alarm is further, or unknown, sends at once. Every fact
// is sent (none waits past SendEvery after the last send and the tick
// after it).
func TestFlushHoldsForAFrequentWriterUpToSendEvery(t *testing.T) {
	start := time.UnixMilli(1_800_000_000_000)
	const tick = 10 * time.Second
	var w Writer
	sends, unsent, maxWait := 0, 0, time.Duration(0)
	var oldest time.Time
	for i := 0; i < 60; i++ { // ten minutes of ticks
		now := start.Add(time.Duration(i) * tick)
		// The alarm starts with the ledger's due send (shim: flush).
		if w.DueAt > 0 && w.DueAt <= now.UnixMilli() && unsent > 0 {
			sends++
			maxWait = max(maxWait, now.Sub(oldest))
			unsent = 0
			w = Next(w, Step{Op: "sent"}, DefaultRetention, now).Writer
		}
		// The tick appends its fact, then asks for a flush before its next tick.
		if unsent == 0 {
			oldest = now
		}
		unsent++
		w = Next(w, Step{Op: "append"}, DefaultRetention, now).Writer
		w = Next(w, Step{Op: "flush", Work: now.Add(tick).UnixMilli()}, DefaultRetention, now).Writer
		if w.DueAt <= now.UnixMilli() {
			sends++
			maxWait = max(maxWait, now.Sub(oldest))
			unsent = 0
			w = Next(w, Step{Op: "sent"}, DefaultRetention, now).Writer
		}
		if unsent > 0 && WakeAt(now.Add(tick).UnixMilli(), w) != now.Add(tick).UnixMilli() {
			t.Fatalf("tick %d: held facts wake the object at %d, not on its tick", i, WakeAt(now.Add(tick).UnixMilli(), w))
		}
	}
	if sends < 9 || sends > 11 {
		t.Fatalf("60 ticks 10 s apart: %d sends, want about one a minute", sends)
	}
	if maxWait > SendEvery {
		t.Fatalf("a fact waited %s, over SendEvery", maxWait)
	}
	now := start
	sent := Next(Writer{}, Step{Op: "sent"}, DefaultRetention, now).Writer
	for _, c := range []struct {
		name string
		work int64
	}{
		{"no alarm of its own", 0},
		{"its next alarm a minute away (a limiter key's minute)", now.Add(SendEvery).UnixMilli()},
	} {
		w := Next(Next(sent, Step{Op: "append"}, DefaultRetention, now.Add(time.Second)).Writer,
			Step{Op: "flush", Work: c.work}, DefaultRetention, now.Add(time.Second)).Writer
		if w.DueAt != now.Add(time.Second).UnixMilli() {
			t.Errorf("%s: due %d, want now", c.name, w.DueAt)
		}
	}
}
