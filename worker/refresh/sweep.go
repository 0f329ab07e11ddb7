package refresh

import "time"

// Tier sweeps: each tier's apps are looked at in rounds, one round per
// interval. A round walks the tier's apps in a fixed order, (Slot,
// track id), behind a cursor; the clock says how far the round should
// have got (at a quarter of the interval, a quarter of the slots). So an
// app is looked at once per its tier's interval with no per-app schedule
// to write: the cursor is one row per batch. The slot, a hash of the id,
// spreads apps found together over the round (what SpreadFraction did for
// per-app schedules).

// Slots is the size of the slot space; SlotMultiplier the odd multiplier
// of the slot hash. The schema's index (migrations/0025) computes the same
// expression: (track_id * 648055) % 1048576. Ids below 10^10 cannot
// overflow an int64 (648055 × 10^10 < 2^63).
const (
	Slots          = 1 << 20
	SlotMultiplier = 648055
)

// SightingGranularity: an unchanged refresh moves an app's last_seen_at
// only when it is older than this, so warm and hot apps' looks write no
// row. 45 days plus the cold round's 30 is 75, under the stale task's
// default 90 days (worker/config DefaultStaleAfterDays): a looked-at app
// is never marked stale; a cold app writes its sighting every other round.
const SightingGranularity = 45 * 24 * time.Hour

// SlotSQL is Slot as the schema's index expression.
const SlotSQL = `(track_id * 648055) % 1048576`

// Tiers in pick order when equally behind.
var Tiers = []string{TierHot, TierWarm, TierCold}

// Slot is an app's place in its tier's round.
func Slot(id int64) int64 { return (id * SlotMultiplier) % Slots }

// Pos is a place in a round: every app at or before (Slot, TrackID) is
// done. (s, 0) is "every slot before s done" (ids are positive).
type Pos struct {
	Slot    int64 `json:"slot"`
	TrackID int64 `json:"id"`
}

// Less orders positions as the round walks them.
func (p Pos) Less(q Pos) bool {
	return p.Slot < q.Slot || p.Slot == q.Slot && p.TrackID < q.TrackID
}

// Cursor is a tier's progress: the round (intervals since the Unix epoch)
// and how far into it.
type Cursor struct {
	Round int64 `json:"round"`
	Pos
}

// RoundAt is the round at t and the slot its sweep should have reached
// (exclusive): slots below target are due.
func RoundAt(tier string, t time.Time) (round, target int64) {
	iv := int64(Interval(tier) / time.Second)
	s := t.Unix()
	round, into := s/iv, s%iv
	return round, into * Slots / iv
}

// StartCursor is a tier's cursor when it has none: at the clock's target,
// so a new sweep starts at steady state (nothing due at once: the apps
// before the target were looked at by whatever came before).
func StartCursor(tier string, now time.Time) Cursor {
	r, target := RoundAt(tier, now)
	return Cursor{Round: r, Pos: Pos{Slot: target}}
}

// Window is what of a tier is due at a time: the apps after From, of the
// cursor's round, in slots below UpTo. A cursor behind a round boundary
// finishes its round first (UpTo is Slots), then goes on from the start
// of the current round: after an outage of more than a round, each app is
// looked at once, not once per missed round.
type Window struct {
	Tier  string
	Round int64
	From  Pos
	UpTo  int64
	// Now is the current round and its target, for the cursor after a
	// window read to its end.
	NowRound, NowTarget int64
}

// Empty: nothing of the tier is due.
func (w Window) Empty() bool { return !w.From.Less(Pos{Slot: w.UpTo}) }

// Due is the window of tier due at now from its cursor.
func Due(tier string, c Cursor, now time.Time) Window {
	r, target := RoundAt(tier, now)
	w := Window{Tier: tier, Round: c.Round, From: c.Pos, UpTo: target, NowRound: r, NowTarget: target}
	switch {
	case c.Round < r:
		w.UpTo = Slots
	case c.Round > r: // a clock that went back: nothing due until it catches up
		w.UpTo = 0
	}
	return w
}

// Behind is how far a tier's sweep is behind its clock, in rounds (0 when
// on time): the pick serves the most-behind tier first.
func (w Window) Behind() float64 {
	if w.Empty() {
		return 0
	}
	return float64(w.NowRound-w.Round) + float64(w.NowTarget-w.From.Slot)/Slots
}

// After is the cursor once every app up to done is done. exhausted says
// the window was read to its end (the read returned fewer than it asked,
// all of them done): the cursor goes to the window's end, and from the end
// of a past round to the start of the current one.
func (w Window) After(done Pos, exhausted bool) Cursor {
	if !exhausted {
		return Cursor{Round: w.Round, Pos: done}
	}
	if w.Round < w.NowRound {
		return Cursor{Round: w.NowRound}
	}
	return Cursor{Round: w.Round, Pos: Pos{Slot: w.UpTo}}
}

// NextLook estimates when an app of tier in slot is next looked at, from
// the clock (a sweep on time): its slot's time in the current round, or
// in the next when the round has passed it.
func NextLook(tier string, slot int64, now time.Time) time.Time {
	iv := int64(Interval(tier) / time.Second)
	r, target := RoundAt(tier, now)
	if slot < target {
		r++
	}
	// The first second whose target passes slot: into·Slots/iv ≥ slot+1.
	at := r*iv + ((slot+1)*iv+Slots-1)/Slots
	return time.Unix(at, 0).UTC()
}
