package builtin

import "testing"

// spend_after_cancel parses as a step of its own kind, with usage fields.
func TestSpendAfterCancelStep(t *testing.T) {
	s, err := ParseScript([]byte("steps:\n  - usage: {used: 1, size: 10}\n  - spend_after_cancel: {used: 5, size: 10}\n"))
	if err != nil {
		t.Fatal(err)
	}
	st := s.Steps[1]
	if st.Kind() != KindSpendAfterCancel || st.SpendAfterCancel == nil || st.SpendAfterCancel.Used != 5 {
		t.Fatalf("step %+v", st)
	}
	for _, bad := range []string{"{used: 5, bogus: 1}", "{used: -1}"} {
		if _, err := ParseScript([]byte("steps:\n  - spend_after_cancel: " + bad + "\n")); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
}
