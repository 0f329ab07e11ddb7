-- A retired writer's totals leave fact_totals.
--
-- An idle limiter client key is retired: its object's storage, lifetime
-- counters included, is deleted, after it sent its last fact, of kind
-- 'ledger.retired' (durable/ledger.KindRetired). That fact changes no
-- counter; its data.totals are what the writer had counted in all, and
-- '_facts' every fact it appended, itself included. This trigger subtracts
-- them, so the writer's totals net to zero, as its storage does, and a key
-- used again later starts from zero on both sides of reconciliation.
-- Additions commute, so facts arriving in any order give the same totals;
-- a redelivered fact inserts nothing and fires nothing, as for
-- facts_add_totals. The facts themselves stay (history) until pruned.
CREATE TRIGGER IF NOT EXISTS facts_retire_totals AFTER INSERT ON facts
WHEN NEW.kind = 'ledger.retired'
BEGIN
  INSERT INTO fact_totals (source, counter, total)
    SELECT NEW.source, key, -value FROM json_each(NEW.data, '$.totals') WHERE type = 'integer'
    ON CONFLICT (source, counter) DO UPDATE SET total = total + excluded.total;
END;
