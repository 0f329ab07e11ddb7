package alerts

// MaxAlertsPerRuleHour is the storm bound: a rule makes at most this many
// alerts in an hour (a clock hour, UTC). What it would make past them is
// held back, and the run that first holds some back makes one summary
// alert saying how many (it counts in the hour's alerts too, past the
// bound); later ones of the same hour are counted on the rule
// (suppressed_this_hour) without another alert.
const MaxAlertsPerRuleHour = 20

// HourCount is a rule's storm count: the hour (since the Unix epoch) it
// is of, the alerts made and held back in it.
type HourCount struct {
	Hour       int64
	Sent       int
	Suppressed int
}

// Bound takes n candidate alerts of a rule in hour, given its count: how
// many to make (the first keep), whether to add the summary, and the count
// after.
func Bound(c HourCount, hour int64, n int) (keep int, summary bool, next HourCount) {
	if c.Hour != hour {
		c = HourCount{Hour: hour}
	}
	keep = min(n, max(0, MaxAlertsPerRuleHour-c.Sent))
	held := n - keep
	summary = held > 0 && c.Suppressed == 0
	c.Sent += keep
	if summary {
		c.Sent++
	}
	c.Suppressed += held
	return keep, summary, c
}
