package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"unicode/utf8"
)

// param is one tool argument: its JSON Schema (tools/list) and the checks
// a call's value gets (validate), from the one declaration.
type param struct {
	Name        string
	Type        string // "string" or "integer"
	Description string
	Required    bool
	// Integers: Min and Max. Strings: MinLen and MaxLen characters,
	// Pattern, Enum.
	Min, Max       int64
	MinLen, MaxLen int
	Pattern        *regexp.Regexp
	Enum           []string
	Default        any
}

// schema is the JSON Schema of a tool's arguments: an object of params,
// no other property.
func schema(params []param) map[string]any {
	props := map[string]any{}
	required := []string{}
	for _, p := range params {
		s := map[string]any{"type": p.Type, "description": p.Description}
		switch p.Type {
		case "integer":
			s["minimum"], s["maximum"] = p.Min, p.Max
		case "string":
			if p.MinLen > 0 {
				s["minLength"] = p.MinLen
			}
			if p.MaxLen > 0 {
				s["maxLength"] = p.MaxLen
			}
			if p.Pattern != nil {
				s["pattern"] = p.Pattern.String()
			}
			if p.Enum != nil {
				s["enum"] = p.Enum
			}
		}
		if p.Default != nil {
			s["default"] = p.Default
		}
		props[p.Name] = s
		if p.Required {
			required = append(required, p.Name)
		}
	}
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

// args are a call's validated arguments: each param's value (its default
// when absent and not required; absent with no default: not in the map).
type args map[string]any

func (a args) str(name string) string {
	s, _ := a[name].(string)
	return s
}

func (a args) int(name string) int64 {
	n, _ := a[name].(int64)
	return n
}

// validate holds raw (a JSON object, or nothing) to params, naming the
// first argument at fault: unknown, missing, of the wrong type or out of
// range. Strings come back as given, integers as int64.
func validate(params []param, raw json.RawMessage) (args, *rpcError) {
	var in map[string]json.RawMessage
	if len(bytes.TrimSpace(raw)) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, invalidParams("arguments", "arguments must be an object")
		}
	}
	for name := range in {
		if !known(params, name) {
			return nil, invalidParams(name, fmt.Sprintf("unknown argument %q (the tool takes %s)", name, names(params)))
		}
	}
	out := args{}
	for _, p := range params {
		v, ok := in[p.Name]
		if !ok || bytes.Equal(v, []byte("null")) {
			if p.Required {
				return nil, invalidParams(p.Name, p.Name+" is required: "+p.rule())
			}
			if p.Default != nil {
				out[p.Name] = p.Default
			}
			continue
		}
		val, ok := p.check(v)
		if !ok {
			return nil, invalidParams(p.Name, p.Name+" must be "+p.rule())
		}
		out[p.Name] = val
	}
	return out, nil
}

func known(params []param, name string) bool {
	for _, p := range params {
		if p.Name == name {
			return true
		}
	}
	return false
}

func names(params []param) string {
	if len(params) == 0 {
		return "no arguments"
	}
	s := ""
	for i, p := range params {
		if i > 0 {
			s += ", "
		}
		s += p.Name
	}
	return s
}

// check decodes v as p's type and holds it to p's bounds.
func (p param) check(v json.RawMessage) (any, bool) {
	switch p.Type {
	case "integer":
		var f json.Number
		if t := bytes.TrimSpace(v); len(t) == 0 || t[0] == '"' || json.Unmarshal(t, &f) != nil {
			return nil, false
		}
		n, err := strconv.ParseInt(f.String(), 10, 64)
		if err != nil {
			// 5.0 is the integer 5 in JSON Schema.
			x, ferr := strconv.ParseFloat(f.String(), 64)
			if ferr != nil || x != math.Trunc(x) || math.Abs(x) > 1<<53 {
				return nil, false
			}
			n = int64(x)
		}
		return n, n >= p.Min && n <= p.Max
	case "string":
		var s string
		if json.Unmarshal(v, &s) != nil {
			return nil, false
		}
		n := utf8.RuneCountInString(s)
		if n < p.MinLen || p.MaxLen > 0 && n > p.MaxLen || p.Pattern != nil && !p.Pattern.MatchString(s) {
			return nil, false
		}
		if p.Enum != nil {
			for _, e := range p.Enum {
				if s == e {
					return s, true
				}
			}
			return nil, false
		}
		return s, true
	}
	return nil, false
}

// rule words what p takes.
func (p param) rule() string {
	switch {
	case p.Type == "integer":
		return fmt.Sprintf("an integer in [%d, %d]", p.Min, p.Max)
	case p.Enum != nil:
		return fmt.Sprintf("one of %q", p.Enum)
	case p.Pattern != nil:
		return fmt.Sprintf("a string matching %s", p.Pattern)
	default:
		return fmt.Sprintf("a string of %d–%d characters", p.MinLen, p.MaxLen)
	}
}
