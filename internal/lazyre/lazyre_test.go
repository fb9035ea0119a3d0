package lazyre

import "testing"

func TestOnceAndRegistered(t *testing.T) {
	re := New(`^a+$`)
	first, again := re(), re()
	if first != again || !first.MatchString("aaa") {
		t.Fatal("not one compiled expression")
	}
	found := false
	for _, e := range Registered() {
		found = found || e == `^a+$`
	}
	if !found {
		t.Fatal("not registered")
	}
}

func TestBadExpressionPanicsOnUse(t *testing.T) {
	re := New(`(`) // registering does not compile
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	re()
}
