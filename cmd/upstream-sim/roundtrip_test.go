package main

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"storecrawl/worker/appstore"
)

// TestRoundTripWithParser fetches generated lookups and store pages and
// parses them with worker/appstore, checking every value against the
// catalogue entry. This keeps the simulator and the parser in lockstep.
func TestRoundTripWithParser(t *testing.T) {
	for _, markup := range []struct {
		name   string
		config string
		format appstore.Format
	}{{"legacy", `{"current_markup_pct": 0}`, appstore.FormatLegacy}, {"current", `{"current_markup_pct": 100}`, appstore.FormatCurrent}} {
		t.Run(markup.name, func(t *testing.T) { roundTrip(t, markup.config, markup.format) })
	}
}

func roundTrip(t *testing.T, config string, format appstore.Format) {
	ts, _ := newTestServer(t, calmConfig())
	cat := testCatalogue()
	if r := post(t, ts.URL+"/__config", config); r.status != 200 {
		t.Fatalf("config: %d %s", r.status, r.body)
	}

	// Coverage counters: the checked range must exercise every page part.
	var withSubtitle, withIAP, withSimilar, noRatings, escaped int
	for off := int64(1); off <= 120; off++ {
		want, _ := cat.Get(baseTrackID + off)
		if BrokenPage(want.ID) {
			continue
		}
		r := get(t, fmt.Sprintf("%s/lookup?id=%d&country=us", ts.URL, want.ID))
		app, err := appstore.ParseLookup(r.body)
		if err != nil {
			t.Fatalf("%d: ParseLookup: %v", want.ID, err)
		}
		gotLookup := []any{app.TrackID, app.Name, app.BundleID, app.DeveloperID, app.DeveloperName, app.Price,
			app.Currency, app.Genre, app.GenreID, app.AverageRating, app.RatingCount, app.Version,
			app.ReleaseDate, app.CurrentVersionReleaseDate, app.Description, app.ContentRating,
			app.FileSizeBytes, app.Languages}
		wantLookup := []any{want.ID, want.Name, want.BundleID, want.DevID, want.DevName, want.Price,
			"USD", want.Genre.Name, want.Genre.ID, want.AverageRating, want.RatingCount, want.Version,
			want.ReleaseDate, want.UpdatedDate, appstore.Truncate(want.Description, appstore.MaxDescriptionLen), want.ContentRating,
			want.FileSize, want.Languages}
		if !reflect.DeepEqual(gotLookup, wantLookup) {
			t.Fatalf("%d: lookup\n got %v\nwant %v", want.ID, gotLookup, wantLookup)
		}
		if !strings.HasSuffix(app.ArtworkURL, "/512x512bb.jpg") {
			t.Errorf("%d: artwork %q", want.ID, app.ArtworkURL)
		}

		// Follow trackViewUrl exactly as a crawler would.
		u, err := url.Parse(app.TrackViewURL)
		if err != nil || u.Host != strings.TrimPrefix(ts.URL, "http://") {
			t.Fatalf("%d: trackViewUrl %q not on the simulator", want.ID, app.TrackViewURL)
		}
		pr := get(t, app.TrackViewURL)
		page, err := appstore.ParseStorePage(pr.body)
		if err != nil {
			t.Fatalf("%d: ParseStorePage: %v", want.ID, err)
		}
		wantIAPs := []appstore.IAP{}
		for _, p := range want.IAPs {
			wantIAPs = append(wantIAPs, appstore.IAP{Name: p.Name, Price: formattedPrice(p.Price)})
		}
		wantSimilar := want.Similar
		if wantSimilar == nil {
			wantSimilar = []int64{}
		}
		if page.Format != format || page.Subtitle != want.Subtitle || page.Name != want.Name ||
			!reflect.DeepEqual(page.InAppPurchases, wantIAPs) || !reflect.DeepEqual(page.SimilarAppIDs, wantSimilar) {
			t.Fatalf("%d: page\n got %+v\nwant subtitle %q iaps %v similar %v", want.ID, page, want.Subtitle, wantIAPs, wantSimilar)
		}
		// The legacy page draws bars rounded to whole percents: counts
		// spread from the lookup's total come back within rounding. The
		// current page gives the exact counts.
		got := page.RatingCounts(app.RatingCount)
		if format == appstore.FormatCurrent && want.RatingCount > 0 && got != want.Histogram {
			t.Fatalf("%d: exact counts %v, want %v", want.ID, got, want.Histogram)
		}
		var sum int64
		for i := range got {
			sum += got[i]
			if d := got[i] - want.Histogram[i]; d*d > (want.RatingCount*3/100+1)*(want.RatingCount*3/100+1) {
				t.Fatalf("%d: counts %v, want about %v", want.ID, got, want.Histogram)
			}
		}
		if sum != want.RatingCount {
			t.Fatalf("%d: counts %v sum to %d, want %d", want.ID, got, sum, want.RatingCount)
		}

		if want.Subtitle != "" {
			withSubtitle++
		}
		if len(want.IAPs) > 0 {
			withIAP++
		}
		if len(want.Similar) > 0 {
			withSimilar++
		}
		if want.RatingCount == 0 {
			noRatings++
		}
		if strings.Contains(want.Subtitle, "&") || strings.Contains(fmt.Sprint(want.IAPs), "&") {
			escaped++
		}
	}
	if withSubtitle == 0 || withIAP == 0 || withSimilar == 0 || noRatings == 0 || escaped == 0 {
		t.Fatalf("weak coverage: subtitle=%d iap=%d similar=%d noRatings=%d escaped=%d",
			withSubtitle, withIAP, withSimilar, noRatings, escaped)
	}
}

