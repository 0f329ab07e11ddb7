package upstreammodel

// The words the living catalogue's apps are written in. Every word is one
// lowercase token and belongs to exactly one pool (TestVocabularyPools), so
// a word found in an app's text says which part of its niche put it there.

// Genre is an App Store genre: Apps' genres (6000..6027) and Games'
// subgenres (7001..7019), whose apps' primary genre is Games (6014).
type Genre struct {
	ID   int
	Name string
}

// GamesGenreID is the Games genre, every game's primary genre.
const GamesGenreID = 6014

// Genres is every App Store genre id the simulator charts: Apps' genres,
// Games, and Games' subgenres (Kids, 7010, is retired).
var Genres = []Genre{
	{6000, "Business"}, {6001, "Weather"}, {6002, "Utilities"}, {6003, "Travel"},
	{6004, "Sports"}, {6005, "Social Networking"}, {6006, "Reference"},
	{6007, "Productivity"}, {6008, "Photo & Video"}, {6009, "News"},
	{6010, "Navigation"}, {6011, "Music"}, {6012, "Lifestyle"},
	{6013, "Health & Fitness"}, {6014, "Games"}, {6015, "Finance"},
	{6016, "Entertainment"}, {6017, "Education"}, {6018, "Books"},
	{6020, "Medical"}, {6021, "Magazines & Newspapers"}, {6022, "Catalogs"},
	{6023, "Food & Drink"}, {6024, "Shopping"}, {6025, "Stickers"},
	{6026, "Developer Tools"}, {6027, "Graphics & Design"},
	{7001, "Action"}, {7002, "Adventure"}, {7003, "Casual"}, {7004, "Board"},
	{7005, "Card"}, {7006, "Casino"}, {7007, "Dice"}, {7008, "Educational"},
	{7009, "Family"}, {7011, "Music"}, {7012, "Puzzle"}, {7013, "Racing"},
	{7014, "Role Playing"}, {7015, "Simulation"}, {7016, "Sports"},
	{7017, "Strategy"}, {7018, "Trivia"}, {7019, "Word"},
}

// GenreByID is Genres by id.
var GenreByID = func() map[int]Genre {
	m := make(map[int]Genre, len(Genres))
	for _, g := range Genres {
		m[g.ID] = g
	}
	return m
}()

// IsGameGenre reports whether id is a Games subgenre.
func IsGameGenre(id int) bool { return id > 7000 }

// subjectsByGenre: what a niche is about, by the genre its apps are in.
var subjectsByGenre = map[int][]string{
	6000: {"crm", "inventory", "payroll", "shift", "meeting", "resume"},
	6001: {"weather", "radar", "storm", "tide", "snowfall"},
	6002: {"password", "vpn", "wifi", "battery", "cleaner", "qr", "barcode", "flashlight"},
	6003: {"flight", "hotel", "camping", "hiking", "itinerary"},
	6004: {"golf", "tennis", "soccer", "basketball", "baseball", "hockey", "fishing"},
	6005: {"chat", "meme", "messenger", "forum"},
	6006: {"dictionary", "encyclopedia", "thesaurus", "quran"},
	6007: {"task", "habit", "focus", "pomodoro", "pdf", "document", "signature", "email", "calendar"},
	6008: {"photo", "selfie", "video", "collage", "wallpaper", "font"},
	6009: {"headline", "newsletter", "rss"},
	6010: {"parking", "fuel", "bus", "train", "taxi", "gps"},
	6011: {"guitar", "piano", "drum", "karaoke", "metronome", "ukulele"},
	6012: {"horoscope", "tarot", "astrology", "wedding", "tattoo", "makeup", "dog", "plant", "dating"},
	6013: {"meditation", "yoga", "workout", "running", "cycling", "swimming", "calorie", "fasting", "hydration"},
	6015: {"budget", "expense", "invoice", "receipt", "tax", "crypto", "stock", "savings", "mortgage", "loan"},
	6016: {"podcast", "movie", "anime", "celebrity"},
	6017: {"spanish", "french", "japanese", "math", "physics", "chemistry", "anatomy", "vocabulary", "spelling", "typing", "coding"},
	6018: {"ebook", "comic", "manga", "audiobook", "bible", "poetry"},
	6020: {"medication", "pill", "glucose", "pregnancy", "period", "therapy"},
	6021: {"magazine", "newspaper"},
	6022: {"catalog", "brochure"},
	6023: {"recipe", "grocery", "meal", "coffee", "wine", "cocktail", "baking", "vegan"},
	6024: {"coupon", "deals", "auction", "thrift", "sneaker"},
	6025: {"sticker", "kawaii"},
	6026: {"python", "terminal", "regex"},
	6027: {"drawing", "logo", "animation"},
	7001: {"zombie", "sniper", "ninja", "tank"},
	7002: {"pirate", "dungeon", "treasure"},
	7003: {"bubble", "merge", "idle"},
	7004: {"chess", "checkers", "backgammon", "ludo"},
	7005: {"solitaire", "spades", "rummy"},
	7006: {"slots", "blackjack", "roulette", "poker"},
	7007: {"dice", "farkle"},
	7008: {"alphabet", "phonics"},
	7009: {"pony", "unicorn", "dollhouse"},
	7011: {"rhythm", "dj"},
	7012: {"sudoku", "crossword", "jigsaw", "mahjong", "nonogram"},
	7013: {"drift", "motocross", "kart"},
	7014: {"knight", "dragon", "kingdom"},
	7015: {"farm", "tycoon", "hospital", "airport"},
	7016: {"bowling", "billiards", "darts"},
	7017: {"castle", "empire", "tower", "war"},
	7018: {"trivia", "riddle"},
	7019: {"anagram", "hangman"},
}

