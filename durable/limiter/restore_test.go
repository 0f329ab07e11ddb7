package limiter

import (
	"math/rand/v2"
	"testing"
	"time"
)

// store is a simulated ring table: one row per slot, upserted by every
// allowed acquire's write, never deleted (as the shim keeps it).
type store map[int]Entry

func (st store) entries() []Entry {
	out := make([]Entry, 0, len(st))
	for _, e := range st {
		out = append(out, e)
	}
	return out
}

// sim drives one key through acquires, restarts and policy changes, keeping
// storage from the decisions' writes alone and every admission as an oracle.
type sim struct {
	t        *testing.T
	s        *State
	st       store
	adm      []Entry // every admission (Slot unused)
	horizon  int64   // unix ms: see restore
	restored int     // live entries at the last restore
}

func newSim(t *testing.T, p Policy) *sim {
	return &sim{t: t, s: New(p), st: store{}, horizon: -1 << 62}
}

// restore rebuilds the key from storage under p: a restart when p is the
// policy in force, a policy change otherwise.
func (m *sim) restore(p Policy, now time.Time) {
	if p.Window != m.s.Policy.Window {
		// Storage keeps only rows nobody overwrote, and a row may be
		// overwritten once the old window let it go: a longer window can
		// only be exact back to what the old window still counted.
		m.horizon = max(m.horizon, now.UnixMilli()-m.s.windowMs())
	}
	m.s = Restore(p, m.st.entries(), 0, 0, 0, now)
	m.restored = len(m.s.ring)
	if len(m.s.free) > m.restored+1 {
		m.t.Fatalf("restore of %d live entries keeps %d free runs", m.restored, len(m.s.free))
	}
}

// acquire admits or refuses cost at now and checks storage and the window.
func (m *sim) acquire(now time.Time, cost int) bool {
	m.t.Helper()
	p, ms, w := m.s.Policy, now.UnixMilli(), m.s.windowMs()
	d := m.s.Acquire(now, cost)
	// Every admission in the window ending now (as the limiter counts: At >=
	// now - window), and those it must know of (not older than horizon).
	all, known := 0, 0
	for _, a := range m.adm {
		if a.At >= ms-w {
			all += a.Cost
			if a.At >= m.horizon {
				known += a.Cost
			}
		}
	}
	if !d.Allowed {
		if d.Write != nil {
			m.t.Fatalf("refusal at %d carries a write: %+v", ms, d.Write)
		}
		if all+cost <= p.Limit {
			m.t.Fatalf("refused %d at %d with %d of %d used in the window", cost, ms, all, p.Limit)
		}
		return false
	}
	if d.Write == nil || d.Write.Entry == nil {
		m.t.Fatalf("admission at %d without its one storage write", ms)
	}
	e := *d.Write.Entry
	if e.Slot < 0 || e.Slot >= p.Limit {
		m.t.Fatalf("slot %d outside [0,%d)", e.Slot, p.Limit)
	}
	if old, ok := m.st[e.Slot]; ok && old.At >= ms-w {
		m.t.Errorf("admission at %d overwrites slot %d, live since %d (window %d ms)", ms, e.Slot, old.At, w)
	}
	// Free slots stay a few runs per live entry restored: O(live), never
	// O(Limit) (the queue is a rotation of the slots; see State.release).
	if len(m.s.free) > 3*m.restored+3 {
		m.t.Fatalf("%d free runs after a restore of %d live entries", len(m.s.free), m.restored)
	}
	m.st[e.Slot] = e
	m.adm = append(m.adm, e)
	if known+cost > p.Limit {
		m.t.Fatalf("admitted %d at %d: %d units in the window of limit %d", cost, ms, known+cost, p.Limit)
	}
	return true
}

// TestPolicyChangeKeepsLiveSlots: a policy change rebuilt
// the ring with next = last slot + 1, which overwrote a live row when the
// limit grew, and dropped live rows in slots >= a smaller limit.
func TestPolicyChangeKeepsLiveSlots(t *testing.T) {
	sec := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	t.Run("grow", func(t *testing.T) {
		m := newSim(t, Policy{Limit: 10, Window: 10, Algorithm: SlidingWindow})
		for i := 0; i < 10; i++ { // slots 0..9 at 0..9 s
			m.acquire(sec(float64(i)), 1)
		}
		m.acquire(sec(11), 1) // the one at 0 s left: wraps to slot 0
		m.acquire(sec(12), 1) // the one at 1 s left: slot 1; the one at 2 s (slot 2) is live
		m.restore(Policy{Limit: 20, Window: 10, Algorithm: SlidingWindow}, sec(12))
		m.acquire(sec(12), 1)
		m.restore(m.s.Policy, sec(12)) // restart
		for i := 0; i < 20; i++ {
			m.acquire(sec(12), 1)
		}
	})
	t.Run("shrink", func(t *testing.T) {
		m := newSim(t, Policy{Limit: 20, Window: 10, Algorithm: SlidingWindow})
		for i := 0; i < 20; i++ { // slots 0..9 at 0 s, 10..19 at 5 s
			m.acquire(sec(float64(i/10*5)), 1)
		}
		m.restore(Policy{Limit: 10, Window: 10, Algorithm: SlidingWindow}, sec(10.5))
		for i := 0; i < 10; i++ { // ten live units in slots 10..19: the window is full
			m.acquire(sec(10.5), 1)
		}
		m.restore(m.s.Policy, sec(15.5)) // restart once they left
		for i := 0; i < 10; i++ {
			m.acquire(sec(15.5), 1)
		}
	})
}

// TestSlidingWindowRestartsAndPolicyChangesStayExact: random acquires with
// random costs and clock steps, restarts and policy changes (limit and
// window); every admission keeps its window within the limit, every refusal
// had no room, and no write overwrites a live row.
func TestSlidingWindowRestartsAndPolicyChangesStayExact(t *testing.T) {
	limits := []int{1, 2, 3, 7, 10, 20, 50, MaxLimit}
	windows := []float64{0.05, 0.2, 1, 3}
	for seed := uint64(1); seed <= 60; seed++ {
		rng := rand.New(rand.NewPCG(seed, 14))
		policy := func() Policy {
			return Policy{Limit: limits[rng.IntN(len(limits))], Window: windows[rng.IntN(len(windows))], Algorithm: SlidingWindow}
		}
		m := newSim(t, policy())
		now := t0
		admitted := 0
		for step := 0; step < 3000; step++ {
			p := m.s.Policy
			// Steps around the window's pace per unit, bursts included.
			pace := max(1, m.s.windowMs()*2/int64(p.Limit))
			now = now.Add(time.Duration(rng.Int64N(pace+1)) * time.Millisecond)
			if t.Failed() {
				t.Fatalf("seed %d, step %d", seed, step)
			}
			switch r := rng.IntN(100); {
			case r < 3:
				m.restore(p, now)
			case r < 6:
				m.restore(policy(), now)
			default:
				if m.acquire(now, 1+rng.IntN(min(3, p.Limit))) {
					admitted++
				}
			}
		}
		if admitted == 0 {
			t.Fatalf("seed %d admitted nothing", seed)
		}
	}
}
