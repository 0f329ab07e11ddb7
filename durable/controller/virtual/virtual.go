// Package virtual runs the EnrichmentController on a virtual clock as its
// Durable Object runs it (shim/decision_object.mjs): the state and the
// work alarm kept between decisions, the alarm's tick, the run its plan
// asks for, and tick_done with the run's outcome at the run's end. Native
// drivers (worker/enrichment's convergence test, cmd/bench's discovery
// bench) use it so an hour of crawling takes seconds: nothing sleeps.
package virtual

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"storecrawl/durable/controller"
)

// Clock is a run's virtual time: a run's pause counts from its chunk's
// last answer, a run ends at its last answer, and an alarm (or any event
// of the driver) moves it forward, never back.
type Clock struct {
	mu            sync.Mutex
	now, lastDone time.Time
}

// NewClock is a clock at t0.
func NewClock(t0 time.Time) *Clock { return &Clock{now: t0, lastDone: t0} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep is a run's pause: d from the last answer (or now, if later).
func (c *Clock) Sleep(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = latest(c.now, c.lastDone).Add(d)
}

// Done records an answer at t.
func (c *Clock) Done(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastDone = latest(c.lastDone, t)
}

// Send runs one request's timing atomically: answer gets the clock's now
// and returns when the answer came; wait moves the clock there too (the
// run awaits it before going on).
func (c *Clock) Send(answer func(now time.Time) (done time.Time, wait bool)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	done, wait := answer(c.now)
	c.lastDone = latest(c.lastDone, done)
	if wait {
		c.now = latest(c.now, done)
	}
}

// Settle is the end of a run: its last answer.
func (c *Clock) Settle() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = latest(c.now, c.lastDone)
	return c.now
}

// Wake moves the clock to at (never back) and returns the time.
func (c *Clock) Wake(at time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = latest(c.now, at)
	return c.now
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Object is the controller's Durable Object plumbing: its state and its
// work alarm (unix ms; 0: none).
type Object struct {
	Config controller.Config
	State  string
	Alarm  int64
}

// Decide runs op with arg at now, keeping the state and the alarm as the
// object keeps them.
func (o *Object) Decide(op string, arg any, now time.Time) (controller.Decision, error) {
	raw, err := json.Marshal(arg)
	if err != nil {
		return controller.Decision{}, fmt.Errorf("controller %s: %w", op, err)
	}
	d := controller.Handle(o.Config, op, o.State, raw, now)
	if d.State != "" {
		o.State = d.State
	}
	switch {
	case d.AlarmAt != 0:
		o.Alarm = d.AlarmAt
	case d.AlarmBy != 0 && (o.Alarm == 0 || o.Alarm > d.AlarmBy):
		o.Alarm = d.AlarmBy
	case o.Alarm == 0 && d.EnsureAlarmAt != 0:
		o.Alarm = d.EnsureAlarmAt
	}
	return d, nil
}

// NextAlarm is when the work alarm fires; ok is false when none is set.
func (o *Object) NextAlarm() (at time.Time, ok bool) {
	if o.Alarm == 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(o.Alarm), true
}

// Runner performs a tick's plan (worker/enrichment.Runner.Run).
type Runner func(ctx context.Context, plan controller.RunPlan) controller.RunOutcome

// Fire is the work alarm firing at now: the tick, then, when its
// decision plans a run, the run and tick_done at the run's end
// (clock.Settle). The decisions set the next alarm. It returns the plan
// run (nil: the controller held) and its outcome.
func (o *Object) Fire(ctx context.Context, now time.Time, run Runner, clock *Clock) (*controller.RunPlan, controller.RunOutcome, error) {
	o.Alarm = 0
	d, err := o.Decide("tick", controller.TickRequest{}, now)
	if err != nil || d.Run == nil {
		return nil, controller.RunOutcome{}, err
	}
	out := run(ctx, *d.Run)
	_, err = o.Decide("tick_done", out, clock.Settle())
	return d.Run, out, err
}