// Facets: what kind of app a niche's apps are.
var (
	appFacets = []string{"tracker", "planner", "timer", "journal", "scanner", "editor", "maker", "guide",
		"coach", "manager", "counter", "calculator", "reminder", "log", "monitor", "finder", "organizer",
		"builder", "player", "viewer", "tutor", "assistant"}
	gameFacets = []string{"game", "quest", "saga", "legends", "mania", "blast", "battle", "arena",
		"simulator", "master", "rush", "heroes"}
)

// Details: the rest of a niche's vocabulary, shared between niches (the
// first words of each list are drawn most often).
var (
	appDetails = []string{"goals", "progress", "streaks", "charts", "reports", "sync", "cloud", "backup",
		"privacy", "export", "sharing", "family", "kids", "offline", "widgets", "insights", "statistics",
		"history", "templates", "themes", "filters", "effects", "presets", "lessons", "practice",
		"beginners", "experts", "routines", "schedule", "notifications", "bookmarks", "favorites",
		"categories", "tags", "voice", "dictation", "daily", "weekly", "monthly", "checklist",
		"community", "friends", "audio", "ai", "camera", "ocr", "flashcards", "decks", "quizzes", "exam",
		"nearby", "booking", "rewards", "points", "cashback", "wallet", "payments", "accounts", "alerts",
		"forecast", "diary", "reminders", "notes", "teams", "clients", "projects"}
	gameDetails = []string{"levels", "coins", "gems", "boosts", "multiplayer", "pvp", "tournament",
		"leaderboard", "clans", "guilds", "bosses", "skins", "chests", "missions", "campaigns", "upgrades",
		"cards", "stages", "combos", "avatars", "puzzles", "challenges", "seasons", "trophies", "offline",
		"friends", "daily", "rewards"}
)

// brands open app titles: never searched for a niche, but indexed.
var brands = []string{"pocket", "swift", "bright", "tiny", "lucky", "happy", "zen", "epic", "super",
	"clever", "cosmic", "pixel", "quiet", "bold", "magic", "rapid", "golden", "fresh", "urban", "wild",
	"pure", "neon", "royal", "sunny", "ultra", "mighty", "clear", "nova", "echo", "atlas"}

// Filler text: the words around the vocabulary (none is a vocabulary
// word, so filler never matches a search).
var (
	subtitleTemplates = []string{"%s & %s", "%s and %s, made easy", "Your %s and %s app", "Simple %s, smarter %s"}
	// descTemplates each take one vocabulary word.
	descTemplates = []string{"Everything about %s in one place.", "Built around %s from day one.",
		"Get more out of %s.", "Loved for its %s.", "Thoughtful %s, without the clutter.", "Made with %s in mind."}
	descFiller = []string{"Designed for speed and simplicity.", "Join millions of users worldwide.",
		"No account required; your data stays on your device.", "New features every month, driven by your feedback.",
		"Crafted with care by a small, independent team.", "Works wherever you are.", "Beautiful, fast and free to try."}
)
