package phases

// DryRunOnlyError is a failure of a dry run's own machinery, which a real
// run does not use (the stand-in cluster-info a join's dry run serves on
// loopback): it says nothing about whether a real run would succeed, and
// the dry run's closing line must not claim that it would fail too. Err
// is the cause; errors.As finds it through errclass and the run's error.
type DryRunOnlyError struct {
	Err error
}

func (e *DryRunOnlyError) Error() string { return e.Err.Error() }
func (e *DryRunOnlyError) Unwrap() error { return e.Err }