func TestRoundTripSpecialIDs(t *testing.T) {
	ts, _ := newTestServer(t, calmConfig())
	broken := int64(baseTrackID + brokenPageEvery)
	unknown := int64(baseTrackID + testApps + 1)

	// /97 ids: lookup parses fine, the page is a permanent parse error.
	if _, err := appstore.ParseLookup(get(t, fmt.Sprintf("%s/lookup?id=%d", ts.URL, broken)).body); err != nil {
		t.Fatalf("broken-page id lookup: %v", err)
	}
	r := get(t, fmt.Sprintf("%s/us/app/x/id%d", ts.URL, broken))
	if _, err := appstore.ParseStorePage(r.body); r.status != 200 || !errors.Is(err, appstore.ErrParse) {
		t.Fatalf("broken page: status %d err %v, want 200 + ErrParse", r.status, err)
	}

	// Unknown ids: ErrNotFound from the lookup, 404 for the page.
	if _, err := appstore.ParseLookup(get(t, fmt.Sprintf("%s/lookup?id=%d", ts.URL, unknown)).body); !errors.Is(err, appstore.ErrNotFound) {
		t.Fatalf("unknown id lookup: %v, want ErrNotFound", err)
	}
	if r := get(t, fmt.Sprintf("%s/us/app/x/id%d", ts.URL, unknown)); r.status != 404 {
		t.Fatalf("unknown id page: %d, want 404", r.status)
	}

	// A lookup of several ids: each known one found, the unknown one not.
	one := int64(baseTrackID + 1)
	lb, err := appstore.ParseLookupBatch(get(t, fmt.Sprintf("%s/lookup?id=%d,%d,%d", ts.URL, broken, unknown, one)).body, []int64{broken, unknown, one})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{broken, one} {
		if app, err := lb.Lookup(id); err != nil || app.TrackID != id {
			t.Fatalf("id %d in a batch: %+v %v", id, app, err)
		}
	}
	if _, err := lb.Lookup(unknown); !errors.Is(err, appstore.ErrNotFound) {
		t.Fatalf("unknown id in a batch: %v, want ErrNotFound", err)
	}

	// Search results parse too.
	apps, err := appstore.ParseSearch(get(t, ts.URL+"/search?term=pro&limit=5").body)
	if err != nil || len(apps) == 0 {
		t.Fatalf("search: %d apps, err %v", len(apps), err)
	}
}
