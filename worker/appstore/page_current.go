package appstore

// serverDataID marks the current markup: its data as JSON in
// <script type="application/json" id="serialized-server-data">.
const serverDataID = `id="serialized-server-data"`

func parseCurrent(html []byte) (StorePage, error) {
	return StorePage{}, errNoProductData("current")
}
