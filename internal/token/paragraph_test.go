package token

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// Counting a long text by paragraphs gives the count of the whole text.
func TestParagraphsCountAsTheWhole(t *testing.T) {
	pieces := []string{
		"Current date and time: 2026-11-25 14:30.", "\n\n", "\n\n\n", "\r\n\r\n", "\n", " \n\n", "\n\n ", ".\n\n", "?!\n\n",
		"Résumé of the plant's cooling loop", "42 pumps", "2026", "お誕生日おめでとう", "don't", "'s", "  ", "\t", "/", "\n\n/", "- item",
		"The quick brown fox jumps over the lazy dog.", "{\"key\": [1, 2, 3]}", "Ünïcödé", "— dash", "x", "\n\n1. first", "\n\nA",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	cs := NewCounters(0)
	for _, model := range []string{"gpt-4o", "gpt-4"} {
		c := cs.For(model)
		for range 300 {
			var b strings.Builder
			for b.Len() < 3*paragraphMin {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			}
			s := b.String()
			if got, want := c.Text(s), c.count(s); got != want {
				t.Fatalf("%s: by paragraphs %d, whole %d, for %q", model, got, want, s)
			}
		}
	}
}
