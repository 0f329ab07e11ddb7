package sim

import "storecrawl/durable/pacing"

// The pacing goal: on every scenario the default controller
// reaches at least goalShare of the goodput of the best peer (the best of
// peerAlgorithms), refusing at most goalRefused of what it sends, or no
// more than that best peer refuses.
const (
	// goalShare: within 10% of the best a known controller achieves.
	goalShare = 0.9
	// goalRefused: refusals a small share of the traffic, so an upstream
	// that counts them against the client barely notices.
	goalRefused = 0.02
)

// peerAlgorithms are the yardsticks the default is measured against: the
// oracle (paces at the hidden capacity) and the two published controllers.
var peerAlgorithms = []string{"oracle", "aimd", "aws-adaptive"}

// verdict is the default controller's standing on one scenario.
type verdict struct {
	best  Metrics // the best peer by goodput
	share float64 // default goodput / best peer goodput
	met   bool    // the goal holds
}

// bestPeer is the peer with the highest goodput among runs (one
// scenario's), and whether there was one.
func bestPeer(runs []Metrics) (Metrics, bool) {
	var best Metrics
	found := false
	for _, m := range runs {
		if m.Error != "" || !isPeer(m.Algorithm) {
			continue
		}
		if !found || m.GoodputRatio > best.GoodputRatio {
			best, found = m, true
		}
	}
	return best, found
}

func isPeer(algorithm string) bool {
	for _, p := range peerAlgorithms {
		if p == algorithm {
			return true
		}
	}
	return false
}

// judge measures m (the default's run) against the best peer.
func judge(m, best Metrics) verdict {
	v := verdict{best: best}
	if best.GoodputRatio > 0 {
		v.share = m.GoodputRatio / best.GoodputRatio
	} else {
		v.share = 1 // nobody got anything through: nothing to fall short of
	}
	v.met = v.share >= goalShare && (m.RefusedRatio <= goalRefused || m.RefusedRatio <= best.RefusedRatio)
	return v
}

// verdicts judges every default-controller run against its scenario's best
// peer; runs without a peer in the same scenario are left out.
func verdicts(runs []Metrics) map[int]verdict {
	out := map[int]verdict{}
	for i, m := range runs {
		if m.Error != "" || m.Algorithm != pacing.DefaultName {
			continue
		}
		var same []Metrics
		for _, o := range runs {
			if o.Scenario == m.Scenario {
				same = append(same, o)
			}
		}
		if best, ok := bestPeer(same); ok {
			out[i] = judge(m, best)
		}
	}
	return out
}
