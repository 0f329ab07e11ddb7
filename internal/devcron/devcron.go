// Package devcron is the local cron driver's logic (cmd/dev-cron): wrangler
// dev never fires a Worker's cron triggers by itself (--test-scheduled only
// serves /__scheduled?cron=...), so the driver reads the crons of
// wrangler.jsonc and fires each on its schedule, optionally faster.
//
// The pure parts are here: reading JSONC, the speed-up setting and the
// next fire time on a sped-up clock; Driver runs them against the clock.
package devcron

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"time"

	"github.com/robfig/cron/v3"
)

// StripJSONC turns JSONC (JSON with // and /* */ comments and trailing
// commas, as wrangler.jsonc is written) into JSON. Comment markers and
// commas inside strings are kept.
func StripJSONC(src []byte) ([]byte, error) {
	out := make([]byte, 0, len(src))
	// pendingComma is the index in out of a comma that is dropped if the
	// next significant character closes an object or array.
	pendingComma := -1
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '"':
			pendingComma = -1
			j := i + 1
			for ; j < len(src) && src[j] != '"'; j++ {
				if src[j] == '\\' {
					j++
				}
			}
			if j >= len(src) {
				return nil, errors.New("unterminated string")
			}
			out = append(out, src[i:j+1]...)
			i = j
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			if i < len(src) {
				out = append(out, '\n')
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := bytes.Index(src[i+2:], []byte("*/"))
			if end < 0 {
				return nil, errors.New("unterminated /* comment")
			}
			out = append(out, ' ')
			i += 2 + end + 1
		case c == ',':
			pendingComma = len(out)
			out = append(out, c)
		case c == '}' || c == ']':
			if pendingComma >= 0 {
				out = append(out[:pendingComma], out[pendingComma+1:]...)
				pendingComma = -1
			}
			out = append(out, c)
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			out = append(out, c)
		default:
			pendingComma = -1
			out = append(out, c)
		}
	}
	return out, nil
}

// Cron is one trigger: its expression as wrangler.jsonc writes it (and as
// /__scheduled and the Worker's dispatch take it) and its parsed schedule.
type Cron struct {
	Expr     string
	Schedule cron.Schedule
}

// Crons reads triggers.crons from a wrangler.jsonc and parses each
// expression (five fields, in UTC as Cloudflare runs them).
func Crons(wranglerJSONC []byte) ([]Cron, error) {
	text, err := StripJSONC(wranglerJSONC)
	if err != nil {
		return nil, fmt.Errorf("wrangler.jsonc: %w", err)
	}
	var w struct {
		Triggers struct {
			Crons []string `json:"crons"`
		} `json:"triggers"`
	}
	if err := json.Unmarshal(text, &w); err != nil {
		return nil, fmt.Errorf("wrangler.jsonc: %w", err)
	}
	if len(w.Triggers.Crons) == 0 {
		return nil, errors.New("wrangler.jsonc: no triggers.crons")
	}
	out := make([]Cron, 0, len(w.Triggers.Crons))
	for _, expr := range w.Triggers.Crons {
		s, err := cron.ParseStandard(expr)
		if err != nil {
			return nil, fmt.Errorf("wrangler.jsonc: cron %q: %w", expr, err)
		}
		out = append(out, Cron{Expr: expr, Schedule: s})
	}
	return out, nil
}

// SpeedupVar is the environment variable that shortens the crons' periods.
const SpeedupVar = "DEV_CRON_SPEEDUP"

// MaxSpeedup bounds DEV_CRON_SPEEDUP: at 100 a */5 cron fires every 3 s,
// already faster than a crawl cycle ends on a loaded machine; more would
// only queue fires behind each other.
const MaxSpeedup = 100

// ParseSpeedup reads DEV_CRON_SPEEDUP: empty is 1 (the real schedule);
// otherwise a number in (0, MaxSpeedup].
func ParseSpeedup(raw string) (float64, error) {
	if raw == "" {
		return 1, nil
	}
	k, err := strconv.ParseFloat(raw, 64)
	if err != nil || math.IsNaN(k) || math.IsInf(k, 0) {
		return 0, fmt.Errorf("%s=%q: not a number", SpeedupVar, raw)
	}
	if k <= 0 || k > MaxSpeedup {
		return 0, fmt.Errorf("%s=%q: want a number above 0 and at most %d", SpeedupVar, raw, MaxSpeedup)
	}
	return k, nil
}

// Clock is the crons' clock: it starts at Start and runs Speedup times as
// fast as real time, so each cron's period is divided by Speedup (at 10, a
// */5 cron fires every 30 s, an hourly one every 6 minutes).
type Clock struct {
	Start   time.Time
	Speedup float64
}

// Next is the real time of c's first fire strictly after the real time
// after: the cron's next time on the sped-up clock, mapped back.
func (k Clock) Next(c Cron, after time.Time) time.Time {
	speedup := k.Speedup
	if speedup <= 0 {
		speedup = 1
	}
	virtual := k.Start.Add(time.Duration(float64(after.Sub(k.Start)) * speedup))
	next := c.Schedule.Next(virtual.UTC())
	real := k.Start.Add(time.Duration(float64(next.Sub(k.Start)) / speedup))
	if !real.After(after) {
		real = after.Add(time.Nanosecond)
	}
	return real
}

// Loopback is the only host the driver calls.
const Loopback = "127.0.0.1"

// FireURL is wrangler dev's test route that runs the Worker's scheduled
// handler for expr, on loopback at port.
func FireURL(port int, expr string) string {
	return fmt.Sprintf("http://%s:%d/__scheduled?cron=%s", Loopback, port, url.QueryEscape(expr))
}

// ValidPort reports whether port is a TCP port number.
func ValidPort(port int) bool { return port > 0 && port < 1<<16 }
