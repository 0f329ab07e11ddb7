// Package alerts is watchlists and alerts: a user watches apps, keywords
// and segments, sets rules with thresholds (a rank moving N places, a
// rating drop, a new version, a price change, a new app in a keyword's top
// 10, a review surge, a heating segment), and gets an alert on a Slack
// incoming webhook or a signed generic webhook.
//
// Alerts are made from the changes the crawl already writes: the history
// rows (app_version_history, app_price_history, app_snapshots) of watched
// apps since a cursor, by their primary keys; a watched keyword's rankings
// only when the crawl searched it again; reviews only when they were
// fetched again. Nothing scans the catalogue. The decisions (what a change
// means for a rule, the storm bound, the signature, which webhook URLs are
// allowed) are pure functions here; store.go is their D1 side and
// deliver.go the delivery through the queue.
package alerts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Watch kinds.
const (
	KindApp     = "app"
	KindKeyword = "keyword"
	KindSegment = "segment"
)

// Kinds are the watch kinds, in the order the API names them.
var Kinds = []string{KindApp, KindKeyword, KindSegment}

// Rule types.
const (
	RankChange     = "rank_change"
	RatingDrop     = "rating_drop"
	NewVersion     = "new_version"
	PriceChange    = "price_change"
	NewCompetitor  = "new_competitor"
	ReviewSurge    = "review_surge"
	SegmentHeating = "segment_heating"
	// Summary is the alert the storm bound makes of what it held back.
	Summary = "summary"
)

// RuleKinds is the watch kind each rule type applies to.
var RuleKinds = map[string]string{
	RankChange: KindKeyword, NewCompetitor: KindKeyword,
	RatingDrop: KindApp, NewVersion: KindApp, PriceChange: KindApp, ReviewSurge: KindApp,
	SegmentHeating: KindSegment,
}

// RuleTypes are the rule types, in the order the API names them.
var RuleTypes = []string{RankChange, RatingDrop, NewVersion, PriceChange, NewCompetitor, ReviewSurge, SegmentHeating}

// Channels: a Slack-compatible incoming webhook ({"text": ...}) or a
// generic webhook receiving the alert's JSON.
const (
	ChannelSlack   = "slack"
	ChannelWebhook = "webhook"
)

// Bounds.
const (
	// MaxWatches bounds the watches (an evaluation reads them all, and
	// its history reads are at most a seek a watched app each).
	MaxWatches = 200
	// MaxRules bounds the rules.
	MaxRules = 100
	// MaxKeywordLen and MaxSegmentLen bound a watch's target.
	MaxKeywordLen = 100
	MaxSegmentLen = 100
	// NewCompetitorTop is the top a new competitor enters.
	NewCompetitorTop = 10
	// TrackedRanks is how deep a keyword watch keeps its ranks: a move
	// within them is a rank_change.
	TrackedRanks = 50
	// MaxPlaces bounds rank_change's places.
	MaxPlaces = TrackedRanks
	// MaxSurgeWindowHours bounds review_surge's window (a week).
	MaxSurgeWindowHours = 168
	// DefaultSurgeWindowHours is review_surge's window when not given.
	DefaultSurgeWindowHours = 24
	// MaxSurgeReviews bounds review_surge's reviews.
	MaxSurgeReviews = 10_000
	// DefaultHeatingRise is segment_heating's rise when not given.
	DefaultHeatingRise = 10
)

// FieldError is bad input, naming its field: the API answers it as a 400.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// ErrNotFound: no watch or rule with that id.
var ErrNotFound = errors.New("not found")

// ErrConflict is a watch that exists already, or a list at its bound.
type ErrConflict struct{ FieldError }

// WatchInput is the body of POST /v1/watches.
type WatchInput struct {
	Kind   string `json:"kind"`
	Target string `json:"target"`
}

var segmentID = regexp.MustCompile(`^[a-z0-9][a-z0-9_:.-]*$`)

