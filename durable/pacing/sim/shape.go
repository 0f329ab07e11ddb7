package sim

import (
	"fmt"
	"slices"
	"strconv"
)

// A shape is how many upstream requests an item costs (subrequests_per_item).
// The shipped scenarios send 4–6 per item; the product spends about one
// per enriched app, so -shape reruns every scenario at a given count without
// editing its file.

const (
	// shapeFile keeps each scenario's own subrequests_per_item.
	shapeFile = "file"
	// productShape is what the product spends per enriched app (≈ 1.05
	// requests), and what a scenario file that omits the field gets.
	productShape = 1
	// defaultShapesAll is -shape's default for -scenario all (and -seeds):
	// the files as they are first, so today's table is printed unchanged,
	// then the product's shape.
	defaultShapesAll = shapeFile + ",1"
)

// shape is one -shape entry: 0 keeps the file's count.
type shape int

func (s shape) String() string {
	if s == 0 {
		return shapeFile
	}
	return strconv.Itoa(int(s))
}

// title heads a table section at this shape.
func (s shape) title() string {
	if s == 0 {
		return "requests per item as in each scenario file"
	}
	if s == 1 {
		return "1 request per item (subrequests_per_item overridden on every scenario)"
	}
	return fmt.Sprintf("%d requests per item (subrequests_per_item overridden on every scenario)", int(s))
}

// parseShapes reads a comma-separated -shape list of counts and "file".
func parseShapes(list string) ([]shape, error) {
	var out []shape
	for _, f := range splitNames(list) {
		s := shape(0)
		if f != shapeFile {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 || n > maxSubrequestsPerItem {
				return nil, fmt.Errorf("-shape %q: want %q or a count in [1, %d]", f, shapeFile, maxSubrequestsPerItem)
			}
			s = shape(n)
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-shape %q names no shape", list)
	}
	return out, nil
}

// withShape is a copy of sc sending n requests per item (n = 0: sc's own
// count); nothing else changes.
func (sc *Scenario) withShape(n shape) *Scenario {
	c := *sc
	c.Phases = slices.Clone(sc.Phases)
	if n > 0 {
		c.SubrequestsPerItem = int(n)
	}
	return &c
}

// atShape is every scenario at shape n.
func atShape(scenarios []*Scenario, n shape) []*Scenario {
	out := make([]*Scenario, len(scenarios))
	for i, sc := range scenarios {
		out[i] = sc.withShape(n)
	}
	return out
}
