package appstore

import (
	"reflect"
	"testing"
)

func TestDeriveKeywords(t *testing.T) {
	cases := []struct {
		title, subtitle string
		want            []string
	}{
		{"Budget Planner", "", []string{"budget", "budget planner", "planner"}},
		{"Clear Fitness 2", "Your daily workout tracker", []string{"clear", "clear fitness", "clear fitness 2", "fitness", "tracker", "workout", "workout tracker"}},
		{"The Best Free Photo Editor with Filters and Effects", "", []string{"editor", "editor filters", "effects", "filters", "filters effects", "photo", "photo editor"}},
		{"", "", []string{}},
	}
	for _, c := range cases {
		got := DeriveKeywords(c.title, c.subtitle)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q/%q: %q, want %q", c.title, c.subtitle, got, c.want)
		}
	}
	long := DeriveKeywords("Alpha Bravo Charlie Delta Echoes Foxtrot Golfer Hotels Indigo Juliet", "")
	if len(long) != MaxKeywordsPerApp {
		t.Fatalf("not bounded: %d", len(long))
	}
}
