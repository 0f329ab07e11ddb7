-- What the store page parsers made of each app's page: its
-- markup, the sections it lacked, the parser that read it, and whether the
-- page is parsed, pending (not fetched yet: parser drift) or unparsed (it
-- came back without recognisable product data). A reparse from R2 picks the
-- rows that are not parsed or lack sections.
ALTER TABLE app_registry ADD COLUMN page_status TEXT;          -- 'parsed' | 'pending' | 'unparsed'
ALTER TABLE app_registry ADD COLUMN page_format TEXT;          -- 'legacy' | 'current'
ALTER TABLE app_registry ADD COLUMN page_missing TEXT;         -- JSON list of missing section names
ALTER TABLE app_registry ADD COLUMN page_parser_version INTEGER;
ALTER TABLE app_registry ADD COLUMN rating_share TEXT;         -- JSON [5★ .. 1★] shares
