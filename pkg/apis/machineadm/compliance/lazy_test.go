package compliance

import "testing"

// The catalogues are built on first use: every call gives the same
// checks, CIS's section 5 (the cluster policies) once at its end.
func TestChecksBuiltOnce(t *testing.T) {
	for _, p := range Profiles {
		a, b := Checks(p), Checks(p)
		if len(a) == 0 || len(a) != len(b) || &a[0] != &b[0] {
			t.Errorf("%s: %d then %d checks (or another slice): want the same catalogue each call", p, len(a), len(b))
		}
	}
	cis := Checks(CIS112)
	policies := 0
	for i, c := range cis {
		if c.Scope != ScopePolicies {
			continue
		}
		policies++
		if want := cisPolicies[policies-1].id; c.ID != want || i != len(cis)-len(cisPolicies)+policies-1 {
			t.Errorf("CIS check %d is %s, want the policies in their order at the end (%s)", i, c.ID, want)
		}
	}
	if policies != len(cisPolicies) {
		t.Errorf("CIS has %d policy checks, want the %d of section 5 once", policies, len(cisPolicies))
	}
	if c, ok := Lookup(CIS112, "5.1.1"); !ok || c.Scope != ScopePolicies || c.How != HowClusterPolicy {
		t.Errorf("Lookup 5.1.1: %+v %v", c, ok)
	}
}
