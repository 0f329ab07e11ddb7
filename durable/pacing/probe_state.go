package pacing

import (
	"encoding/json"
	"fmt"
)

// probeStateVersion is the persisted state's format. Version 1 is the
// flat object every release so far stored (state without "v" is version
// 1 too); a change of field meaning gets a new version and a migration in
// UnmarshalJSON.
const probeStateVersion = 1

// probeState is the probe's persisted state, field for field as stored.
type probeState struct {
	V int `json:"v"`
	pacer
	Rate          float64     `json:"rate"`
	Ceiling       float64     `json:"ceiling"`
	Phase         string      `json:"phase"`
	PhaseSince    int64       `json:"phase_since"`
	LastThrottle  int64       `json:"last_throttle"`
	Streak        int         `json:"streak"`
	ProbeTicks    int         `json:"probe_ticks"`
	BackoffMs     int64       `json:"backoff_ms"`
	Blocks        int         `json:"blocks"`
	BlockFrom     int64       `json:"block_from,omitempty"`
	Penalized     bool        `json:"penalized"`
	Careful       bool        `json:"careful"`
	History       []tickStats `json:"history"`
	Refused       float64     `json:"refused,omitempty"`
	Clean         float64     `json:"clean,omitempty"`
	PenaltyWaitMs int64       `json:"penalty_wait_ms,omitempty"`
	HoldMs        int64       `json:"hold_ms,omitempty"`
	PenaltySteps  int         `json:"penalty_steps,omitempty"`
	StepAt        int64       `json:"step_at,omitempty"`
	StepOK        int         `json:"step_ok,omitempty"`
	Burst         float64     `json:"burst,omitempty"`
	StepRefused   float64     `json:"step_refused,omitempty"`
	Rising        bool        `json:"rising,omitempty"`
	RoseAt        int64       `json:"rose_at,omitempty"`
	StepSize      float64     `json:"step_size,omitempty"`
	EvidenceMs    int64       `json:"evidence_ms,omitempty"`
	ProbeAt       int64       `json:"probe_at,omitempty"`
	ProbeFrom     float64     `json:"probe_from,omitempty"`
	ProbeOK       int         `json:"probe_ok,omitempty"`
	LastStep      float64     `json:"last_step,omitempty"`
	BurstLow      float64     `json:"burst_low,omitempty"`
	BurstResumed  float64     `json:"burst_resumed,omitempty"`
	StepCap       float64     `json:"step_cap,omitempty"`
	Smooth        bool        `json:"smooth,omitempty"`
	SmoothTried   bool        `json:"smooth_tried,omitempty"`
	LastChunk     int         `json:"last_chunk,omitempty"`
	RefusedAll    bool        `json:"refused_all,omitempty"`
	BoundFrom     float64     `json:"bound_from,omitempty"`
	BoundRate     float64     `json:"bound_rate,omitempty"`
	BoundAt       int64       `json:"bound_at,omitempty"`
	ResumeAt      int64       `json:"resume_at,omitempty"`
	ResumeOK      int         `json:"resume_ok,omitempty"`
	ResumedMs     int64       `json:"resumed_ms,omitempty"`
	ResumedOK     int         `json:"resumed_ok,omitempty"`
	ResumeClose   bool        `json:"resume_close,omitempty"`
}

func (p *Probe) state() probeState {
	return probeState{
		V: probeStateVersion, pacer: p.pacer,
		Rate: p.rate, Ceiling: p.ceiling, Phase: p.phase, PhaseSince: p.phaseSince, LastThrottle: p.lastThrottle,
		Streak: p.streak, ProbeTicks: p.probeTicks, BackoffMs: p.backoffMs, Blocks: p.blocks, BlockFrom: p.blockFrom,
		Penalized: p.penalized, Careful: p.careful, History: p.history, Refused: p.refusedRate, Clean: p.clean,
		PenaltyWaitMs: p.penaltyWaitMs, HoldMs: p.holdMs, PenaltySteps: p.penaltySteps,
		StepAt: p.step.At, StepOK: p.step.OK, Burst: p.burst.High, BurstLow: p.burst.Low, BurstResumed: p.burst.Resumed,
		StepRefused: p.stepRefused, Rising: p.rising, RoseAt: p.roseAt, StepSize: p.stepSize, EvidenceMs: p.evidenceMs,
		ProbeAt: p.probe.At, ProbeFrom: p.probeFrom, ProbeOK: p.probe.OK, LastStep: p.lastStep, StepCap: p.stepCap,
		Smooth: p.smooth, SmoothTried: p.smoothTried, LastChunk: p.lastChunk, RefusedAll: p.refusedAll,
		BoundFrom: p.boundFrom, BoundRate: p.boundRate, BoundAt: p.boundAt,
		ResumeAt: p.resume.At, ResumeOK: p.resume.OK, ResumedMs: p.resumed.Ms, ResumedOK: p.resumed.OK, ResumeClose: p.resumeClose,
	}
}

func (p *Probe) restore(s probeState) {
	p.pacer = s.pacer
	p.rate, p.ceiling, p.phase, p.phaseSince, p.lastThrottle = s.Rate, s.Ceiling, s.Phase, s.PhaseSince, s.LastThrottle
	p.streak, p.probeTicks, p.backoffMs, p.blocks, p.blockFrom = s.Streak, s.ProbeTicks, s.BackoffMs, s.Blocks, s.BlockFrom
	p.penalized, p.careful, p.history, p.refusedRate, p.clean = s.Penalized, s.Careful, s.History, s.Refused, s.Clean
	p.penaltyWaitMs, p.holdMs, p.penaltySteps = s.PenaltyWaitMs, s.HoldMs, s.PenaltySteps
	p.step, p.burst = window{At: s.StepAt, OK: s.StepOK}, burstEstimate{High: s.Burst, Low: s.BurstLow, Resumed: s.BurstResumed}
	p.stepRefused, p.rising, p.roseAt, p.stepSize, p.evidenceMs = s.StepRefused, s.Rising, s.RoseAt, s.StepSize, s.EvidenceMs
	p.probe, p.probeFrom, p.lastStep, p.stepCap = window{At: s.ProbeAt, OK: s.ProbeOK}, s.ProbeFrom, s.LastStep, s.StepCap
	p.smooth, p.smoothTried, p.lastChunk, p.refusedAll = s.Smooth, s.SmoothTried, s.LastChunk, s.RefusedAll
	p.boundFrom, p.boundRate, p.boundAt = s.BoundFrom, s.BoundRate, s.BoundAt
	p.resume, p.resumed = window{At: s.ResumeAt, OK: s.ResumeOK}, resumeWindow{Ms: s.ResumedMs, OK: s.ResumedOK}
	p.resumeClose = s.ResumeClose
}

// MarshalJSON stores the state (current version).
func (p *Probe) MarshalJSON() ([]byte, error) { return json.Marshal(p.state()) }

// UnmarshalJSON loads stored state over p; fields the stored state lacks
// keep p's values (a fresh Probe's, when the caller built one).
func (p *Probe) UnmarshalJSON(b []byte) error {
	s := p.state()
	s.V = 0
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s.V > probeStateVersion {
		return fmt.Errorf("probe state version %d is newer than %d", s.V, probeStateVersion)
	}
	if s.Phase == PhaseBlocked && s.BlockFrom == 0 {
		// Stored before the block's start was: it began no later than
		// the phase did.
		s.BlockFrom = s.PhaseSince
	}
	p.restore(s)
	if p.params == (ProbeParams{}) {
		p.params = DefaultProbeParams() // decoded into a zero Probe
	}
	return nil
}
