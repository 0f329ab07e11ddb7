package limiter

import "time"

// TallyPeriod is the span of one ledger fact of a key's traffic: a minute
// summary (allowed, refused, waited) instead of a fact per acquire.
const TallyPeriod = time.Minute

// Tally is one period of a key's traffic.
type Tally struct {
	Start   int64 `json:"start"` // unix ms of the period's start; 0 = nothing counted
	Allowed int64 `json:"allowed"`
	Refused int64 `json:"refused"`
	Waited  int64 `json:"waited"`
}

// Counters are the tally as ledger counters.
func (t Tally) Counters() map[string]int64 {
	return map[string]int64{"allowed": t.Allowed, "refused": t.Refused, "waited": t.Waited}
}

// Ledger is the part of a key's state its ledger needs: the open period
// and the lifetime sums of the closed ones (what the object persists with
// each period's fact, so counters and facts always agree).
type Ledger struct {
	Open   Tally    `json:"open"`
	Closed Counters `json:"closed"`
}

func periodStart(now time.Time) int64 {
	p := TallyPeriod.Milliseconds()
	return now.UnixMilli() / p * p
}

// Count adds one acquire's outcome to the open period, closing the previous
// period first if now is past it (the closed tally is returned for its fact).
func (l *Ledger) Count(now time.Time, allowed, waited bool) *Tally {
	closed := l.Roll(now)
	if l.Open.Start == 0 {
		l.Open.Start = periodStart(now)
	}
	switch {
	case allowed && waited:
		l.Open.Allowed++
		l.Open.Waited++
	case allowed:
		l.Open.Allowed++
	default:
		l.Open.Refused++
	}
	return closed
}

// Roll closes the open period if now is past its end.
func (l *Ledger) Roll(now time.Time) *Tally {
	if l.Open.Start == 0 || now.UnixMilli() < l.Open.Start+TallyPeriod.Milliseconds() {
		return nil
	}
	t := l.Open
	l.Open = Tally{}
	l.Closed.Allowed += t.Allowed
	l.Closed.Refused += t.Refused
	l.Closed.Waited += t.Waited
	return &t
}

// OpenUntil is when the open period closes (unix ms), or 0 when none is open.
func (l *Ledger) OpenUntil() int64 {
	if l.Open.Start == 0 {
		return 0
	}
	return l.Open.Start + TallyPeriod.Milliseconds()
}
