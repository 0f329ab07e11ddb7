package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"storecrawl/worker/crawl"
	"storecrawl/worker/logx"
)

// Seeder queues an operator's discovery seeds (worker/crawl.D1Store).
type Seeder interface {
	Seed(ctx context.Context, keywords []string, appIDs []int64, now time.Time) (crawl.SeedResult, error)
}

// seedsUsage is the route's body.
const seedsUsage = `body must be {"keywords": ["..."], "app_ids": [123]} (either or both)`

// crawlSeeds queues keywords to search first and app ids to enrich first
// (POST /v1/crawl/seeds). Every field is checked before anything is
// written: a bad one is a 400 naming it, and nothing changes.
func (s *Server) crawlSeeds(w http.ResponseWriter, r *http.Request) {
	b, ok := readBody(w, r, MaxControlBody)
	if !ok {
		return
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || raw == nil {
		writeError(w, http.StatusBadRequest, "body", seedsUsage)
		return
	}
	for k := range raw {
		if k != "keywords" && k != "app_ids" {
			writeError(w, http.StatusBadRequest, k, "unknown field "+strconv.Quote(k)+": "+seedsUsage)
			return
		}
	}
	keywords, field, msg := seedKeywords(raw["keywords"])
	if field == "" {
		var ids []int64
		ids, field, msg = seedAppIDs(raw["app_ids"])
		if field == "" && len(keywords)+len(ids) == 0 {
			field, msg = "body", "no keywords and no app_ids: "+seedsUsage
		}
		if field == "" {
			s.seed(w, r, keywords, ids)
			return
		}
	}
	writeError(w, http.StatusBadRequest, field, msg)
}

func (s *Server) seed(w http.ResponseWriter, r *http.Request, keywords []string, ids []int64) {
	if s.Seeds == nil {
		writeError(w, http.StatusServiceUnavailable, "", "seeds are not available")
		return
	}
	res, err := s.Seeds.Seed(r.Context(), keywords, ids, time.Now())
	if err != nil {
		logx.Err("crawl.seed_failed", err, map[string]any{"keywords": len(keywords), "app_ids": len(ids)})
		writeError(w, http.StatusServiceUnavailable, "", "could not record the seeds")
		return
	}
	logx.Event("crawl.seeded", map[string]any{"keywords": res.Keywords, "apps": res.Apps, "new_apps": res.NewApps})
	writeJSON(w, http.StatusOK, res)
}

// isNull reports an absent or null field.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// seedKeywords reads "keywords": an array of at most crawl.MaxSeedKeywords
// non-empty strings of at most crawl.MaxSeedKeywordLen characters,
// normalized as the steering keeps them, each once.
func seedKeywords(raw json.RawMessage) (out []string, field, msg string) {
	if isNull(raw) {
		return nil, "", ""
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, "keywords", "keywords must be an array of strings"
	}
	if len(list) > crawl.MaxSeedKeywords {
		return nil, "keywords", fmt.Sprintf("keywords: at most %d a request (MaxSeedKeywords), got %d", crawl.MaxSeedKeywords, len(list))
	}
	seen := map[string]bool{}
	for i, k := range list {
		kw := crawl.NormalizeSeedKeyword(k)
		switch {
		case kw == "":
			return nil, "keywords", fmt.Sprintf("keywords[%d] is empty", i)
		case len([]rune(kw)) > crawl.MaxSeedKeywordLen:
			return nil, "keywords", fmt.Sprintf("keywords[%d] is longer than %d characters", i, crawl.MaxSeedKeywordLen)
		}
		if !seen[kw] {
			seen[kw] = true
			out = append(out, kw)
		}
	}
	return out, "", ""
}

// seedAppIDs reads "app_ids": an array of at most crawl.MaxSeedApps
// positive integers (App Store track ids), each once.
func seedAppIDs(raw json.RawMessage) (out []int64, field, msg string) {
	if isNull(raw) {
		return nil, "", ""
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, "app_ids", "app_ids must be an array of positive integers"
	}
	if len(list) > crawl.MaxSeedApps {
		return nil, "app_ids", fmt.Sprintf("app_ids: at most %d a request (MaxSeedApps), got %d", crawl.MaxSeedApps, len(list))
	}
	seen := map[int64]bool{}
	for i, v := range list {
		id, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil || id <= 0 {
			return nil, "app_ids", fmt.Sprintf("app_ids[%d] must be a positive integer, got %s", i, v)
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, "", ""
}
