package appstore

// Genre is an App Store (iOS) genre: its iTunes genre id, its name, and
// its parent (GenreApps for a top-level category, GenreGames for a game
// subgenre). A top chart takes any of them (ChartURL's genre).
type Genre struct {
	ID     int
	Name   string
	Parent int
}

// The two roots: the iOS App Store ("Apps") and its Games category, whose
// subgenres have charts of their own.
const (
	GenreApps  = 36
	GenreGames = 6014
)

// AppGenres are the iOS App Store's top-level categories and GameGenres
// the Games subgenres, as Apple's genre service lists them
// (https://itunes.apple.com/WebObjects/MZStoreServices.woa/ws/genres, the
// "App Store" tree: testdata/genres_app_store.md records the source). 6019
// is no genre; 7010 (Kids) is not in the iOS tree. Stickers' subgenres
// (16001–16026) are sticker packs, not apps, and are left out.
var (
	AppGenres = []Genre{
		{6000, "Business", GenreApps}, {6001, "Weather", GenreApps}, {6002, "Utilities", GenreApps},
		{6003, "Travel", GenreApps}, {6004, "Sports", GenreApps}, {6005, "Social Networking", GenreApps},
		{6006, "Reference", GenreApps}, {6007, "Productivity", GenreApps}, {6008, "Photo & Video", GenreApps},
		{6009, "News", GenreApps}, {6010, "Navigation", GenreApps}, {6011, "Music", GenreApps},
		{6012, "Lifestyle", GenreApps}, {6013, "Health & Fitness", GenreApps}, {6014, "Games", GenreApps},
		{6015, "Finance", GenreApps}, {6016, "Entertainment", GenreApps}, {6017, "Education", GenreApps},
		{6018, "Books", GenreApps}, {6020, "Medical", GenreApps}, {6021, "Magazines & Newspapers", GenreApps},
		{6022, "Catalogs", GenreApps}, {6023, "Food & Drink", GenreApps}, {6024, "Shopping", GenreApps},
		{6025, "Stickers", GenreApps}, {6026, "Developer Tools", GenreApps}, {6027, "Graphics & Design", GenreApps},
	}
	GameGenres = []Genre{
		{7001, "Action", GenreGames}, {7002, "Adventure", GenreGames}, {7003, "Casual", GenreGames},
		{7004, "Board", GenreGames}, {7005, "Card", GenreGames}, {7006, "Casino", GenreGames},
		{7007, "Dice", GenreGames}, {7008, "Educational", GenreGames}, {7009, "Family", GenreGames},
		{7011, "Music", GenreGames}, {7012, "Puzzle", GenreGames}, {7013, "Racing", GenreGames},
		{7014, "Role Playing", GenreGames}, {7015, "Simulation", GenreGames}, {7016, "Sports", GenreGames},
		{7017, "Strategy", GenreGames}, {7018, "Trivia", GenreGames}, {7019, "Word", GenreGames},
	}
)

// AllGenres is every genre with a chart: the categories, then the Games
// subgenres.
func AllGenres() []Genre {
	return append(append([]Genre(nil), AppGenres...), GameGenres...)
}
