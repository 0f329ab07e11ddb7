package main

import (
	"net/http"
	"testing"
	"time"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func TestBucket(t *testing.T) {
	type step struct {
		advance     time.Duration // before this request
		wantOK      bool
		wantStarted bool
	}
	tests := []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{
			name:  "burst then refuse",
			cfg:   Config{RatePerMin: 60, Burst: 3},
			steps: []step{{0, true, false}, {0, true, false}, {0, true, false}, {0, false, false}},
		},
		{
			name: "refills one token per second at 60/min",
			cfg:  Config{RatePerMin: 60, Burst: 1},
			steps: []step{
				{0, true, false}, {0, false, false},
				{500 * time.Millisecond, false, false}, // half a token
				{500 * time.Millisecond, true, false},
				{0, false, false},
			},
		},
		{
			name:  "refill is capped at burst",
			cfg:   Config{RatePerMin: 60, Burst: 2},
			steps: []step{{0, true, false}, {0, true, false}, {time.Hour, true, false}, {0, true, false}, {0, false, false}},
		},
		{
			name: "403 storm blocks even with tokens, then ends",
			cfg:  Config{RatePerMin: 600, Burst: 1, BlockS: 10},
			steps: []step{
				{0, true, false},
				{0, false, true},                // refusal starts the block
				{5 * time.Second, false, false}, // bucket refilled but blocked
				{5 * time.Second, true, false},  // block over
			},
		},
		{
			name: "refusals inside a block do not extend it",
			cfg:  Config{RatePerMin: 600, Burst: 1, BlockS: 10},
			steps: []step{
				{0, true, false}, {0, false, true},
				{9 * time.Second, false, false},
				{999 * time.Millisecond, false, false},
				{time.Millisecond, true, false},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bucket
			now := t0
			b.reset(tt.cfg, now)
			for i, s := range tt.steps {
				now = now.Add(s.advance)
				v := b.take(now)
				ok, started := v.Admitted, v.BlockStarted
				if ok != s.wantOK || started != s.wantStarted {
					t.Fatalf("step %d: take = (%v, %v), want (%v, %v)", i, ok, started, s.wantOK, s.wantStarted)
				}
			}
		})
	}
}

func TestBucketBlockedUntilAndReset(t *testing.T) {
	var b bucket
	b.reset(Config{RatePerMin: 60, Burst: 1, BlockS: 30}, t0)
	b.take(t0)
	if !b.take(t0).BlockStarted {
		t.Fatal("block not started")
	}
	if got, want := b.blockedUntilMS(t0), t0.Add(30*time.Second).UnixMilli(); got != want {
		t.Fatalf("blockedUntilMS = %d, want %d", got, want)
	}
	if got := b.blockedUntilMS(t0.Add(30 * time.Second)); got != 0 {
		t.Fatalf("blockedUntilMS after expiry = %d, want 0", got)
	}
	b.reset(Config{RatePerMin: 60, Burst: 2}, t0.Add(time.Second))
	for i := range 2 {
		if !b.take(t0.Add(time.Second)).Admitted {
			t.Fatalf("take %d after reset refused: block must clear and bucket refill to burst", i)
		}
	}
}

func TestConfigPatch(t *testing.T) {
	base := DefaultConfig()
	tests := []struct {
		body      string
		wantField string // "" with wantErr=false means success
		wantErr   bool
		check     func(Config) bool
	}{
		{body: `{}`, check: func(c Config) bool { return c == base }},
		{body: `{"burst":5}`, check: func(c Config) bool { return c.Burst == 5 && c.RatePerMin == base.RatePerMin }},
		{body: `{"on_exceed":403,"retry_after_s":7,"block_s":30}`, check: func(c Config) bool {
			return c.OnExceed == http.StatusForbidden && c.RetryAfterS == 7 && c.BlockS == 30
		}},
		{body: `{"rate_per_min":1,"latency_ms":0,"latency_jitter_ms":0}`, check: func(c Config) bool {
			return c.RatePerMin == 1 && c.LatencyMS == 0 && c.LatencyJitterMS == 0
		}},
		{body: `{"nope":1}`, wantErr: true, wantField: "nope"},
		{body: `{"burst":5,"zzz":1}`, wantErr: true, wantField: "zzz"},
		{body: `{"burst":0}`, wantErr: true, wantField: "burst"},
		{body: `{"burst":"5"}`, wantErr: true, wantField: "burst"},
		{body: `{"burst":null}`, wantErr: true, wantField: "burst"},
		{body: `{"burst":1.5}`, wantErr: true, wantField: "burst"},
		{body: `{"on_exceed":500}`, wantErr: true, wantField: "on_exceed"},
		{body: `{"on_exceed":404}`, wantErr: true, wantField: "on_exceed"},
		{body: `{"block_s":-1}`, wantErr: true, wantField: "block_s"},
		{body: `{"retry_after_s":3601}`, wantErr: true, wantField: "retry_after_s"},
		{body: `{"rate_per_min":0}`, wantErr: true, wantField: "rate_per_min"},
		{body: `not json`, wantErr: true, wantField: ""},
		{body: `[1]`, wantErr: true, wantField: ""},
		{body: `null`, wantErr: true, wantField: ""},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			got, err := base.Patch([]byte(tt.body))
			if tt.wantErr {
				if err == nil || err.Field != tt.wantField {
					t.Fatalf("err = %v, want field %q", err, tt.wantField)
				}
				if got != base {
					t.Fatalf("config changed on error: %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if !tt.check(got) {
				t.Fatalf("unexpected config %+v", got)
			}
		})
	}
}
