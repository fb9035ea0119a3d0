package app

import (
	"context"
	"testing"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/elicit"
)

// formsEditor is an editor that shows forms only; asked, it waits for the
// race to withdraw it.
type formsEditor struct{ asked chan driver.ElicitMode }

func (formsEditor) Offers(m driver.ElicitMode) bool { return m == driver.ElicitForm }
func (e formsEditor) Answer(ctx context.Context, req driver.ElicitationRequest) (driver.ElicitationAnswer, error) {
	e.asked <- req.Mode
	<-ctx.Done()
	return driver.ElicitationAnswer{}, ctx.Err()
}

type feedAnswers struct{}

func (feedAnswers) Answer(_ context.Context, req driver.ElicitationRequest) (driver.ElicitationAnswer, error) {
	return driver.ElicitationAnswer{Action: driver.ElicitDecline, DecidedBy: elicit.ByHuman, Via: string(ask.ViaDashboard)}, nil
}

// Under tai acp a mode the editor shows races editor and feed; one it
// does not show is the feed's alone (the editor is never asked it), not
// declined at once.
func TestEditorOrFeed(t *testing.T) {
	ed := formsEditor{asked: make(chan driver.ElicitMode, 2)}
	eo := editorOrFeed{editor: ed, feed: elicit.Channel(ask.ViaFeed, feedAnswers{})}
	for _, m := range []driver.ElicitMode{driver.ElicitURL, driver.ElicitForm} {
		ans, err := eo.Answer(context.Background(), driver.ElicitationRequest{Mode: m})
		if err != nil || ans.Via != string(ask.ViaDashboard) || ans.Action != driver.ElicitDecline {
			t.Fatalf("%s: %+v, %v", m, ans, err)
		}
	}
	close(ed.asked)
	var asked []driver.ElicitMode
	for m := range ed.asked {
		asked = append(asked, m)
	}
	// The race waits for every channel, so the editor was asked the form.
	if len(asked) != 1 || asked[0] != driver.ElicitForm {
		t.Fatalf("the editor was asked %v, want the form alone", asked)
	}
}
