-- A partitioned keyword's top apps as it was placed (JSON array of track
-- ids): the incremental update takes a marked keyword's old apps out of
-- its segment's and puts the new ones in, without reading the segment's
-- other keywords (worker/segments, update.go).
ALTER TABLE segment_keywords ADD COLUMN top TEXT;