// DecodeWatch reads and checks a watch: kind one of Kinds; an app's target
// its track id (digits), a keyword's 1–MaxKeywordLen characters (kept
// lowercase and trimmed, as the crawl keeps keywords), a segment's id.
func DecodeWatch(body []byte) (WatchInput, *FieldError) {
	var in WatchInput
	if fe := decodeStrict(body, &in); fe != nil {
		return in, fe
	}
	if !slices.Contains(Kinds, in.Kind) {
		return in, fieldErr("kind", "kind must be one of %v", Kinds)
	}
	in.Target = strings.TrimSpace(in.Target)
	switch in.Kind {
	case KindApp:
		if id, err := strconv.ParseInt(in.Target, 10, 64); err != nil || id <= 0 || strconv.FormatInt(id, 10) != in.Target {
			return in, fieldErr("target", "an app's target is its track id: a positive integer, as a string")
		}
	case KindKeyword:
		in.Target = strings.Join(strings.Fields(strings.ToLower(in.Target)), " ")
		if in.Target == "" || len([]rune(in.Target)) > MaxKeywordLen {
			return in, fieldErr("target", "a keyword is 1–%d characters", MaxKeywordLen)
		}
	case KindSegment:
		if len(in.Target) > MaxSegmentLen || !segmentID.MatchString(in.Target) {
			return in, fieldErr("target", "a segment is its id: 1–%d characters of a-z, 0-9, _ : . -", MaxSegmentLen)
		}
	}
	return in, nil
}

// RuleInput is the body of POST /v1/alert-rules: the type, its
// thresholds (each type takes its own: Params), the watch it is limited
// to (none: every watch of the type's kind), and where alerts go.
type RuleInput struct {
	Type    string `json:"type"`
	WatchID *int64 `json:"watch_id,omitempty"`
	Channel string `json:"channel"`
	URL     string `json:"url"`
	Params
}

// Params are a rule's thresholds; each type takes only its own fields.
type Params struct {
	// Places (rank_change): how many places a watched keyword's app moves.
	Places int `json:"places,omitempty"`
	// Drop (rating_drop): how many stars the average falls between two
	// observations.
	Drop float64 `json:"drop,omitempty"`
	// Reviews in WindowHours (review_surge), counting those of at most
	// MaxStars stars (default 5: all).
	Reviews     int `json:"reviews,omitempty"`
	WindowHours int `json:"window_hours,omitempty"`
	MaxStars    int `json:"max_stars,omitempty"`
	// Rise (segment_heating): the points the segment's heat rises.
	Rise float64 `json:"rise,omitempty"`
}

// typeFields are the threshold fields each type takes.
var typeFields = map[string][]string{
	RankChange: {"places"}, RatingDrop: {"drop"}, NewVersion: {}, PriceChange: {}, NewCompetitor: {},
	ReviewSurge: {"reviews", "window_hours", "max_stars"}, SegmentHeating: {"rise"},
}

// Offer is a rule type as a form offers it: the watch kind it applies to
// and its threshold fields.
type Offer struct {
	Type   string   `json:"type"`
	Kind   string   `json:"kind"`
	Fields []string `json:"fields"`
}

// Offers are the rule types in the order the API names them, read from
// the same tables DecodeRule checks against.
func Offers() []Offer {
	out := make([]Offer, 0, len(RuleTypes))
	for _, t := range RuleTypes {
		out = append(out, Offer{Type: t, Kind: RuleKinds[t], Fields: slices.Clone(typeFields[t])})
	}
	return out
}

