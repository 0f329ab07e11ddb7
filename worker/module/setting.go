package module

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kind is how a setting's text is read.
type Kind uint8

const (
	// Text is any text.
	Text Kind = iota
	// Secret is text never shown: the operator sees whether it is set.
	Secret
	// Switch is "1" (on) or "0" (off).
	Switch
	// Int is a whole number within the setting's Bounds.
	Int
	// Number is a finite number within the setting's Bounds.
	Number
	// Choice is one of the setting's Choices.
	Choice
)

// Setting is one var of the Worker's env (wrangler.jsonc vars and
// secrets), declared once: the loader reads it, docs/operations.md's
// settings table lists it (a test compares them both ways), and
// /v1/enrichment/status shows its value.
type Setting struct {
	Name string
	// Module names the feature (or platform part) that reads it.
	Module string
	Kind   Kind
	// Default is the text used when the var is unset, or set to a value
	// the setting refuses ("" for none).
	Default string
	// Bounds hold an Int or Number setting (In(lo, hi)).
	Bounds Bounds
	// Choices are a Choice setting's values.
	Choices []string
	// Check refuses a number within Bounds that the setting still cannot
	// take (nil: none).
	Check func(float64) error
	// Doc says what it sets, in a line.
	Doc string
}

// Bounds are a number's closed range; zero Bounds hold none.
type Bounds struct {
	Lo, Hi float64
	Set    bool
}

// In is the closed range [lo, hi].
func In(lo, hi float64) Bounds { return Bounds{Lo: lo, Hi: hi, Set: true} }

// String is the range as the docs' table shows it: "lo–hi", "≥ lo", or
// "" for none.
func (b Bounds) String() string {
	switch {
	case !b.Set:
		return ""
	case math.IsInf(b.Hi, 1):
		return "≥ " + formatNumber(b.Lo)
	}
	return formatNumber(b.Lo) + "–" + formatNumber(b.Hi)
}

// Limits is what the docs' table shows as the setting's bounds: its
// range, or its choices joined by "|", or "".
func (s Setting) Limits() string {
	if s.Kind == Choice {
		return strings.Join(s.Choices, "|")
	}
	if s.Kind == Switch {
		return "0|1"
	}
	return s.Bounds.String()
}

func formatNumber(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// Seconds and Hours are a duration in a setting's unit.
func Seconds(d time.Duration) float64 { return d.Seconds() }
func Hours(d time.Duration) float64   { return d.Hours() }

// FormatNumber is a default's text for the number v.
func FormatNumber(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// Problem is a var whose value a setting refused; its default is used.
type Problem struct {
	Var   string `json:"var"`
	Value string `json:"value"`
	Error string `json:"error"`
}

// Values are the settings as loaded: each setting's text, its default
// when unset or refused.
type Values struct {
	text  map[string]string
	set   map[string]bool
	decls map[string]Setting
}

// Load reads every declared setting with getenv, in order. A value is
// trimmed of spaces; an empty one is unset. A value the setting refuses
// (not a number, out of bounds, not a choice) is a Problem, and the
// setting keeps its default, as if unset: a typo cannot stop the system.
// A name declared twice panics (a test runs Load over every declaration).
func Load(decls []Setting, getenv func(string) string) (Values, []Problem) {
	v := Values{text: map[string]string{}, set: map[string]bool{}, decls: map[string]Setting{}}
	var probs []Problem
	for _, s := range decls {
		if _, dup := v.decls[s.Name]; dup {
			panic("module: setting declared twice: " + s.Name)
		}
		v.decls[s.Name] = s
		v.text[s.Name] = s.Default
		raw := strings.TrimSpace(getenv(s.Name))
		if raw == "" {
			continue
		}
		if err := s.Accept(raw); err != nil {
			shown := raw
			if s.Kind == Secret {
				shown = "(redacted)"
			}
			probs = append(probs, Problem{Var: s.Name, Value: shown, Error: err.Error()})
			continue
		}
		v.text[s.Name], v.set[s.Name] = raw, true
	}
	return v, probs
}

// Accept reports why the setting refuses raw (nil: it takes it).
func (s Setting) Accept(raw string) error {
	switch s.Kind {
	case Switch:
		if raw != "0" && raw != "1" {
			return fmt.Errorf("want 0 or 1")
		}
	case Choice:
		if !slices.Contains(s.Choices, raw) {
			return fmt.Errorf("want one of %s", strings.Join(s.Choices, ", "))
		}
	case Int, Number:
		var f float64
		if s.Kind == Int {
			n, err := strconv.ParseInt(raw, 10, 64)
			if err != nil {
				return fmt.Errorf("want a whole number")
			}
			f = float64(n)
		} else {
			var err error
			if f, err = strconv.ParseFloat(raw, 64); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return fmt.Errorf("want a number")
			}
		}
		if s.Bounds.Set && (f < s.Bounds.Lo || f > s.Bounds.Hi) {
			return fmt.Errorf("must be in [%s]", strings.ReplaceAll(s.Bounds.String(), "–", ", "))
		}
		if s.Check != nil {
			return s.Check(f)
		}
	}
	return nil
}

// IsSet reports whether name was set to a value its setting took.
func (v Values) IsSet(name string) bool { return v.set[name] }

// String is name's text (its default when unset). Reading a name no
// setting declares panics: a typo in the wiring fails its first test.
func (v Values) String(name string) string {
	t, ok := v.text[name]
	if !ok {
		if _, declared := v.decls[name]; !declared {
			panic("module: setting not declared: " + name)
		}
	}
	return t
}

// Int is name's whole number (0 when its text is empty).
func (v Values) Int(name string) int64 {
	n, _ := strconv.ParseInt(v.String(name), 10, 64)
	return n
}

// Float is name's number (0 when its text is empty).
func (v Values) Float(name string) float64 {
	f, _ := strconv.ParseFloat(v.String(name), 64)
	return f
}

// On reports whether the switch name is on.
func (v Values) On(name string) bool { return v.String(name) == "1" }

// Shown is every setting's value as the operator sees it, by name: a
// secret is "set" or "unset", never its value.
func (v Values) Shown() map[string]string {
	out := make(map[string]string, len(v.decls))
	for name, s := range v.decls {
		t := v.text[name]
		if s.Kind == Secret {
			t = "unset"
			if v.set[name] {
				t = "set"
			}
		}
		out[name] = t
	}
	return out
}
