-- Competitiveness: how entrenched an enriched app is (0-100: social proof, quality,
-- maintenance), written by the app-enriched queue stage next to demand_score.
ALTER TABLE app_registry ADD COLUMN competitiveness_score REAL;
