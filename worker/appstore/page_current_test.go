package appstore

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// currentExcerpt is NOT a captured page: it is a current-markup page put
// together from verbatim excerpts of a real one (youseiushida/appstore
// test/fixtures/page_jp_free.json @c67d992b, the jp page of app
// 1059224316): the JSON-LD block (its description and operatingSystem left
// out), the lockup's title and subtitle, the productRatings item, the
// in-app purchase annotation (its items_V3 button left out) and the first
// similarItems lockup (its icon, offer and metrics left out; clickAction
// cut to its destination), in the page's own nesting and key order. The
// capture itself (850 KB) could not be copied byte for byte into this
// repository; see testdata/README.md.
const currentExcerpt = `<!DOCTYPE html>
<html dir="ltr" lang="ja">
    <head>
                <script id=software-application type="application/ld+json">
                    {"@context":"https://schema.org","@type":"SoftwareApplication","name":"家計簿!簡単お小遣い帳　人気の家計簿(かけいぼ)","image":"https://is1-ssl.mzstatic.com/image/thumb/Purple211/v4/aa/9f/3a/aa9f3a77-f506-8bc6-9ef6-83eee7beb056/AppIcon-0-0-1x_U007ephone-0-1-0-85-220.png/1200x630wa.png","availableOnDevice":"iPhone, iPod","offers":{"@type":"Offer","price":0,"priceCurrency":"JPY"},"applicationCategory":"FinanceApplication","aggregateRating":{"@type":"AggregateRating","ratingValue":4.6,"reviewCount":624829,"bestRating":"5","worstRating":"1"},"keywords":["ファイナンス","ライフスタイル"],"genre":["ファイナンス","ライフスタイル"],"author":{"@type":"Organization","name":"LAN CHEN","url":"https://apps.apple.com/jp/developer/lan-chen/id1454519178"}}
                </script>
    </head>
    <body>
        <div class="body-container">
<script type="application/json" id="serialized-server-data">{"data":[{"intent":{"storefront":"jp","language":"ja","isDefaultLanguage":true,"$kind":"ProductPageIntent","id":"1059224316"},"data":{"shelfMapping":{"productRatings":{"$kind":"Shelf","items":[{"$kind":"Ratings","productId":"1059224316","ratingAverage":4.6,"totalNumberOfRatings":624829,"context":"productPage","ratingCounts":[459225,116978,39433.00000000001,3974,5219]}]},"textCards":null,"information":{"$kind":"Shelf","items":[{"$kind":"Annotation","title":"アプリ内購入","summary":"あり","items":[{"$kind":"AnnotationItem","textPairs":[["アップグレードパック","¥600"],["広告非表示","¥300"]]}],"items_V3":[{"$kind":"textPair","leadingText":"アップグレードパック","trailingText":"¥600"},{"$kind":"textPair","leadingText":"広告非表示","trailingText":"¥300"}]}]},"similarItems":{"$kind":"Shelf","impressionMetrics":{"fields":{"id":"customers-also-bought-apps","name":"その他のおすすめ","impressionType":"similarItems","idType":"relationship","impressionIndex":12}},"contentType":"smallLockup","marker":null,"items":[{"$kind":"Lockup","adamId":"445850671","bundleId":"in.unicco.zaim.ZaimForIPhone","decorations":[],"title":"家計簿くふうZaim - 貯金ができる人気家計簿（かけいぼ）","clickAction":{"destination":{"id":"445850671","$kind":"ProductPageIntent"}}}]}},"$kind":"ShelfBasedProductPage","appPlatforms":["phone"],"uber":null,"title":"家計簿!簡単お小遣い帳　人気の家計簿(かけいぼ)","lockup":{"$kind":"Lockup","adamId":"1059224316","bundleId":"com.hapihapi.money","title":"家計簿!簡単お小遣い帳　人気の家計簿(かけいぼ)","subtitle":"カレンダー表示おこづかい帳、支出/貯金/予算をシンプル管理","developerTagline":"カレンダー表示おこづかい帳、支出/貯金/予算をシンプル管理","rating":4.6,"isIOSBinaryMacOSCompatible":false}}}],"userTokenHash":""}</script>
        </div>
    </body>
</html>
`

func TestParseCurrentMarkup(t *testing.T) {
	got, err := ParseStorePage([]byte(currentExcerpt))
	if err != nil {
		t.Fatal(err)
	}
	counts := [5]int64{459225, 116978, 39433, 3974, 5219}
	want := StorePage{
		Format: FormatCurrent, Name: "家計簿!簡単お小遣い帳　人気の家計簿(かけいぼ)",
		Subtitle:      "カレンダー表示おこづかい帳、支出/貯金/予算をシンプル管理",
		RatingAverage: 4.6, RatingTotal: 624829, ExactCounts: &counts, Price: 0, Currency: "JPY",
		Category:        "FinanceApplication",
		InAppPurchases:  []IAP{{"アップグレードパック", "¥600"}, {"広告非表示", "¥300"}},
		SimilarAppIDs:   []int64{445850671},
		MissingSections: []string{},
	}
	for i, c := range counts {
		want.RatingShare[i] = float64(c) / 624829
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("mismatch\n got %+v\nwant %+v", got, want)
	}
	// The exact counts win over any spread of a lookup total.
	if got.RatingCounts(1) != counts {
		t.Fatalf("counts %v", got.RatingCounts(1))
	}
}

func TestParseCurrentMarkupPartial(t *testing.T) {
	// Server data that is not a product page: the JSON-LD summary is all.
	notProduct := strings.Replace(currentExcerpt, `"$kind":"ShelfBasedProductPage"`, `"$kind":"GenericPage"`, 1)
	p, err := ParseStorePage([]byte(notProduct))
	if err != nil || p.Format != FormatCurrent || p.RatingTotal != 624829 || p.ExactCounts != nil ||
		!reflect.DeepEqual(p.MissingSections, []string{SectionInAppPurchases, SectionRatings, SectionSimilarApps, SectionSubtitle}) {
		t.Fatalf("%+v %v", p, err)
	}
	// Neither server data nor summary: no product data at all.
	bare := `<html><body><script type="application/json" id="serialized-server-data">{"data":[]}</script></body></html>`
	if _, err := ParseStorePage([]byte(bare)); !errors.Is(err, ErrParse) {
		t.Fatalf("bare: %v", err)
	}
	// No ratings shelf (an unrated app): ratings missing, shares zero.
	noRatings := strings.Replace(currentExcerpt, `"productRatings"`, `"productRatingsGone"`, 1)
	if p, err := ParseStorePage([]byte(noRatings)); err != nil || p.RatingShare != ([5]float64{}) || p.ExactCounts != nil || p.MissingSections[0] != SectionRatings {
		t.Fatalf("%+v %v", p, err)
	}
}
