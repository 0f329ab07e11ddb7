package sim

import (
	"math"
	"slices"
)

// familyRow is the default's standing on one family: its base and its
// variants; the JSON keys are -variants -json's.
type familyRow struct {
	Family   string   `json:"family"`
	Hold     bool     `json:"hold"` // a refusal costs a block or Retry-After hold
	Base     standing `json:"base"` // the shipped scenario at 1 request per item
	Variants int      `json:"variants"`
	Errors   int      `json:"errors"` // variants where the default or every peer failed

	Mean         float64 `json:"vs_best_mean"`
	Worst        float64 `json:"vs_best_worst"`
	WorstVariant string  `json:"worst_variant"`
	// At the product's shape (the variants drawn at 1 request per item).
	AtProduct      int     `json:"variants_at_1"`
	MeanAtProduct  float64 `json:"vs_best_mean_at_1"`
	WorstAtProduct float64 `json:"vs_best_worst_at_1"`
	// WorstVariantAtProduct names the worst variant at 1 request per item.
	WorstVariantAtProduct string  `json:"worst_variant_at_1"`
	OracleMean            float64 `json:"vs_oracle_mean"`
	OracleWorst           float64 `json:"vs_oracle_worst"`
	RefusedMean           float64 `json:"refused_mean"`
	RefusedMax            float64 `json:"refused_max"`
	// RefusedMeanAtProduct is the refused share over variants at 1 request per item.
	RefusedMeanAtProduct float64 `json:"refused_mean_at_1"`

	Goals []goalCheck `json:"goals"`
	Met   bool        `json:"goals_met"`
	// WorstScenario is the worst variant itself: save it and run it with
	// -scenario FILE to see why.
	WorstScenario *Scenario `json:"worst_scenario"`
	// List is every variant, worst first; only with -list (listVariants),
	// so the default JSON stays as it was.
	List []variantLine `json:"variant_list,omitempty"`
}

// familyRows folds the job results into one row per family.
func familyRows(families []*Scenario, jobs []variantJob, res []standing) []familyRow {
	rows := make([]familyRow, len(families))
	for f, sc := range families {
		rows[f] = familyRow{Family: sc.Name, Hold: holdFamily(sc), Worst: math.Inf(1), WorstAtProduct: math.Inf(1), OracleWorst: math.Inf(1)}
	}
	for j, job := range jobs {
		row, st := &rows[job.family], res[j]
		if job.variant < 0 {
			row.Base = st
			continue
		}
		row.Variants++
		if !st.ok {
			row.Errors++
			continue
		}
		row.Mean += st.VsBest
		row.OracleMean += st.VsOracle
		row.RefusedMean += st.Refused
		row.RefusedMax = max(row.RefusedMax, st.Refused)
		row.OracleWorst = min(row.OracleWorst, st.VsOracle)
		if st.VsBest < row.Worst {
			row.Worst, row.WorstVariant, row.WorstScenario = st.VsBest, job.sc.Name, job.sc
		}
		if st.Shape == productShape {
			row.AtProduct++
			row.MeanAtProduct += st.VsBest
			row.RefusedMeanAtProduct += st.Refused
			if st.VsBest < row.WorstAtProduct {
				row.WorstAtProduct, row.WorstVariantAtProduct = st.VsBest, job.sc.Name
			}
		}
	}
	for f := range rows {
		r := &rows[f]
		if n := float64(r.Variants - r.Errors); n > 0 {
			r.Mean, r.OracleMean, r.RefusedMean = r.Mean/n, r.OracleMean/n, r.RefusedMean/n
		} else {
			r.Worst, r.OracleWorst = 0, 0
		}
		if r.AtProduct > 0 {
			r.MeanAtProduct /= float64(r.AtProduct)
			r.RefusedMeanAtProduct /= float64(r.AtProduct)
		} else {
			r.WorstAtProduct = 0
		}
		r.Goals = familyGoals(r)
		r.Met = !slices.ContainsFunc(r.Goals, func(g goalCheck) bool { return !g.Met })
	}
	return rows
}

// variantJobs lists each family's base and n variants under seed.
func variantJobs(families []*Scenario, n int, seed uint64) ([]variantJob, error) {
	var jobs []variantJob
	for f, sc := range families {
		jobs = append(jobs, variantJob{family: f, variant: -1, sc: sc.withShape(productShape)})
		for i := range n {
			v, err := newVariant(sc, seed, i)
			if err != nil {
				return nil, err
			}
			jobs = append(jobs, variantJob{family: f, variant: i, sc: v})
		}
	}
	return jobs, nil
}
