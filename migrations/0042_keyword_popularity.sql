-- Keyword popularity (docs/keywords.md): how early Apple's search hints
-- suggest the term, 0–100, computed for the keywords worth it (the top
-- opportunity clusters') by the keyword-popularity task and kept here with
-- when it was computed. No index: the task finds its keywords through
-- idx_opportunity_scores_score and the keyword's UNIQUE index.
ALTER TABLE crawl_keywords ADD COLUMN popularity INTEGER;          -- 0–100; NULL: never computed
ALTER TABLE crawl_keywords ADD COLUMN popularity_prefix INTEGER;   -- characters typed when first suggested; NULL: not suggested
ALTER TABLE crawl_keywords ADD COLUMN popularity_position INTEGER; -- its 0-based place among those hints
ALTER TABLE crawl_keywords ADD COLUMN popularity_at TEXT;          -- when computed (d1.Layout)
