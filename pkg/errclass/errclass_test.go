package errclass

import (
	"errors"
	"fmt"
	"testing"
)

func TestEveryClassDocumented(t *testing.T) {
	for _, c := range All() {
		if DefaultHint(c) == "" {
			t.Errorf("class %s has no default hint", c)
		}
		if !c.Known() {
			t.Errorf("class %s not known", c)
		}
	}
	if Class("Nope").Known() {
		t.Error("unknown class reported known")
	}
}

func TestOf(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", New(VerificationFailed, "check it", errors.New("bad digest")))
	if c, h := Of(err); c != VerificationFailed || h != "check it" {
		t.Errorf("Of = %s %q", c, h)
	}
	if c, h := Of(errors.New("plain")); c != Internal || h != "" {
		t.Errorf("Of(plain) = %s %q", c, h)
	}
	if got := Errorf(Timeout, "", "waited %ds", 5).Error(); got != "waited 5s" {
		t.Errorf("Errorf message %q", got)
	}
}
