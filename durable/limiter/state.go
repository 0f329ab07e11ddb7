package limiter

import (
	"math"
	"sort"
	"time"
)

// Entry is one admission in the sliding window's ring. Slot is its row in
// storage, one of [0, Limit): an admission takes a slot no live entry holds
// (see State.free), so a row is only ever overwritten once it has expired.
type Entry struct {
	Slot int   `json:"slot"`
	At   int64 `json:"at"` // unix ms
	Cost int   `json:"cost"`
}

// Write is the one storage write an allowed acquire needs (nil when refused).
type Write struct {
	Entry  *Entry   `json:"entry,omitempty"`   // sliding_window: upsert this slot
	TAT    *int64   `json:"tat,omitempty"`     // gcra: unix µs
	Tokens *float64 `json:"tokens,omitempty"`  // token_bucket: tokens at Last
	Last   *int64   `json:"last_ms,omitempty"` // token_bucket: unix ms
}

// Decision answers one acquire.
type Decision struct {
	Allowed    bool          `json:"allowed"`
	RetryAfter time.Duration `json:"-"`
	Remaining  int           `json:"remaining"`
	Reset      time.Duration `json:"-"`
	Write      *Write        `json:"write,omitempty"`
}

// Counters are the key's usage since the object started.
type Counters struct {
	Allowed int64 `json:"allowed"`
	Refused int64 `json:"refused"`
	Waited  int64 `json:"waited"`
}

// State is one key's limiter. The zero value is not usable: use New.
type State struct {
	Policy   Policy
	Counters Counters

	// sliding_window: live entries in admission order (a FIFO over a
	// slice), their total cost, and the slots of [0, Limit) no live entry
	// holds, as a FIFO of runs. Restore keeps every live entry whatever its
	// slot (one of a larger earlier limit included), so sum is exact across
	// policy changes, and no live row is in free, so none is overwritten.
	ring []Entry
	sum  int
	free []span

	// gcra: theoretical arrival time, unix µs.
	tat int64

	// token_bucket
	tokens float64
	last   int64 // unix ms
}

// New starts an empty limiter for p.
func New(p Policy) *State {
	s := &State{Policy: p}
	switch p.Algorithm {
	case GCRA:
	case TokenBucket:
		s.tokens = float64(p.Limit)
	default: // sliding_window, as Acquire decides
		s.free = []span{{0, p.Limit}}
	}
	return s
}

// span is a run of free storage slots [lo, hi).
type span struct{ lo, hi int }

// take hands out the free slot that has been free longest (the least recent
// admission's row is overwritten first). ok is false only when no slot of
// [0, Limit) is free, which an admission never meets: every live entry costs
// at least 1 (ParseAcquire), so at most sum slots are held, and admitting
// needs sum+cost <= Limit with cost >= 1, so at most Limit-1 are held and,
// as free is all the others, one is free. Guarded anyway: a live row must
// never be overwritten.
func (s *State) take() (slot int, ok bool) {
	if len(s.free) == 0 {
		return 0, false
	}
	r := &s.free[0]
	slot = r.lo
	if r.lo++; r.lo == r.hi {
		s.free = s.free[1:]
	}
	return slot, true
}

// release frees an expired entry's slot, joining the last run when they
// touch. Why the runs stay few, O(live entries at the last restore) and
// never O(Limit): read cyclically, the live slots in ring order followed by
// the free runs are one sequence that take and release only rotate (take
// moves the first free slot to the ring's end, release the ring's first to
// free's end), so the breaks in it, and so the runs, only change when a
// restore builds it (about two per live entry) or a slot outside [0, Limit)
// (a larger earlier limit's row, never reused) leaves it (one at most). A
// fresh key's round-robin keeps one or two runs.
func (s *State) release(slot int) {
	if slot < 0 || slot >= s.Policy.Limit {
		return
	}
	if n := len(s.free); n > 0 && s.free[n-1].hi == slot {
		s.free[n-1].hi++
		return
	}
	s.free = append(s.free, span{slot, slot + 1})
}

// freeRuns is [0, limit) less the slots live entries hold, in slot order:
// O(live) memory, never O(limit).
func freeRuns(live []Entry, limit int) []span {
	held := make([]int, 0, len(live))
	for _, e := range live {
		held = append(held, e.Slot)
	}
	sort.Ints(held)
	var runs []span
	lo := 0
	for _, h := range held {
		if h >= limit {
			break
		}
		if h > lo {
			runs = append(runs, span{lo, h})
		}
		lo = max(lo, h+1)
	}
	if lo < limit {
		runs = append(runs, span{lo, limit})
	}
	return runs
}

