package segments

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Sorts are the listing's orders (GET /v1/segments?sort=), each by its
// column and the id (the cursor's tie-break), on its partial index.
var Sorts = map[string]string{"opportunity": "opportunity", "trend": "trend_score", "demand": "demand"}

// segmentJSON is one segment as listed.
const segmentJSON = `json_object('id', id, 'name', name, 'keyword_count', keyword_count,
  'scores', json_object('app_count', app_count, 'total_ratings', total_ratings, 'avg_rating', avg_rating, 'demand', demand,
    'hhi', hhi, 'fragmentation', fragmentation, 'quality_gap', quality_gap, 'competitiveness', competitiveness,
    'opportunity', opportunity, 'leaders_velocity_7d', leaders_velocity_7d, 'leaders_velocity_30d', leaders_velocity_30d),
  'trend', trend, 'trend_figures', json(trend_figures), 'updated_at', updated_at, 'retired_at', retired_at)`

// SparklineDays is how many daily demand values a listed segment's
// sparkline holds (its newest snapshots, oldest first): at most this many
// snapshot rows read per segment listed, by segment_snapshots' primary key.
const SparklineDays = 30

// sparklineJSON is a listed segment's last SparklineDays daily demand
// values, oldest first. The first day kept is found by walking the
// primary key back SparklineDays entries, so the values are read in key
// order from there: no sort, whose temporary B-tree the plan tests refuse
// in a list page.
var sparklineJSON = fmt.Sprintf(`(SELECT json_group_array(demand) FROM (SELECT demand FROM segment_snapshots
  WHERE segment_id = segments.id AND day >= COALESCE((SELECT day FROM segment_snapshots WHERE segment_id = segments.id
  ORDER BY day DESC LIMIT 1 OFFSET %d), '') ORDER BY day))`, SparklineDays-1)

// listSQL is a page of live segments by col after the cursor (?1 the
// last value, ?2 the last id; ?3 the page size), each with its sparkline.
func listSQL(col string) string {
	return `SELECT json_set(` + segmentJSON + `, '$.sparkline', json(` + sparklineJSON + `)) AS segment, ` + col + ` AS k, id FROM segments
WHERE retired_at IS NULL AND (` + col + ` < ?1 OR (` + col + ` = ?1 AND id > ?2))
ORDER BY ` + col + ` DESC, id LIMIT ?3`
}

// ErrBadCursor is a cursor this listing did not hand out.
var ErrBadCursor = errors.New("bad cursor")

// Cursor is a page's end: the sort's value and the id there.
func encodeCursor(k float64, id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatFloat(k, 'g', -1, 64) + ":" + strconv.FormatInt(id, 10)))
}

func decodeCursor(c string) (float64, int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, 0, ErrBadCursor
	}
	v, idS, ok := strings.Cut(string(b), ":")
	k, err1 := strconv.ParseFloat(v, 64)
	id, err2 := strconv.ParseInt(idS, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, ErrBadCursor
	}
	return k, id, nil
}

// List reads a page of live segments by sort (a key of Sorts) after
// cursor ("" from the top): the segments and the next page's cursor (""
// at the end). A cursor it did not hand out is ErrBadCursor.
func (s Store) List(ctx context.Context, sort string, limit int, cursor string) ([]json.RawMessage, string, error) {
	col, ok := Sorts[sort]
	if !ok {
		return nil, "", fmt.Errorf("segments: unknown sort %q", sort)
	}
	k, id := 1e308, int64(0)
	if cursor != "" {
		var err error
		if k, id, err = decodeCursor(cursor); err != nil {
			return nil, "", err
		}
	}
	var rows []struct {
		Segment string  `json:"segment"`
		K       float64 `json:"k"`
		ID      int64   `json:"id"`
	}
	if err := s.DB.Query(ctx, &rows, listSQL(col), k, id, limit); err != nil {
		return nil, "", err
	}
	out := make([]json.RawMessage, len(rows))
	for i, r := range rows {
		out[i] = json.RawMessage(r.Segment)
	}
	next := ""
	if len(rows) == limit {
		last := rows[len(rows)-1]
		next = encodeCursor(last.K, last.ID)
	}
	return out, next, nil
}

// detailSQL is one segment with its keywords, apps, relations, snapshots
// and lineage, each by its key and bounded.
var detailSQL = fmt.Sprintf(`SELECT json_patch(%s, json_object(
  'apps', json(apps), 'relations', json(relations),
  'keywords', (SELECT json_group_array(keyword) FROM (SELECT keyword FROM segment_keywords WHERE segment_id = s.id ORDER BY keyword LIMIT %d)),
  'snapshots', (SELECT json_group_array(json_object('day', day, 'keyword_count', keyword_count, 'total_ratings', total_ratings,
      'demand', demand, 'opportunity', opportunity, 'leaders_velocity_7d', leaders_velocity_7d))
    FROM (SELECT * FROM segment_snapshots WHERE segment_id = s.id ORDER BY day DESC LIMIT %d)),
  'lineage', json_object(
    'parents', (SELECT json_group_array(json_object('segment_id', parent_id, 'kind', kind, 'keywords', keywords, 'at', at))
      FROM (SELECT * FROM segment_lineage WHERE child_id = s.id ORDER BY at DESC LIMIT %d)),
    'children', (SELECT json_group_array(json_object('segment_id', child_id, 'kind', kind, 'keywords', keywords, 'at', at))
      FROM (SELECT * FROM segment_lineage WHERE parent_id = s.id ORDER BY at DESC LIMIT %d))))) AS segment
FROM segments s WHERE s.id = ?1`, segmentJSON, MaxDetailKeywords, SnapshotKeep, MaxDetailLineage, MaxDetailLineage)

// Get reads one segment in full (found false for an unknown id; a
// retired one is found, with its retired_at).
func (s Store) Get(ctx context.Context, id int64) (json.RawMessage, bool, error) {
	var rows []struct {
		Segment string `json:"segment"`
	}
	if err := s.DB.Query(ctx, &rows, detailSQL, id); err != nil || len(rows) == 0 {
		return nil, false, err
	}
	return json.RawMessage(rows[0].Segment), true, nil
}
