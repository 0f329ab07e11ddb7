package controller

import (
	"encoding/json"
	"strings"
	"testing"
)

// A retry enriched from its stored page (R2) is counted as such
// (pages_from_r2, in the totals, the status and the ledger's counters),
// never as a page request: requests_per_enriched_app counts only what was
// sent upstream. Its page says nothing of today's markup, so the parser
// health does not sample it.
func TestPagesFromR2AreNotRequests(t *testing.T) {
	s := DefaultState()
	s.Record(RunOutcome{Picked: 2, PagesFromR2: 1,
		Results: []ItemResult{{TrackID: 1, Class: ClassOK, Page: PageParsed}, {TrackID: 2, Class: ClassOK, Page: PageParsed, PageFromR2: true}},
		Requests: []RequestOutcome{
			{Kind: RequestLookup, Class: ClassOK, Remaining: -1}, // the two apps' lookup batch
			{Kind: RequestPage, Class: ClassOK, Remaining: -1},   // app 1's page; app 2's came from R2
		}}, t0)
	st := s.Status(t0, DefaultConfig())
	if st.Totals.Completed != 2 || st.Totals.PageRequests != 1 || st.Totals.PagesFromR2 != 1 || st.RequestsPerEnrichedApp != 1 {
		t.Fatalf("totals %+v, per app %v", st.Totals, st.RequestsPerEnrichedApp)
	}
	if c := s.Totals.Counters(); c["pages_from_r2"] != 1 || c["page_requests"] != 1 {
		t.Fatalf("ledger counters %v", c)
	}
	b, _ := json.Marshal(st)
	if !strings.Contains(string(b), `"pages_from_r2":1`) {
		t.Fatalf("status JSON %s", b)
	}
	s.Parser.observe([]ItemResult{{TrackID: 3, Class: ClassOK, Page: PageParsed, PageFromR2: true}}, t0)
	if len(s.Parser.Window) != 0 || s.Parser.Parsed != 0 {
		t.Fatalf("a stored page sampled as today's markup: %+v", s.Parser)
	}
	var run PageTally
	run.AddResult(ItemResult{TrackID: 3, Class: ClassOK, Page: PageParsed, PageFromR2: true})
	if run.Parsed != 0 {
		t.Fatalf("run tally %+v", run)
	}
}
