package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"storecrawl/durable/pacing"
)

// tabwriter settings for every table.
const (
	tabMinWidth = 0
	tabWidth    = 8
	tabPadding  = 2
	percent     = 100
)

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, tabMinWidth, tabWidth, tabPadding, ' ', 0)
}

// tableHeader explains the columns that are not self-evident.
var tableHeader = fmt.Sprintf(`goodput%% = requests answered OK or not-found / capacity_allowed, where capacity_allowed =
  initial burst + ∫ min(capacity_per_min/60, %d connections / mean latency) dt (the hidden limit,
  bounded by what the connections carry). refused%% = refused / sent. att/succ = item attempts /
  items completed. RA-viol = requests sent before a Retry-After allowed. recovery_s = per phase
  change, seconds until a %d s window reaches %.0f%% of the ideal rate with < %.0f%% refused (-1 never).
  vs-best (the default controller's rows) = its goodput / the best goodput of %s on the scenario;
  goal = vs-best ≥ %.2f and refused ≤ %.0f%% (or no more than that best peer refuses).`,
	pacing.MaxConnections, recoveryWindowS, percent*recoveryShare, percent*recoveryMaxRefused,
	strings.Join(peerAlgorithms, ", "), goalShare, percent*goalRefused)

// writeTable prints one row per run, then a per-controller summary.
func writeTable(w io.Writer, runs []Metrics, controllers []string) error {
	fmt.Fprintln(w, tableHeader)
	fmt.Fprintln(w)
	tw := newTable(w)
	fmt.Fprintln(tw, "scenario\tcontroller\tgoodput%\trefused%\tvs-best\tgoal\tatt/succ\titems\tRA-viol\tlockouts\tcooldowns\trecovery_s")
	judged := verdicts(runs)
	met := 0
	for i, m := range runs {
		if m.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\terror: %s\n", m.Scenario, m.Controller, m.Error)
			continue
		}
		share, goal := "-", "-"
		if v, ok := judged[i]; ok {
			share, goal = fmt.Sprintf("%.2f", v.share), "MISSED"
			if v.met {
				goal, met = "met", met+1
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f\t%s\t%s\t%.2f\t%d\t%d\t%d\t%d\t%s\n",
			m.Scenario, label(m), percent*m.GoodputRatio, percent*m.RefusedRatio, share, goal, m.AttemptsPerSuccess,
			m.ItemsCompleted, m.RetryAfterViolations, m.Lockouts, m.Cooldowns, recoveryList(m.RecoveryS))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = newTable(w)
	fmt.Fprintln(tw, "summary\tcontroller\tmean goodput%\tmean refused%\truns")
	for _, c := range controllers {
		var good, refused float64
		n := 0
		for _, m := range runs {
			if m.Controller == c && m.Error == "" {
				good, refused, n = good+m.GoodputRatio, refused+m.RefusedRatio, n+1
			}
		}
		if n == 0 {
			fmt.Fprintf(tw, "\t%s\t-\t-\t0\n", c)
			continue
		}
		fmt.Fprintf(tw, "\t%s\t%.1f\t%.1f\t%d\n", c, percent*good/float64(n), percent*refused/float64(n), n)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(judged) > 0 {
		fmt.Fprintf(w, "\ngoal met on %d of %d scenarios\n", met, len(judged))
	}
	return nil
}

// label is the controller as named, with the algorithm behind an alias.
func label(m Metrics) string {
	if m.Algorithm != "" && m.Algorithm != m.Controller {
		return m.Controller + "(" + m.Algorithm + ")"
	}
	return m.Controller
}

func recoveryList(r []int) string {
	if len(r) == 0 {
		return "-"
	}
	s := make([]string, len(r))
	for i, v := range r {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

// writeDetails prints every metric of one run, and its trace if kept.
func writeDetails(w io.Writer, m Metrics) error {
	tw := newTable(w)
	for _, kv := range [][2]string{
		{"scenario", m.Scenario},
		{"controller", label(m)},
		{"simulated_s", fmt.Sprintf("%.3f", m.SimulatedS)},
		{"ticks", strconv.Itoa(m.Ticks)},
		{"items_completed", strconv.Itoa(m.ItemsCompleted)},
		{"item_attempts", strconv.Itoa(m.ItemAttempts)},
		{"requests_sent", strconv.Itoa(m.RequestsSent)},
		{"requests_ok", strconv.Itoa(m.RequestsOK)},
		{"requests_refused", strconv.Itoa(m.RequestsRefused)},
		{"server_errors", strconv.Itoa(m.ServerErrors)},
		{"timeouts", strconv.Itoa(m.Timeouts)},
		{"capacity_allowed", fmt.Sprintf("%.1f", m.CapacityAllowed)},
		{"goodput_ratio", fmt.Sprintf("%.4f", m.GoodputRatio)},
		{"refused_ratio", fmt.Sprintf("%.4f", m.RefusedRatio)},
		{"attempts_per_success", fmt.Sprintf("%.3f", m.AttemptsPerSuccess)},
		{"retry_after_violations", strconv.Itoa(m.RetryAfterViolations)},
		{"lockouts", strconv.Itoa(m.Lockouts)},
		{"cooldowns", strconv.Itoa(m.Cooldowns)},
		{"recovery_s", recoveryList(m.RecoveryS)},
	} {
		fmt.Fprintf(tw, "%s\t%s\n", kv[0], kv[1])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if m.Trace != nil {
		fmt.Fprintln(w)
		return writeTrace(w, m.Trace)
	}
	return nil
}

// writeTrace prints the per-minute trace.
func writeTrace(w io.Writer, rows []TraceRow) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "minute\tsent\tok\trefused\tcapacity/min\tplan_items\tchunk_items\tchunk_pause_ms")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%.1f\t%d\t%d\t%d\n",
			r.Minute, r.Sent, r.OK, r.Refused, r.CapacityPerMin, r.PlanItems, r.PlanChunkItems, r.PlanChunkPauseMS)
	}
	return tw.Flush()
}

// writeJSON prints v indented.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
