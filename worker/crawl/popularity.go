package crawl

import (
	"time"

	"storecrawl/worker/d1"
)

// savePopularitySQL stores a keyword's popularity (worker/keywords) on its
// row, by its UNIQUE keyword: ?1 keyword, ?2 score, ?3 prefix, ?4
// position (NULL both when not suggested), ?5 when computed. crawl_keywords
// is discovery's table; the keyword-popularity task puts this statement in
// its batch.
const savePopularitySQL = `UPDATE crawl_keywords SET popularity = ?2, popularity_prefix = ?3, popularity_position = ?4, popularity_at = ?5
WHERE keyword = ?1`

// SavePopularity is the statement storing a keyword's popularity; prefix 0
// (not suggested) stores NULL prefix and position.
func SavePopularity(keyword string, score, prefix, position int, at time.Time) d1.Stmt {
	var p, pos any
	if prefix > 0 {
		p, pos = prefix, position
	}
	return d1.Stmt{SQL: savePopularitySQL, Args: []any{keyword, score, p, pos, d1.Time(at)}}
}
