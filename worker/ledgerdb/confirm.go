package ledgerdb

import (
	"context"

	"storecrawl/durable/ledger"
	"storecrawl/worker/d1"
)

// factsPresentSQL asks D1 which of n facts it has, by the primary key:
// the writers' confirmation (durable/ledger.Confirm) reads one row per
// fact D1 has and none for one it lacks.
func factsPresentSQL(n int) string {
	return `SELECT id FROM facts WHERE id IN (` + d1.Placeholders(n) + `)`
}

// FactsPresent reports which of ids D1 has, in chunks of
// ledger.ConfirmBatch (D1's bound parameters per query).
func (s D1Store) FactsPresent(ctx context.Context, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	for i := 0; i < len(ids); i += ledger.ConfirmBatch {
		chunk := ids[i:min(i+ledger.ConfirmBatch, len(ids))]
		var rows []struct {
			ID string `json:"id"`
		}
		if err := s.DB.Query(ctx, &rows, factsPresentSQL(len(chunk)), d1.Args(chunk)...); err != nil {
			return nil, err
		}
		for _, r := range rows {
			out[r.ID] = true
		}
	}
	return out, nil
}
