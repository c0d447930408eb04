package spec

import (
	"strings"
	"testing"
)

// secretHex looks like a certificate key: 64 hex digits, which YAML reads
// as a string unless a tag says otherwise.
const secretHex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestConverterErrorsNeverQuoteValues feeds documents that make the
// YAML-to-JSON conversion fail with a message that quotes a value of the
// document: the error must keep the field path and line and drop the
// value, which may be a secret.
func TestConverterErrorsNeverQuoteValues(t *testing.T) {
	cp := "apiVersion: machineadm.io/v1alpha1\nkind: MachineBootstrapConfig\nspec:\n  role: ControlPlane\n  action: Init\n  kubernetes: {version: v1.37.2}\n"
	for _, tc := range []struct {
		name, doc, secret string
		field, want       string
	}{
		{"int tag on a certificate key", cp + "  controlPlane:\n    certificateKey: {value: !!int " + secretHex + "}\n", secretHex,
			"spec.controlPlane.certificateKey.value", "line 8: tagged !!int"},
		{"float tag in block style", cp + "  controlPlane:\n    certificateKey:\n      value: !!float " + secretHex + "\n", secretHex,
			"spec.controlPlane.certificateKey.value", "line 9: tagged !!float"},
		{"bool tag on a list item's token", cp + "  controlPlane:\n    bootstrapTokens:\n    - token: {file: /t}\n    - token: {value: !!bool abcdef.0123456789abcdef}\n", "0123456789abcdef",
			"spec.controlPlane.bootstrapTokens[1].token.value", "line 10: tagged !!bool"},
		{"timestamp tag on a map value", cp + "  host:\n    sysctl:\n      vm.swappiness: !!timestamp s3cr3t-sysctl-value\n", "s3cr3t-sysctl-value",
			"spec.host.sysctl[vm.swappiness]", "line 9: tagged !!timestamp"},
		{"int tag on a multi-line value", cp + "  host:\n    files:\n    - path: /etc/x\n      content: !!int |\n        s3cr3t line one\n        s3cr3t line two\n", "s3cr3t line",
			"spec.host.files[0].content", "line 10: tagged !!int"},
		{"unknown anchor", cp + "  controlPlane:\n    certificateKey: {value: *s3cr3tAnchorName}\n", "s3cr3tAnchorName", "", "an alias refers to an anchor that is not defined"},
		{"mapping as a key", cp + "  host:\n    sysctl:\n      ? {s3cr3tKeyValue: x}\n      : y\n", "s3cr3tKeyValue", "", "a mapping or list is used as a mapping key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ise := invalid(t, []byte(tc.doc))
			msg := ise.Error()
			if strings.Contains(msg, tc.secret) {
				t.Errorf("the error quotes the value:\n%s", msg)
			}
			if len(ise.Errors) != 1 {
				t.Fatalf("want one error, got:\n%s", msg)
			}
			e := ise.Errors[0]
			if e.Field != tc.field || !strings.Contains(e.Detail, tc.want) {
				t.Errorf("got field %q detail %q; want field %q and %q", e.Field, e.Detail, tc.field, tc.want)
			}
		})
	}
}

func TestScrubConverterMessage(t *testing.T) {
	for in, want := range map[string]string{
		"yaml: cannot decode !!str `" + secretHex + "` as a !!int":                    "yaml: a value tagged !!int is not a valid !!int (the value is not shown)",
		"yaml: unknown anchor 's3cr3t' referenced":                                    "yaml: an alias refers to an anchor that is not defined (its name is not shown)",
		"yaml: anchor 's3cr3t' value contains itself":                                 "yaml: an anchor's value contains an alias to itself (its name is not shown)",
		"yaml: invalid map key: map[interface {}]interface {}{\"s3cr3t\":\"x\"}":      "yaml: a mapping or list is used as a mapping key",
		"unsupported map key of type: float64, key: 1.5, value: \"s3cr3t\"":           "a mapping key of an unsupported type",
		"yaml: unmarshal errors:\n  line 3: cannot unmarshal !!str `s3cr3t` into int": "yaml: unmarshal errors:\n  line 3: cannot unmarshal !!str (value not shown) into int",
		"yaml: line 4: did not find expected ',' or '}'":                              "yaml: line 4: did not find expected ',' or '}'",
	} {
		if got := scrubConverterMessage(in); got != want {
			t.Errorf("scrub(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}
