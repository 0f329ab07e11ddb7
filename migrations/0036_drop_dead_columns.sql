-- Two app_registry columns nothing reads or writes: rating_velocity (the
-- rating sweep's single velocity, replaced by rating_velocity_7d/_30d) and
-- refresh_interval_s (the refresh schedule before tier sweeps, 0025).
-- Neither is named by an index or a trigger. SQLite rewrites the table to
-- drop a column: a one-off cost of up to one row written per app
-- (docs/catalogue.md).
ALTER TABLE app_registry DROP COLUMN rating_velocity;
ALTER TABLE app_registry DROP COLUMN refresh_interval_s;
