package translate

// WithDefaultArgs is withDefaultArgs for the external tests in
// translate_test.go.
var WithDefaultArgs = withDefaultArgs
