package sealage

import "crypto/fips140"

func fipsEnforced() bool { return fips140.Enforced() }