// Restore rebuilds a limiter from what storage holds: the sliding window's
// entries (one per slot, any order, stale ones and slots >= p.Limit
// included), or the gcra/bucket values. Under a new limit the window is
// exact: every entry still in the window counts, whatever its slot, and the
// new admissions take only slots no live entry holds. Under a longer window
// it is exact back to what the old window still counted: older rows may
// have been overwritten already.
func Restore(p Policy, entries []Entry, tat int64, tokens float64, last int64, now time.Time) *State {
	s := New(p)
	switch p.Algorithm {
	default: // sliding_window, as Acquire decides
		s.ring = append([]Entry(nil), entries...)
		sort.Slice(s.ring, func(i, j int) bool { // time order; by slot, as deterministic
			a, b := s.ring[i], s.ring[j]
			return a.At < b.At || a.At == b.At && a.Slot < b.Slot
		})
		for _, e := range s.ring {
			s.sum += e.Cost
		}
		s.expire(now)
		s.free = freeRuns(s.ring, p.Limit)
	case GCRA:
		s.tat = tat
	case TokenBucket:
		if last > 0 {
			s.tokens, s.last = math.Min(tokens, float64(p.Limit)), last
		}
	}
	return s
}

// windowMs is the policy window in whole milliseconds (at least 1).
func (s *State) windowMs() int64 { return max(1, s.Policy.window().Milliseconds()) }

// expire drops entries that no interval of length window ending now can
// contain: an entry at At still counts while At >= now - window.
func (s *State) expire(now time.Time) {
	cutoff := now.UnixMilli() - s.windowMs()
	i := 0
	for i < len(s.ring) && s.ring[i].At < cutoff {
		s.sum -= s.ring[i].Cost
		s.release(s.ring[i].Slot)
		i++
	}
	if i > 0 {
		s.ring = s.ring[i:]
	}
}

// Acquire decides whether cost units may be admitted at now, and if so
// records them and returns the storage write that persists them.
func (s *State) Acquire(now time.Time, cost int) Decision {
	var d Decision
	switch s.Policy.Algorithm {
	case GCRA:
		d = s.acquireGCRA(now, cost)
	case TokenBucket:
		d = s.acquireBucket(now, cost)
	default:
		d = s.acquireWindow(now, cost)
	}
	if d.Allowed {
		s.Counters.Allowed++
	} else {
		s.Counters.Refused++
	}
	return d
}

func (s *State) acquireWindow(now time.Time, cost int) Decision {
	s.expire(now)
	limit, ms := s.Policy.Limit, now.UnixMilli()
	if s.sum+cost <= limit {
		if slot, ok := s.take(); ok {
			e := Entry{Slot: slot, At: ms, Cost: cost}
			s.ring = append(s.ring, e)
			s.sum += cost
			// Compact the backing array now and then so memory stays bounded.
			if cap(s.ring) > 2*limit+16 {
				s.ring = append(make([]Entry, 0, len(s.ring)*2), s.ring...)
			}
			return Decision{Allowed: true, Remaining: limit - s.sum, Reset: s.resetWindow(now), Write: &Write{Entry: &e}}
		}
	}
	// Refused: free room comes as the oldest entries leave the window (a
	// smaller limit may leave sum above it for a while).
	need, freed := s.sum+cost-limit, 0
	wait := time.Duration(0)
	for _, e := range s.ring {
		freed += e.Cost
		if freed >= need {
			wait = time.Duration(e.At+s.windowMs()+1-ms) * time.Millisecond
			break
		}
	}
	return Decision{Remaining: max(0, limit-s.sum), RetryAfter: max(wait, time.Millisecond), Reset: s.resetWindow(now)}
}

func (s *State) resetWindow(now time.Time) time.Duration {
	if len(s.ring) == 0 {
		return 0
	}
	return time.Duration(s.ring[0].At+s.windowMs()+1-now.UnixMilli()) * time.Millisecond
}

// emission is gcra's interval between units, in µs.
func (s *State) emission() float64 {
	return float64(s.Policy.window().Microseconds()) / float64(s.Policy.Limit)
}

