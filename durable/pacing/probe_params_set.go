package pacing

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"time"
)

// Set sets the tuning constant named field (as ProbeParams spells it) from
// value: a number, or a Go duration ("30s") for a time.Duration. It is how
// cmd/simulate's -params and -sweep tune the probe without a rebuild.
// Setting Beta sets ClimbDepth too, as the default's pair does.
func (q *ProbeParams) Set(field, value string) error {
	v := reflect.ValueOf(q).Elem()
	f := v.FieldByName(field)
	if !f.IsValid() {
		return fmt.Errorf("no tuning constant %q (have: %v)", field, ProbeParamNames())
	}
	switch {
	case f.Type() == reflect.TypeFor[time.Duration]():
		d, err := time.ParseDuration(value)
		if err != nil || d < 0 {
			return fmt.Errorf("%s=%q: want a duration such as 30s", field, value)
		}
		f.SetInt(int64(d))
	case f.Kind() == reflect.Float64:
		x, err := strconv.ParseFloat(value, 64)
		if err != nil || x < 0 {
			return fmt.Errorf("%s=%q: want a number ≥ 0", field, value)
		}
		f.SetFloat(x)
		if field == "Beta" {
			q.ClimbDepth = 1 - x
		}
	case f.Kind() == reflect.Int:
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 {
			return fmt.Errorf("%s=%q: want a whole number ≥ 0", field, value)
		}
		f.SetInt(int64(n))
	default:
		return fmt.Errorf("%s: a %s cannot be set", field, f.Type())
	}
	return nil
}

// Get is field's value as Set reads it (durations as Go prints them).
func (q ProbeParams) Get(field string) (string, error) {
	f := reflect.ValueOf(q).FieldByName(field)
	if !f.IsValid() {
		return "", fmt.Errorf("no tuning constant %q (have: %v)", field, ProbeParamNames())
	}
	if f.Type() == reflect.TypeFor[time.Duration]() {
		return time.Duration(f.Int()).String(), nil
	}
	return fmt.Sprint(f.Interface()), nil
}

// ProbeParamNames lists the tuning constants Set takes, sorted.
func ProbeParamNames() []string {
	t := reflect.TypeFor[ProbeParams]()
	out := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		out = append(out, t.Field(i).Name)
	}
	sort.Strings(out)
	return out
}
