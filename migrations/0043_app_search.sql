-- Search (GET /v1/search): apps by the start of their name, developer or
-- subtitle, through one WITHOUT ROWID table of lowercased terms whose
-- primary key is the search's range (docs/explorer.md#search). Triggers keep
-- it: an app's insert writes its (up to) three terms, a change of one of the
-- three writes that term's two rows, and any other write (a refresh that
-- sets the same name again) writes nothing, where an index on the columns
-- would be rewritten on every save that names them.
CREATE TABLE app_search_terms (
  term     TEXT NOT NULL,     -- lower(trim(value)), its first 100 characters
  track_id INTEGER NOT NULL,
  field    INTEGER NOT NULL,  -- 1 name, 2 developer, 3 subtitle
  PRIMARY KEY (term, track_id, field)
) WITHOUT ROWID;

INSERT OR IGNORE INTO app_search_terms (term, track_id, field)
  SELECT substr(lower(trim(name)), 1, 100), track_id, 1 FROM app_registry WHERE trim(COALESCE(name, '')) <> ''
  UNION ALL SELECT substr(lower(trim(developer_name)), 1, 100), track_id, 2 FROM app_registry WHERE trim(COALESCE(developer_name, '')) <> ''
  UNION ALL SELECT substr(lower(trim(subtitle)), 1, 100), track_id, 3 FROM app_registry WHERE trim(COALESCE(subtitle, '')) <> '';

CREATE TRIGGER app_search_insert AFTER INSERT ON app_registry
BEGIN
  INSERT OR IGNORE INTO app_search_terms (term, track_id, field)
    SELECT substr(lower(trim(NEW.name)), 1, 100), NEW.track_id, 1 WHERE trim(COALESCE(NEW.name, '')) <> ''
    UNION ALL SELECT substr(lower(trim(NEW.developer_name)), 1, 100), NEW.track_id, 2 WHERE trim(COALESCE(NEW.developer_name, '')) <> ''
    UNION ALL SELECT substr(lower(trim(NEW.subtitle)), 1, 100), NEW.track_id, 3 WHERE trim(COALESCE(NEW.subtitle, '')) <> '';
END;

CREATE TRIGGER app_search_name AFTER UPDATE OF name ON app_registry
WHEN substr(lower(trim(COALESCE(OLD.name, ''))), 1, 100) IS NOT substr(lower(trim(COALESCE(NEW.name, ''))), 1, 100)
BEGIN
  DELETE FROM app_search_terms WHERE term = substr(lower(trim(OLD.name)), 1, 100) AND track_id = OLD.track_id AND field = 1;
  INSERT OR IGNORE INTO app_search_terms (term, track_id, field)
    SELECT substr(lower(trim(NEW.name)), 1, 100), NEW.track_id, 1 WHERE trim(COALESCE(NEW.name, '')) <> '';
END;

CREATE TRIGGER app_search_developer AFTER UPDATE OF developer_name ON app_registry
WHEN substr(lower(trim(COALESCE(OLD.developer_name, ''))), 1, 100) IS NOT substr(lower(trim(COALESCE(NEW.developer_name, ''))), 1, 100)
BEGIN
  DELETE FROM app_search_terms WHERE term = substr(lower(trim(OLD.developer_name)), 1, 100) AND track_id = OLD.track_id AND field = 2;
  INSERT OR IGNORE INTO app_search_terms (term, track_id, field)
    SELECT substr(lower(trim(NEW.developer_name)), 1, 100), NEW.track_id, 2 WHERE trim(COALESCE(NEW.developer_name, '')) <> '';
END;

CREATE TRIGGER app_search_subtitle AFTER UPDATE OF subtitle ON app_registry
WHEN substr(lower(trim(COALESCE(OLD.subtitle, ''))), 1, 100) IS NOT substr(lower(trim(COALESCE(NEW.subtitle, ''))), 1, 100)
BEGIN
  DELETE FROM app_search_terms WHERE term = substr(lower(trim(OLD.subtitle)), 1, 100) AND track_id = OLD.track_id AND field = 3;
  INSERT OR IGNORE INTO app_search_terms (term, track_id, field)
    SELECT substr(lower(trim(NEW.subtitle)), 1, 100), NEW.track_id, 3 WHERE trim(COALESCE(NEW.subtitle, '')) <> '';
END;

CREATE TRIGGER app_search_delete AFTER DELETE ON app_registry
BEGIN
  DELETE FROM app_search_terms WHERE track_id = OLD.track_id AND field IN (1, 2, 3)
    AND term IN (substr(lower(trim(OLD.name)), 1, 100), substr(lower(trim(OLD.developer_name)), 1, 100), substr(lower(trim(OLD.subtitle)), 1, 100));
END;
