// Package seal implements machineadm's sealed-secrets envelope
// (apiVersion machineadm.io/v1alpha1, kind SealedSecrets): the secrets of a
// machine spec encrypted so that only the target machine, or its image,
// can read them, small enough to travel in instance user data.
//
// # Format
//
//	apiVersion: machineadm.io/v1alpha1
//	kind: SealedSecrets
//	clusterName: kubernetes        # spec.kubernetes.clusterName
//	machineName: cp1               # the node name, or "*" for a template
//	algorithm: AES-256-GCM
//	recipients:                    # any one of them unwraps the data key
//	- type: hpke
//	  keyID: 3f0c9a1e2b4d5c6f
//	  suite: DHKEM(P-384)+HKDF-SHA384+AES-256-GCM
//	  wrappedKey: <base64>
//	items:                         # spec field path -> base64(nonce | ciphertext | tag)
//	  spec.join.token: <base64>
//	  spec.controlPlane.pki.dir/ca.key: <base64>
//
// A random 256-bit data key encrypts each item with AES-256-GCM and a
// 12-byte random nonce of its own. The additional authenticated data of
// every item is the canonical header (Header.AAD: apiVersion, kind,
// algorithm, cluster name, machine name, every recipient stanza with its
// wrapped key, the sorted list of item paths) followed by the item's own
// path, so an edited header, a removed, added or swapped item, or an item
// moved to another path fails to open. Each recipient stanza wraps the
// same data key for one recipient (hpke, tpm2, age, or a cloud KMS behind a
// build tag); the wrap's context string (WrapInfo) binds the cluster and
// machine names.
//
// The plaintext of an item starts with one format byte (see framing.go):
// raw bytes, DEFLATE-compressed bytes, or a single PEM block stored as its
// DER (re-encoded exactly on open), whichever is smallest. Length is not
// hidden: a reader of the envelope learns the approximate size of each
// secret, never its content.
//
// Every failure to open (no identity matches, a wrong identity, a changed
// byte in a wrapped key, nonce, ciphertext or tag, an edited recipient
// list, another machine or cluster name) is an *OpenError, which carries
// errclass.VerificationFailed. A malformed envelope is a *ParseError
// (errclass.InvalidSpec) that lists every problem with its field path.
//
// The package uses the Go standard library's cryptography only
// (crypto/aes, crypto/cipher, crypto/hpke, crypto/mlkem, crypto/ecdh); the
// recipient types that need other libraries (age, tpm2, cloud KMS) live in
// subpackages and register themselves with Register.
//
// What the envelope protects: the confidentiality of the secrets against
// anyone who can read user data. It does not authenticate the sender (the
// recipients' keys are public); the integrity of user data against writers
// is the job of signatures (R6).
package seal