func (s *State) acquireGCRA(now time.Time, cost int) Decision {
	us := now.UnixMicro()
	t := float64(s.emission())
	w := s.Policy.window().Microseconds()
	tat := max(s.tat, us)
	newTAT := tat + int64(math.Ceil(float64(cost)*t))
	if newTAT-us > w {
		wait := time.Duration(newTAT-w-us) * time.Microsecond
		return Decision{RetryAfter: max(wait, time.Millisecond), Remaining: s.gcraRemaining(tat, us), Reset: time.Duration(tat-us) * time.Microsecond}
	}
	s.tat = newTAT
	v := newTAT
	return Decision{Allowed: true, Remaining: s.gcraRemaining(newTAT, us), Reset: time.Duration(newTAT-us) * time.Microsecond, Write: &Write{TAT: &v}}
}

func (s *State) gcraRemaining(tat, us int64) int {
	free := float64(s.Policy.window().Microseconds() - (tat - us))
	return max(0, int(math.Floor(free/s.emission())))
}

func (s *State) acquireBucket(now time.Time, cost int) Decision {
	ms := now.UnixMilli()
	rate := float64(s.Policy.Limit) / float64(s.windowMs()) // tokens per ms
	if s.last != 0 && ms > s.last {
		s.tokens = math.Min(float64(s.Policy.Limit), s.tokens+float64(ms-s.last)*rate)
	}
	if ms > s.last {
		s.last = ms
	}
	full := time.Duration((float64(s.Policy.Limit)-s.tokens)/rate) * time.Millisecond
	if s.tokens+1e-9 < float64(cost) {
		wait := time.Duration(math.Ceil((float64(cost)-s.tokens)/rate)) * time.Millisecond
		return Decision{RetryAfter: max(wait, time.Millisecond), Remaining: int(s.tokens), Reset: full}
	}
	s.tokens -= float64(cost)
	tokens, last := s.tokens, s.last
	return Decision{Allowed: true, Remaining: int(s.tokens), Reset: time.Duration((float64(s.Policy.Limit)-s.tokens)/rate) * time.Millisecond, Write: &Write{Tokens: &tokens, Last: &last}}
}

// Usage is the key's view for GET /v1/limiter/status.
type Usage struct {
	Policy    Policy   `json:"policy"`
	Used      int      `json:"used"`      // units counted against the limit now
	Remaining int      `json:"remaining"` // units admissible now
	ResetMs   int64    `json:"resetMs"`
	Counters  Counters `json:"counters"`
}

// Usage reports the key at now without admitting anything.
func (s *State) Usage(now time.Time) Usage {
	u := Usage{Policy: s.Policy, Counters: s.Counters}
	switch s.Policy.Algorithm {
	case GCRA:
		us := now.UnixMicro()
		tat := max(s.tat, us)
		u.Remaining = s.gcraRemaining(tat, us)
		u.ResetMs = (tat - us) / 1000
	case TokenBucket:
		rate := float64(s.Policy.Limit) / float64(s.windowMs())
		tokens := float64(s.Policy.Limit)
		if s.last != 0 {
			tokens = math.Min(float64(s.Policy.Limit), s.tokens+float64(max(0, now.UnixMilli()-s.last))*rate)
		}
		u.Remaining = int(tokens)
		u.ResetMs = int64((float64(s.Policy.Limit) - tokens) / rate)
	default:
		s.expire(now)
		u.Remaining = max(0, s.Policy.Limit-s.sum)
		u.ResetMs = s.resetWindow(now).Milliseconds()
	}
	u.Used = s.Policy.Limit - u.Remaining
	return u
}

// IdleAt is when the key's state becomes a fresh one's (unix ms; 0: it is
// already): every admission has left the window, gcra's burst is whole
// again, the bucket is full. From then on forgetting the state changes no
// decision, so an idle key can be retired (Objects.Roll). Refusals change
// no state, so they do not keep a key alive here.
func (s *State) IdleAt() int64 {
	switch s.Policy.Algorithm {
	case GCRA:
		return (s.tat + 999) / 1000 // tat is unix µs
	case TokenBucket:
		if s.last == 0 {
			return 0
		}
		rate := float64(s.Policy.Limit) / float64(s.windowMs()) // tokens per ms
		return s.last + int64(math.Ceil((float64(s.Policy.Limit)-s.tokens)/rate))
	default:
		if len(s.ring) == 0 {
			return 0
		}
		// An entry counts while At >= now - window (expire).
		return s.ring[len(s.ring)-1].At + s.windowMs() + 1
	}
}
