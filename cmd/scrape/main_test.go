package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"strings"
	"testing"
)

const fixtures = "../../worker/appstore/testdata/"

func TestPageOutputKeys(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"page", fixtures + "legacy_sony_vn_2023.html"}, nil, &out); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"format", "subtitle", "rating_share", "rating_counts", "similar_app_ids", "in_app_purchases", "missing_sections"} {
		if _, ok := got[k]; !ok {
			t.Errorf("no %q in %s", k, out.String())
		}
	}
	if got["format"] != "legacy" || len(got["similar_app_ids"].([]any)) != 6 {
		t.Fatalf("%s", out.String())
	}
	// The lookup's count spread over the page's shares.
	out.Reset()
	run([]string{"page", "-rating-count", "10", fixtures + "legacy_sony_vn_2023.html"}, nil, &out)
	if !strings.Contains(strings.Join(strings.Fields(out.String()), ""), `"rating_counts":[10,0,0,0,0]`) {
		t.Fatalf("%s", out.String())
	}
}

func TestChartLookupTrimAndErrors(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"chart", fixtures + "chart_rss_hk_topfree_2018.json"}, nil, &out); err != nil || !strings.Contains(out.String(), "310633997") {
		t.Fatalf("chart: %v %s", err, out.String())
	}
	out.Reset()
	if err := run([]string{"lookup", "-"}, strings.NewReader(`{"resultCount":1,"results":[{"wrapperType":"software","trackId":7}]}`), &out); err != nil || !strings.Contains(out.String(), `"track_id": 7`) {
		t.Fatalf("lookup from stdin: %v %s", err, out.String())
	}
	out.Reset()
	page, _ := os.ReadFile(fixtures + "legacy_netflix_us_2023.html")
	if err := run([]string{"trim", "-"}, bytes.NewReader(page), &out); err != nil || out.Len() != len(page) {
		t.Fatalf("a fixture is already trimmed: %v %d vs %d", err, out.Len(), len(page))
	}
	if err := run([]string{"page", "-"}, strings.NewReader("<html><body>nothing</body></html>"), &out); err == nil {
		t.Fatal("a page without product data must fail")
	}
	for _, bad := range [][]string{nil, {"page"}, {"frobnicate", "x"}} {
		if err := run(bad, nil, &out); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

func TestHintsPrintsTermsInOrder(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"hints", fixtures + "hints_us_software_budget_BUILT.xml"}, nil, &out); err != nil {
		t.Fatal(err)
	}
	var terms []string
	if err := json.Unmarshal(out.Bytes(), &terms); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(terms) != 10 || terms[0] != "budget" || terms[6] != "budget tracker & planner" || terms[9] != "budget book" {
		t.Fatalf("%q", terms)
	}
	out.Reset()
	if err := run([]string{"hints", fixtures + "hints_us_empty_BUILT.xml"}, nil, &out); err != nil || strings.TrimSpace(out.String()) != "[]" {
		t.Fatalf("empty: %v %s", err, out.String())
	}
	if err := run([]string{"hints", fixtures + "lookup_us_uber_2017.json"}, nil, &out); err == nil {
		t.Fatal("a lookup body read as hints")
	}
}
