package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestUnsignedVisitorSeesSignIn opens Relay with no session: the app loads
// from the binary and sends the visitor to the sign-in page.
func TestUnsignedVisitorSeesSignIn(t *testing.T) {
	alloc := newBrowser(t)
	r := startRelay(t, "server:\n  data_dir: %DATA%\n  log_level: warn\n", nil)
	ctx := newPerson(t, alloc)
	var url string
	run(t, ctx, "opening Relay",
		chromedp.Navigate(r.Base+"/agents"),
		chromedp.WaitVisible(`input[name=email]`, chromedp.ByQuery),
		chromedp.Location(&url),
	)
	if want := r.Base + "/signin?next=%2Fagents"; url != want {
		t.Errorf("location %s, want %s", url, want)
	}
	waitText(t, ctx, "h1", "Sign in to Relay")
}
