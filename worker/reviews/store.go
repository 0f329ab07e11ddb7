package reviews

import (
	"time"

	"storecrawl/worker/d1"
)

// UpsertStmt stores one review with its sentiment score, idempotently: the
// same review fetched again replaces its row (migrations/0019_reviews.sql).
func UpsertStmt(r Review, score float64, fetchedAt time.Time) d1.Stmt {
	var reviewed any // NULL when the feed gave no date
	if !r.Date.IsZero() {
		reviewed = d1.Time(r.Date)
	}
	truncated := 0
	if r.Truncated {
		truncated = 1
	}
	return d1.Stmt{
		SQL: `INSERT INTO app_reviews (id, app_id, country, rating, title, body, truncated, version, author_hash, reviewed_at, sentiment, fetched_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET app_id = excluded.app_id, country = excluded.country, rating = excluded.rating,
  title = excluded.title, body = excluded.body, truncated = excluded.truncated, version = excluded.version,
  author_hash = excluded.author_hash, reviewed_at = excluded.reviewed_at, sentiment = excluded.sentiment,
  fetched_at = excluded.fetched_at`,
		Args: []any{r.ID, r.AppID, r.Country, r.Rating, r.Title, r.Body, truncated, r.Version, r.AuthorHash,
			reviewed, max(-1, min(1, score)), d1.Time(fetchedAt)},
	}
}
