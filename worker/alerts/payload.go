package alerts

import (
	"fmt"
	"strconv"
)

// Payload is an alert as a generic webhook receives it (the body of the
// POST, signed), and as GET /v1/alerts shows it. A Slack webhook receives
// {"text": Text}.
type Payload struct {
	ID        int64          `json:"id"`
	RuleID    int64          `json:"rule_id"`
	Type      string         `json:"type"`
	Watch     *WatchRef      `json:"watch,omitempty"`
	Text      string         `json:"text"`
	CreatedAt string         `json:"created_at"`
	Data      map[string]any `json:"data"`
}

// WatchRef names the watch an alert is of.
type WatchRef struct {
	ID     int64  `json:"id"`
	Kind   string `json:"kind"`
	Target string `json:"target"`
}

// appLabel is an app as a text names it: its name and id, or its id.
func appLabel(names map[int64]string, id int64) string {
	if n := names[id]; n != "" {
		return fmt.Sprintf("%s (%d)", n, id)
	}
	return "app " + strconv.FormatInt(id, 10)
}

// Text is an alert's one line: what changed, for a person.
func Text(typ string, data map[string]any, names map[int64]string) string {
	id, _ := data["track_id"].(int64)
	app := appLabel(names, id)
	switch typ {
	case RankChange:
		return fmt.Sprintf("%s moved from #%v to #%v for %q", app, data["from"], data["to"], data["keyword"])
	case NewCompetitor:
		return fmt.Sprintf("%s entered the top %d for %q at #%v", app, NewCompetitorTop, data["keyword"], data["rank"])
	case NewVersion:
		return fmt.Sprintf("%s released version %v (was %v)", app, data["to"], data["from"])
	case PriceChange:
		return fmt.Sprintf("%s changed its price from %v to %v %v", app, data["from"], data["to"], data["currency"])
	case RatingDrop:
		return fmt.Sprintf("%s's rating dropped from %.2f to %.2f (%v ratings)", app, data["from"], data["to"], data["rating_count"])
	case ReviewSurge:
		return fmt.Sprintf("%s got %v reviews of at most %v stars in %vh", app, data["reviews"], data["max_stars"], data["window_hours"])
	case Summary:
		return fmt.Sprintf("rule %v: %v more alerts this hour held back (at most %d a rule an hour)", data["rule_id"], data["suppressed"], MaxAlertsPerRuleHour)
	}
	return typ
}
