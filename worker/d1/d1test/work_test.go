//go:build !js

package d1test

import "testing"

// TestMeasureCountsWalks: a walk counts each row stepped through, a seek
// none; the statement's writes count as changes.
func TestMeasureCountsWalks(t *testing.T) {
	_, drv := New(t)
	drv.Exec(t, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500)
INSERT INTO sweep_cursors (name, cursor) SELECT 'c' || i, i FROM n`)
	walk := drv.Measure(t, `SELECT COUNT(*) FROM sweep_cursors WHERE cursor > ?`, 100)
	if walk.Walked != 499 || walk.Rows != 1 { // 500 rows: 499 steps past the first
		t.Errorf("scan: %+v, want 499 walked, 1 row", walk)
	}
	seek := drv.Measure(t, `SELECT cursor FROM sweep_cursors WHERE name = ?1`, "c7")
	if seek.Walked != 0 || seek.Rows != 1 {
		t.Errorf("seek: %+v, want none walked, 1 row", seek)
	}
	upd := drv.Measure(t, `UPDATE sweep_cursors SET cursor = cursor + 1 WHERE name IN (?, ?)`, "c1", "c2")
	if upd.Changes != 2 || upd.Walked != 0 {
		t.Errorf("update: %+v, want 2 changes, none walked", upd)
	}
	if seek.VMSteps == 0 || walk.VMSteps <= seek.VMSteps {
		t.Errorf("vm steps: walk %d, seek %d", walk.VMSteps, seek.VMSteps)
	}
	if !drv.ReadOnly(t, `WITH c AS (SELECT 1) SELECT * FROM c`) || drv.ReadOnly(t, `WITH c AS (SELECT 'c1' AS n) UPDATE sweep_cursors SET cursor = 0 FROM c WHERE name = c.n`) {
		t.Error("read-only: a WITH ... SELECT reads, a WITH ... UPDATE writes")
	}
}
