-- A version row keeps no release notes: the app's row holds its current
-- version's notes in full (the history API gives them to that version),
-- and a year of every version's notes would outgrow D1's included
-- storage at the catalogue's size (docs/scale.md, "D1 after a year").
-- Rows written before this keep theirs until history-prune removes them.
DROP TRIGGER app_history_version;
CREATE TRIGGER app_history_version AFTER UPDATE OF version ON app_registry
WHEN NEW.version IS NOT NULL AND NEW.version <> '' AND NEW.version IS NOT OLD.version
  AND NOT (COALESCE(OLD.version, '') = '' AND OLD.values_at IS NULL AND NEW.values_at IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM app_version_history WHERE track_id = NEW.track_id))
BEGIN
  INSERT OR IGNORE INTO app_version_history (track_id, seen_at, version, release_date)
    SELECT OLD.track_id, CAST(round((julianday(COALESCE(OLD.values_at, OLD.discovered_at)) - 2440587.5) * 86400000) AS INTEGER),
      OLD.version,
      CASE WHEN OLD.current_version_release_date = strftime('%Y-%m-%dT%H:%M:%SZ', OLD.current_version_release_date) THEN CAST(strftime('%s', OLD.current_version_release_date) AS INTEGER) ELSE OLD.current_version_release_date END
    WHERE OLD.version IS NOT NULL AND OLD.version <> ''
      AND COALESCE(OLD.values_at, OLD.discovered_at) < COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at)
      AND NOT EXISTS (SELECT 1 FROM app_version_history WHERE track_id = OLD.track_id);
  INSERT OR IGNORE INTO app_version_history (track_id, seen_at, version, release_date)
    VALUES (NEW.track_id, CAST(round((julianday(COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at)) - 2440587.5) * 86400000) AS INTEGER),
      NEW.version,
      CASE WHEN NEW.current_version_release_date = strftime('%Y-%m-%dT%H:%M:%SZ', NEW.current_version_release_date) THEN CAST(strftime('%s', NEW.current_version_release_date) AS INTEGER) ELSE NEW.current_version_release_date END);
END;
