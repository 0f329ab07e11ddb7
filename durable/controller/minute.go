package controller

import (
	"time"

	"storecrawl/durable/ledger"
)

// A tick's fact joins the minute's: the ledger gets one controller.tick
// fact a minute of ticks (their counters summed, ticks counting them), not
// one a tick. Each fact is a queue message's share, a row in D1, its index
// entries and its counters' totals, and facts-prune's delete 30 days later;
// /v1/history reads the ticks by the minute (fact_minutes) either way.

// factMinute is the minute (unix ms) a time falls in, as fact_minutes keys it.
func factMinute(at int64) int64 { return at - at%time.Minute.Milliseconds() }

// addTick folds a tick's fact into the open minute; when the tick is of a
// later minute, the open one is closed and returned (nil: none closed).
func (s *State) addTick(f ledger.Fact) (closed []ledger.Fact) {
	if s.OpenMinute != nil && factMinute(s.OpenMinute.At) != factMinute(f.At) {
		closed = append(closed, *s.OpenMinute)
		s.OpenMinute = nil
	}
	if s.OpenMinute == nil {
		s.OpenMinute = &f
		return closed
	}
	m := s.OpenMinute
	for k, v := range f.Counters {
		if m.Counters == nil {
			m.Counters = map[string]int64{}
		}
		m.Counters[k] += v
	}
	// The latest tick's data, and the minute's last error if this tick had none.
	errText, hadErr := m.Data["error"]
	m.Data, m.At = f.Data, f.At
	if _, ok := f.Data["error"]; !ok && hadErr {
		if m.Data == nil {
			m.Data = map[string]any{}
		}
		m.Data["error"] = errText
	}
	return closed
}

// closeMinute closes the open minute (stop, reset): its fact, if any.
func (s *State) closeMinute() []ledger.Fact {
	if s.OpenMinute == nil {
		return nil
	}
	f := *s.OpenMinute
	s.OpenMinute = nil
	return []ledger.Fact{f}
}

// ledgerCounters are the counters the ledger's facts sum to: the totals
// less the open minute's, which no fact carries yet.
func (s State) ledgerCounters() map[string]int64 {
	c := s.Totals.Counters()
	if s.OpenMinute != nil {
		for k, v := range s.OpenMinute.Counters {
			c[k] -= v
		}
	}
	return c
}
