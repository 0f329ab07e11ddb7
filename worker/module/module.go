// Package module is how a feature declares what it owns, in one place: its
// D1 tables (and the one package whose statements write each), the
// triggers that write on its behalf, its settings, and what they are for. The Worker's
// wiring lists every feature's Module (worker.Modules); the schema test and
// internal/archtest check the declarations against migrations/schema.sql
// and the source, so a table or trigger nobody declares, or declared
// twice, or written from another package, fails a test.
//
// A leaf package: plain values, no imports of the project.
package module

import (
	"context"
	"fmt"
	"time"
)

// Module is one feature's declaration.
type Module struct {
	// Name is the feature's name ("crawl", "catalogue", ...).
	Name string
	// Doc says what the feature does, in a line.
	Doc string
	// Tables are the D1 tables the feature owns.
	Tables []Table
	// Triggers are the D1 triggers that write on the feature's behalf.
	Triggers []Trigger
	// Settings are the vars the feature reads (the Worker's one loader
	// reads every module's, worker.Settings).
	Settings []Setting
	// Consumes are the kinds of EVENTS queue message the feature handles
	// (the "kind" field the consumer routes on; worker's queue routes).
	Consumes []string
}

// Table is one owned D1 table.
type Table struct {
	Name string
	// Writer is the one package (a slash path from the module root, such
	// as "worker/registry") whose source may INSERT, UPDATE or DELETE the
	// table; every other package puts the writer's statements in its own
	// batches. Empty: only triggers write it.
	Writer string
	// Doc says what a row is.
	Doc string
}

// Trigger is one D1 trigger: a write D1 makes on the feature's behalf
// when another statement writes On. It costs rows written like any
// statement (each row it writes, and each index entry).
type Trigger struct {
	Name string
	// On is the table whose writes fire it.
	On string
	// Writes are the tables it writes.
	Writes []string
	// Doc says why it is a trigger: what it keeps true.
	Doc string
}

// Task is one periodic task, run by the SchedulerDO at multiples of Every
// since the epoch, each run delayed by a stable amount below Jitter (never
// early). A feature returns its tasks from a function of what they run
// with (its Tasks); the wiring concatenates them (worker.PeriodicTasks),
// and the scheduler's registry, the run-now validation and the runs all
// come from that one list.
type Task struct {
	// Name is the task's key: stable, in status, facts and control bodies.
	Name   string
	Every  time.Duration
	Jitter time.Duration
	// Doc says what a run does, in a line.
	Doc string
	// Slowable names the task's work in the cost guard's order
	// (worker/guard's Work*: it skips the task's runs while that work is
	// slowed); "" for work the guard never slows.
	Slowable string
	// Run performs one run. Its failures are in the Result; the wiring
	// turns a panic into a failed Result and measures the run's D1 rows,
	// subrequests and duration.
	Run func(ctx context.Context, now func() time.Time) Result
}

// Result is what a run reports to the scheduler.
type Result struct {
	OK      bool
	Summary string
	Error   string
	// RateLimited: the upstream refused the run (429, or a spent budget);
	// RetryAfterS is the wait it asked for. Neither counts toward the
	// task's breaker.
	RateLimited bool
	RetryAfterS int
	// Counters are added to the task's lifetime counters (its ledger
	// fact carries them as "<task>.<name>"); Detail is a short note kept
	// in that fact.
	Counters map[string]int64
	Detail   string
}

// Failed is the Result of a run that could not do its work.
func Failed(err error) Result { return Result{Error: err.Error()} }

// RunIsolated runs t once in its own error boundary: a panic becomes the
// run's failed Result, never the caller's.
func (t Task) RunIsolated(ctx context.Context, now func() time.Time) (res Result) {
	defer func() {
		if p := recover(); p != nil {
			res = Result{Error: fmt.Sprintf("panic: %v", p)}
		}
	}()
	return t.Run(ctx, now)
}