// DecodeRule reads and checks a rule, except the URL's address
// (CheckWebhookURL) and whether its watch exists (the store's).
func DecodeRule(body []byte) (RuleInput, *FieldError) {
	var in RuleInput
	if fe := decodeStrict(body, &in); fe != nil {
		return in, fe
	}
	if !slices.Contains(RuleTypes, in.Type) {
		return in, fieldErr("type", "type must be one of %v", RuleTypes)
	}
	// A field of another type is refused by name: a threshold that would
	// be ignored is a mistake.
	var raw map[string]json.RawMessage
	json.Unmarshal(body, &raw)
	for _, f := range []string{"places", "drop", "reviews", "window_hours", "max_stars", "rise"} {
		if _, ok := raw[f]; ok && !slices.Contains(typeFields[in.Type], f) {
			return in, fieldErr(f, "%s takes no %s (it takes %v)", in.Type, f, typeFields[in.Type])
		}
	}
	if in.WatchID != nil && *in.WatchID <= 0 {
		return in, fieldErr("watch_id", "watch_id must be a watch's id")
	}
	if in.Channel != ChannelSlack && in.Channel != ChannelWebhook {
		return in, fieldErr("channel", "channel must be %q or %q", ChannelSlack, ChannelWebhook)
	}
	if in.URL == "" {
		return in, fieldErr("url", "url is required: the webhook alerts are posted to")
	}
	p := &in.Params
	switch in.Type {
	case RankChange:
		if p.Places < 1 || p.Places > MaxPlaces {
			return in, fieldErr("places", "places must be an integer in [1, %d]", MaxPlaces)
		}
	case RatingDrop:
		if !(p.Drop >= 0.01 && p.Drop <= 4) {
			return in, fieldErr("drop", "drop must be stars in [0.01, 4]")
		}
	case ReviewSurge:
		if p.Reviews < 1 || p.Reviews > MaxSurgeReviews {
			return in, fieldErr("reviews", "reviews must be an integer in [1, %d]", MaxSurgeReviews)
		}
		if _, set := raw["window_hours"]; set && (p.WindowHours < 1 || p.WindowHours > MaxSurgeWindowHours) {
			return in, fieldErr("window_hours", "window_hours must be an integer in [1, %d]", MaxSurgeWindowHours)
		}
		if _, set := raw["max_stars"]; set && (p.MaxStars < 1 || p.MaxStars > 5) {
			return in, fieldErr("max_stars", "max_stars must be an integer in [1, 5]")
		}
		p.WindowHours = cmpOr(p.WindowHours, DefaultSurgeWindowHours)
		p.MaxStars = cmpOr(p.MaxStars, 5)
	case SegmentHeating:
		if _, set := raw["rise"]; set && !(p.Rise > 0 && p.Rise <= 100) {
			return in, fieldErr("rise", "rise must be points in (0, 100]")
		}
		if p.Rise == 0 {
			p.Rise = DefaultHeatingRise
		}
	}
	return in, nil
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// unknownField is how encoding/json names an unknown field.
var unknownField = regexp.MustCompile(`unknown field "([^"]+)"`)

// decodeStrict decodes one JSON object, unknown fields refused, naming the
// field a bad value or an unknown field is in.
func decodeStrict(body []byte, dst any) *FieldError {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil && dec.More() {
		err = errors.New("one JSON object")
	}
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		// An embedded struct's field is named by its path (Params.places).
		f := te.Field[strings.LastIndex(te.Field, ".")+1:]
		return fieldErr(f, "%s must be a %s", f, te.Type.String())
	}
	if m := unknownField.FindStringSubmatch(err.Error()); m != nil {
		return fieldErr(m[1], "unknown field %s", m[1])
	}
	return fieldErr("body", "body must be one JSON object")
}

// Rank is an app's rank in a keyword's results.
type Rank struct {
	TrackID int64
	Rank    int
}

// Move is a rank_change: an app kept in a keyword's tracked ranks moved.
type Move struct {
	TrackID  int64
	From, To int
}

// RankMoves are the apps ranked in both prev and cur (each within
// TrackedRanks) that moved at least places, best current rank first.
func RankMoves(prev, cur []Rank, places int) []Move {
	before := map[int64]int{}
	for _, r := range prev {
		before[r.TrackID] = r.Rank
	}
	var out []Move
	for _, r := range cur {
		if from, ok := before[r.TrackID]; ok && abs(from-r.Rank) >= places {
			out = append(out, Move{TrackID: r.TrackID, From: from, To: r.Rank})
		}
	}
	slices.SortFunc(out, func(a, b Move) int { return a.To - b.To })
	return out
}

// Entrants are the apps in cur's top NewCompetitorTop that were not in
// prev's, best first: a new competitor each.
func Entrants(prev, cur []Rank) []Rank {
	top := map[int64]bool{}
	for _, r := range prev {
		if r.Rank <= NewCompetitorTop {
			top[r.TrackID] = true
		}
	}
	var out []Rank
	for _, r := range cur {
		if r.Rank <= NewCompetitorTop && !top[r.TrackID] {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Rank) int { return a.Rank - b.Rank })
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// Change is one history row of a watched app with the row before it
// (From; HasFrom false when the row is the app's first).
type Change struct {
	TrackID int64
	At      int64 // ms since the Unix epoch
	HasFrom bool
	// Version, price (with currency) or rating average (with count), by table.
	From, To       string
	FromNum, ToNum float64
	Count          int64
	Currency       string
}

// VersionChanged: a new version row whose version differs from the one
// before (an app's first row is the version it was first seen with).
func VersionChanged(c Change) bool { return c.HasFrom && c.To != c.From }

// PriceChanged: a price row different from the one before.
func PriceChanged(c Change) bool { return c.HasFrom && c.ToNum != c.FromNum }

// RatingDropped: the average fell at least drop stars from the
// observation before (rounded to a hundredth, as stores show averages).
func RatingDropped(c Change, drop float64) bool {
	return c.HasFrom && math.Round((c.FromNum-c.ToNum)*100) >= math.Round(drop*100)
}

// Surged: at least p.Reviews reviews of at most p.MaxStars stars in the window.
func Surged(n int, p Params) bool { return n >= p.Reviews }
