package store

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSearchTerms(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"stop words out", "How often should the pump be SERVICED?", []string{"often", "pump", "serviced"}},
		{"Dutch stop words out", "Hoe vaak moet de pomp worden onderhouden?", []string{"vaak", "moet", "pomp", "worden", "onderhouden"}},
		{"only stop words still search", "What is it?", []string{"what", "is", "it"}},
		{"only Dutch stop words still search", "wat is het", []string{"wat", "is", "het"}},
		{"each word once", "pump Pump PUMP filter", []string{"pump", "filter"}},
		{"syntax is only words", `"pump" AND -filter NEAR(x) title:y`, []string{"pump", "filter", "near", "x", "title", "y"}},
		{"nothing", " ?! ", nil},
		{"the 12 longest, in order",
			"a1 bb2 ccc3 dddd4 eeeee5 ffffff6 ggggggg7 hhhhhhhh8 iiiiiiiii9 jjjjjjjjjj10 kkkkkkkkkkk11 llllllllllll12 mmmmmmmmmmmmm13 nnnnnnnnnnnnnn14",
			[]string{"ccc3", "dddd4", "eeeee5", "ffffff6", "ggggggg7", "hhhhhhhh8", "iiiiiiiii9", "jjjjjjjjjj10",
				"kkkkkkkkkkk11", "llllllllllll12", "mmmmmmmmmmmmm13", "nnnnnnnnnnnnnn14"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, searchTerms(tc.text)); d != "" {
				t.Errorf("searchTerms(%q) (-want +got):\n%s", tc.text, d)
			}
		})
	}
}
