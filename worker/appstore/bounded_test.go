package appstore

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// A hostile or broken upstream answer is cut to the bounds before anything
// stores it: every string field, every list.
func TestParsedValuesAreBounded(t *testing.T) {
	huge := strings.Repeat("x", 10*MaxFieldLen)
	langs := make([]string, 3*MaxLanguages)
	for i := range langs {
		langs[i] = huge
	}
	body, _ := json.Marshal(map[string]any{"resultCount": 1, "results": []map[string]any{{
		"wrapperType": "software", "trackId": 7, "trackName": huge, "bundleId": huge, "artistName": huge,
		"currency": huge, "primaryGenreName": huge, "version": huge, "releaseDate": huge,
		"currentVersionReleaseDate": huge, "description": huge + huge, "contentAdvisoryRating": huge,
		"trackViewUrl": huge, "artworkUrl512": huge, "languageCodesISO2A": langs,
	}}})
	a, err := ParseLookup(body)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"name": a.Name, "bundle": a.BundleID, "developer": a.DeveloperName,
		"currency": a.Currency, "genre": a.Genre, "version": a.Version, "release": a.ReleaseDate,
		"current": a.CurrentVersionReleaseDate, "rating": a.ContentRating, "url": a.TrackViewURL, "artwork": a.ArtworkURL} {
		if len(v) != MaxFieldLen {
			t.Errorf("%s: %d bytes, want %d", name, len(v), MaxFieldLen)
		}
	}
	if len([]rune(a.Description)) != MaxDescriptionLen || len(a.Languages) != MaxLanguages || len(a.Languages[0]) != MaxFieldLen {
		t.Errorf("description %d, languages %d", len(a.Description), len(a.Languages))
	}

	var p StorePage
	for i := range 3 * MaxSimilar {
		p.SimilarAppIDs = append(p.SimilarAppIDs, int64(i+1))
		p.InAppPurchases = append(p.InAppPurchases, IAP{Name: huge, Price: huge})
	}
	p.Subtitle = huge
	b := p.Bounded()
	if len(b.SimilarAppIDs) != MaxSimilar || len(b.InAppPurchases) != MaxIAPs || len(b.InAppPurchases[0].Name) != MaxFieldLen ||
		len(b.Subtitle) != MaxTextLen {
		t.Errorf("page: %d similar, %d iaps, subtitle %d", len(b.SimilarAppIDs), len(b.InAppPurchases), len(b.Subtitle))
	}

	var entries []string
	for i := range MaxChartLimit + 50 {
		entries = append(entries, fmt.Sprintf(`{"id":{"attributes":{"im:id":"%d"}},"im:name":{"label":%q}}`, i+1, huge))
	}
	chart, err := ParseChart([]byte(`{"feed":{"entry":[` + strings.Join(entries, ",") + `]}}`))
	if err != nil || len(chart) != MaxChartLimit || len(chart[0].Name) != MaxFieldLen {
		t.Fatalf("chart: %d entries (%v)", len(chart), err)
	}
}
