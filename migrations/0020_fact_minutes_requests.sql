-- What the upstream costs, over time: the controller's tick facts
-- carry lookup_requests, page_requests, lookup_refusals and page_refusals
-- (requests that reached each host, and its 403/429 answers); the
-- per-minute rollups keep them too, so /v1/history can show requests per
-- enriched app and each host's refusals per bucket.
ALTER TABLE fact_minutes ADD COLUMN lookup_requests INTEGER NOT NULL DEFAULT 0;
ALTER TABLE fact_minutes ADD COLUMN page_requests   INTEGER NOT NULL DEFAULT 0;
ALTER TABLE fact_minutes ADD COLUMN lookup_refusals INTEGER NOT NULL DEFAULT 0;
ALTER TABLE fact_minutes ADD COLUMN page_refusals   INTEGER NOT NULL DEFAULT 0;

-- The minutes rolled up before this migration, from the facts still kept
-- (pruned facts are gone: their minutes keep 0).
UPDATE fact_minutes SET
  lookup_requests = coalesce((SELECT SUM(coalesce(json_extract(f.counters, '$.lookup_requests'), 0)) FROM facts f
    WHERE f.source = fact_minutes.source AND f.kind = 'controller.tick' AND f.at >= fact_minutes.minute AND f.at < fact_minutes.minute + 60000), 0),
  page_requests = coalesce((SELECT SUM(coalesce(json_extract(f.counters, '$.page_requests'), 0)) FROM facts f
    WHERE f.source = fact_minutes.source AND f.kind = 'controller.tick' AND f.at >= fact_minutes.minute AND f.at < fact_minutes.minute + 60000), 0),
  lookup_refusals = coalesce((SELECT SUM(coalesce(json_extract(f.counters, '$.lookup_refusals'), 0)) FROM facts f
    WHERE f.source = fact_minutes.source AND f.kind = 'controller.tick' AND f.at >= fact_minutes.minute AND f.at < fact_minutes.minute + 60000), 0),
  page_refusals = coalesce((SELECT SUM(coalesce(json_extract(f.counters, '$.page_refusals'), 0)) FROM facts f
    WHERE f.source = fact_minutes.source AND f.kind = 'controller.tick' AND f.at >= fact_minutes.minute AND f.at < fact_minutes.minute + 60000), 0)
WHERE source LIKE 'controller:%';

-- The trigger again, keeping the new columns as well.
DROP TRIGGER IF EXISTS facts_add_minute;
CREATE TRIGGER IF NOT EXISTS facts_add_minute AFTER INSERT ON facts
WHEN NEW.kind = 'controller.tick' OR NEW.kind = 'limiter.minute'
BEGIN
  INSERT INTO fact_minutes (source, minute, ticks, dispatched, completed, failed, rate_limited, item_errors,
    capacity, capacity_at, cooldown_ats, allowed, refused, waited,
    lookup_requests, page_requests, lookup_refusals, page_refusals)
  VALUES (NEW.source, NEW.at - NEW.at % 60000,
    coalesce(json_extract(NEW.counters, '$.ticks'), 0),
    coalesce(json_extract(NEW.counters, '$.dispatched'), 0),
    coalesce(json_extract(NEW.counters, '$.completed'), 0),
    coalesce(json_extract(NEW.counters, '$.failed'), 0),
    coalesce(json_extract(NEW.counters, '$.rate_limited'), 0),
    coalesce(json_extract(NEW.counters, '$.item_errors'), 0),
    CASE WHEN json_type(NEW.data, '$.capacity_after') IN ('integer', 'real') THEN json_extract(NEW.data, '$.capacity_after') END,
    CASE WHEN json_type(NEW.data, '$.capacity_after') IN ('integer', 'real') THEN NEW.at END,
    CASE WHEN coalesce(json_extract(NEW.counters, '$.cooldowns'), 0) > 0 THEN json_array(NEW.at) ELSE '[]' END,
    coalesce(json_extract(NEW.counters, '$.allowed'), 0),
    coalesce(json_extract(NEW.counters, '$.refused'), 0),
    coalesce(json_extract(NEW.counters, '$.waited'), 0),
    coalesce(json_extract(NEW.counters, '$.lookup_requests'), 0),
    coalesce(json_extract(NEW.counters, '$.page_requests'), 0),
    coalesce(json_extract(NEW.counters, '$.lookup_refusals'), 0),
    coalesce(json_extract(NEW.counters, '$.page_refusals'), 0))
  ON CONFLICT (source, minute) DO UPDATE SET
    ticks = ticks + excluded.ticks,
    dispatched = dispatched + excluded.dispatched,
    completed = completed + excluded.completed,
    failed = failed + excluded.failed,
    rate_limited = rate_limited + excluded.rate_limited,
    item_errors = item_errors + excluded.item_errors,
    -- The latest tick's capacity wins, whatever order the facts arrive in
    -- (a NULL excluded.capacity_at compares as not-later: kept).
    capacity = CASE WHEN excluded.capacity_at >= coalesce(capacity_at, 0) THEN excluded.capacity ELSE capacity END,
    capacity_at = CASE WHEN excluded.capacity_at >= coalesce(capacity_at, 0) THEN excluded.capacity_at ELSE capacity_at END,
    cooldown_ats = CASE WHEN excluded.cooldown_ats = '[]' THEN cooldown_ats ELSE json_insert(cooldown_ats, '$[#]', NEW.at) END,
    allowed = allowed + excluded.allowed,
    refused = refused + excluded.refused,
    waited = waited + excluded.waited,
    lookup_requests = lookup_requests + excluded.lookup_requests,
    page_requests = page_requests + excluded.page_requests,
    lookup_refusals = lookup_refusals + excluded.lookup_refusals,
    page_refusals = page_refusals + excluded.page_refusals;
END;
