package limiter

import "time"

// TallyPeriod is the span of one ledger fact of a key's traffic: a minute
// summary (allowed, refused, waited) instead of a fact per acquire. An
// Objects can tally shorter periods (Objects.TallyPeriod, LIMITER_TALLY_S:
// the integration tests, which would otherwise wait a minute for a key's
// fact and its retirement); D1 still rolls them up by the minute.
const TallyPeriod = time.Minute

// Bounds of a shorter tally period: whole seconds dividing a minute keep
// every period inside one of D1's minute rollups.
const (
	MinTallyPeriod = time.Second
	MaxTallyPeriod = TallyPeriod
)

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
	// Period is the span of a tally; 0 is TallyPeriod.
	Period time.Duration `json:"-"`
}

func (l *Ledger) periodMs() int64 {
	if l.Period <= 0 {
		return TallyPeriod.Milliseconds()
	}
	return l.Period.Milliseconds()
}

func (l *Ledger) periodStart(now time.Time) int64 {
	p := l.periodMs()
	return now.UnixMilli() / p * p
}

// Count adds one acquire's outcome to the open period, closing the previous
// period first if now is past it (the closed tally is returned for its fact).
func (l *Ledger) Count(now time.Time, allowed, waited bool) *Tally {
	closed := l.Roll(now)
	if l.Open.Start == 0 {
		l.Open.Start = l.periodStart(now)
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
	if l.Open.Start == 0 || now.UnixMilli() < l.Open.Start+l.periodMs() {
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
	return l.Open.Start + l.periodMs()
}
