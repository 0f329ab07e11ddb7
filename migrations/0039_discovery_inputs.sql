-- Discovery inputs: every App Store genre is scanned (appstore.AppGenres
-- and GameGenres), and a developer's other apps are looked up once.

-- The genres 0003 left out: the newer top-level categories and the Games
-- subgenres, whose charts list games the Games chart's 200 ranks do not
-- reach. Tiers by value: the larger game subgenres and the two newer
-- categories medium (every 14 days), the rest low (every 30).
INSERT OR IGNORE INTO category_scans (genre_id, name, tier) VALUES
  (6026, 'Developer Tools', 'medium'), (6027, 'Graphics & Design', 'medium'),
  (7001, 'Action', 'medium'), (7003, 'Casual', 'medium'), (7006, 'Casino', 'medium'),
  (7012, 'Puzzle', 'medium'), (7014, 'Role Playing', 'medium'), (7015, 'Simulation', 'medium'),
  (7017, 'Strategy', 'medium'),
  (6021, 'Magazines & Newspapers', 'low'), (6022, 'Catalogs', 'low'), (6025, 'Stickers', 'low'),
  (7002, 'Adventure', 'low'), (7004, 'Board', 'low'), (7005, 'Card', 'low'), (7007, 'Dice', 'low'),
  (7008, 'Educational', 'low'), (7009, 'Family', 'low'), (7011, 'Music', 'low'), (7013, 'Racing', 'low'),
  (7016, 'Sports', 'low'), (7018, 'Trivia', 'low'), (7019, 'Word', 'low');

-- Developer portfolios: portfolio_due_at is set when the ranking fill
-- meets an enriched app of the developer whose apps were never looked up;
-- portfolio_at when the crawl looked them up (lookup?id=ARTIST&entity=software).
ALTER TABLE developers ADD COLUMN portfolio_due_at TEXT;
ALTER TABLE developers ADD COLUMN portfolio_at TEXT;

-- Hot query (crawl cycle): the developers due a portfolio lookup, longest
-- due first; a looked-up developer leaves the index.
CREATE INDEX IF NOT EXISTS idx_developers_portfolio_due
  ON developers (portfolio_due_at) WHERE portfolio_due_at IS NOT NULL AND portfolio_at IS NULL;
