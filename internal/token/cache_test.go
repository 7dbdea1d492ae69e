package token

import "testing"

// Each encoding's counts are cached apart, each cache bounded.
func TestCacheByEncoding(t *testing.T) {
	cs := NewCounters(3)
	o, c := cs.For("gpt-4o"), cs.For("gpt-4")
	if o.Encoding() == c.Encoding() {
		t.Fatal("two models of one encoding")
	}
	const text = "Gemeenschappelijke regels voor de interne markt"
	wantO, wantC := o.count(text), c.count(text)
	if wantO == wantC {
		t.Fatalf("%q counts %d in both encodings: pick a text they differ on", text, wantO)
	}
	for range 2 { // counted, then from the cache
		if got := o.Text(text); got != wantO {
			t.Errorf("%s: %d tokens, want %d", o.Encoding(), got, wantO)
		}
		if got := c.Text(text); got != wantC {
			t.Errorf("%s: %d tokens, want %d", c.Encoding(), got, wantC)
		}
	}
	for _, s := range []string{"a", "b c", "d e f", "g h i j", "k l m n o"} {
		o.Text(s)
	}
	if n := len(cs.cache[encIndex(o.Encoding())]); n > 3 {
		t.Errorf("%s's cache holds %d counts, more than 3", o.Encoding(), n)
	}
	if n := len(cs.cache[encIndex(c.Encoding())]); n != 1 {
		t.Errorf("%s's cache holds %d counts, want 1", c.Encoding(), n)
	}
	if got := o.Text(text); got != wantO {
		t.Errorf("%s after its cache started over: %d tokens, want %d", o.Encoding(), got, wantO)
	}
}

// Load reads the encodings it is given, and those alone.
func TestLoad(t *testing.T) {
	cs := NewCounters(0)
	cs.Load(O200k)
	if cs.enc[encIndex(O200k)] == nil || cs.enc[encIndex(Cl100k)] != nil {
		t.Fatalf("after Load(O200k): o200k read %v, cl100k read %v", cs.enc[encIndex(O200k)] != nil, cs.enc[encIndex(Cl100k)] != nil)
	}
	if n := cs.For("gpt-4o").Text("hello world"); n != 2 {
		t.Errorf("counted %d tokens in \"hello world\", want 2", n)
	}
}
