package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"storecrawl/worker/alerts"
	"storecrawl/worker/logx"
)

// AlertService keeps watches and alert rules and lists alerts
// (worker/alerts.Service).
type AlertService interface {
	Watches(ctx context.Context) ([]alerts.Watch, error)
	AddWatch(ctx context.Context, in alerts.WatchInput, now time.Time) (alerts.Watch, error)
	DeleteWatch(ctx context.Context, id int64) error
	Rules(ctx context.Context, now time.Time) ([]alerts.Rule, error)
	AddRule(ctx context.Context, in alerts.RuleInput, now time.Time) (alerts.Rule, error)
	Alerts(ctx context.Context, cursor int64, limit int) ([]alerts.Alert, int64, error)
}

// maxAlertBody bounds the body of a watch or a rule.
const maxAlertBody = 4 << 10

// mountAlerts adds the watchlist and alert routes.
func (s *Server) mountAlerts(mux *routeMux) {
	mux.HandleFunc("GET /v1/watches", s.alertsOr(s.listWatches))
	mux.HandleFunc("POST /v1/watches", s.requireAdmin(s.alertsOr(s.addWatch)))
	mux.HandleFunc("DELETE /v1/watches/{id}", s.requireAdmin(s.alertsOr(s.deleteWatch)))
	mux.HandleFunc("GET /v1/alert-rules", s.alertsOr(s.listRules))
	mux.HandleFunc("POST /v1/alert-rules", s.requireAdmin(s.alertsOr(s.addRule)))
	mux.HandleFunc("GET /v1/alerts", s.alertsOr(s.listAlerts))
}

// alertsOr answers 503 when no alert service is bound.
func (s *Server) alertsOr(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.Alerts == nil {
			writeError(w, http.StatusServiceUnavailable, "", "alerts are not available")
			return
		}
		next(w, r)
	}
}

// alertError answers a service error: bad input 400 and a conflict 409,
// each naming its field; an unknown id 404; anything else a logged 500.
func alertError(w http.ResponseWriter, what string, err error) {
	var conflict *alerts.ErrConflict
	var fe *alerts.FieldError
	switch {
	case errors.As(err, &conflict):
		writeError(w, http.StatusConflict, conflict.Field, conflict.Msg)
	case errors.As(err, &fe):
		writeError(w, http.StatusBadRequest, fe.Field, fe.Msg)
	case errors.Is(err, alerts.ErrNotFound):
		writeError(w, http.StatusNotFound, "id", "no such id")
	default:
		logx.Err("alerts."+what+"_failed", err, nil)
		writeError(w, http.StatusInternalServerError, "", what+" failed")
	}
}

// listWatches serves GET /v1/watches: every watch (a bounded list, one
// page), as JSON or exported (?format=csv|ndjson).
func (s *Server) listWatches(w http.ResponseWriter, r *http.Request) {
	if format, ok := exportFormat(w, r); !ok {
		return
	} else if format != formatJSON {
		exportPages(w, r, "watches", format, onePage(s.Alerts.Watches), "", alerts.MaxWatches)
		return
	}
	ws, err := s.Alerts.Watches(r.Context())
	if err != nil {
		alertError(w, "read", err)
		return
	}
	if ws == nil {
		ws = []alerts.Watch{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": ws})
}

func (s *Server) addWatch(w http.ResponseWriter, r *http.Request) {
	b, ok := readBody(w, r, maxAlertBody)
	if !ok {
		return
	}
	in, fe := alerts.DecodeWatch(b)
	if fe != nil {
		writeError(w, http.StatusBadRequest, fe.Field, fe.Msg)
		return
	}
	watch, err := s.Alerts.AddWatch(r.Context(), in, time.Now())
	if err != nil {
		alertError(w, "write", err)
		return
	}
	writeJSON(w, http.StatusCreated, watch)
}

func (s *Server) deleteWatch(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		writeError(w, http.StatusBadRequest, "id", "id must be a watch's id (a positive integer)")
		return
	}
	if err := s.Alerts.DeleteWatch(r.Context(), id); err != nil {
		alertError(w, "write", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted": id})
}

// listRules serves GET /v1/alert-rules: every rule (a bounded list, one
// page), as JSON or exported (?format=csv|ndjson).
func (s *Server) listRules(w http.ResponseWriter, r *http.Request) {
	if format, ok := exportFormat(w, r); !ok {
		return
	} else if format != formatJSON {
		rules := func(ctx context.Context) ([]alerts.Rule, error) { return s.Alerts.Rules(ctx, time.Now()) }
		exportPages(w, r, "alert-rules", format, onePage(rules), "", alerts.MaxRules)
		return
	}
	rs, err := s.Alerts.Rules(r.Context(), time.Now())
	if err != nil {
		alertError(w, "read", err)
		return
	}
	if rs == nil {
		rs = []alerts.Rule{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": rs, "max_alerts_per_rule_hour": alerts.MaxAlertsPerRuleHour,
		"rule_types": alerts.Offers()})
}

func (s *Server) addRule(w http.ResponseWriter, r *http.Request) {
	b, ok := readBody(w, r, maxAlertBody)
	if !ok {
		return
	}
	in, fe := alerts.DecodeRule(b)
	if fe != nil {
		writeError(w, http.StatusBadRequest, fe.Field, fe.Msg)
		return
	}
	rule, err := s.Alerts.AddRule(r.Context(), in, time.Now())
	if err != nil {
		alertError(w, "write", err)
		return
	}
	writeJSON(w, http.StatusCreated, rule)
}

// listAlerts serves GET /v1/alerts?cursor=&limit=: alerts newest first,
// a page as JSON or exported from the cursor on (?format=csv|ndjson).
func (s *Server) listAlerts(w http.ResponseWriter, r *http.Request) {
	format, ok := exportFormat(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	limit := alerts.DefaultAlertsPage
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > alerts.MaxAlertsPage {
			writeError(w, http.StatusBadRequest, "limit", fmt.Sprintf("limit must be an integer in [1, %d]", alerts.MaxAlertsPage))
			return
		}
		limit = n
	}
	cursor := q.Get("cursor")
	first, ok := alertCursor(cursor)
	if !ok {
		writeError(w, http.StatusBadRequest, "cursor", "cursor must be the next_cursor of a page (a positive integer)")
		return
	}
	read := func(ctx context.Context, cursor string, limit int) ([]json.RawMessage, string, error) {
		c, _ := alertCursor(cursor)
		items, next, err := s.Alerts.Alerts(ctx, c, limit)
		if err != nil {
			return nil, "", err
		}
		out, _, err := rawItems(items)
		if next > 0 {
			return out, strconv.FormatInt(next, 10), err
		}
		return out, "", err
	}
	if format != formatJSON {
		if q.Get("limit") == "" {
			limit = alerts.MaxAlertsPage
		}
		exportPages(w, r, "alerts", format, read, cursor, limit)
		return
	}
	items, next, err := s.Alerts.Alerts(r.Context(), first, limit)
	if err != nil {
		alertError(w, "read", err)
		return
	}
	if items == nil {
		items = []alerts.Alert{}
	}
	var nextCursor any
	if next > 0 {
		nextCursor = next
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items, "next_cursor": nextCursor})
}

// alertCursor reads an alerts cursor: the id the next page starts below
// (0 for the first page).
func alertCursor(v string) (int64, bool) {
	if v == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil && n > 0
}
