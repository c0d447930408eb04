// Package seal implements machineadm's sealed-secrets envelope
// (apiVersion machineadm.io/v1alpha2, kind SealedSecrets): the secrets of a
// machine spec encrypted so that only the target machine, or its image,
// can read them, small enough to travel in instance user data.
//
// # Format
//
//	apiVersion: machineadm.io/v1alpha2
//	kind: SealedSecrets
//	clusterName: kubernetes        # spec.kubernetes.clusterName
//	machineName: cp1               # the node name, or "*" for a template
//	specDigest: sha256:<hex>       # SpecDigest of the clear spec beside it
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
// every item is the canonical header (Envelope.AAD: apiVersion, kind,
// algorithm, cluster name, machine name, the clear spec's digest, every
// recipient stanza with its wrapped key, the sorted list of item paths)
// followed by the item's own path, so an edited header, a removed, added
// or swapped item, or an item moved to another path fails to open.
//
// The clear spec is authenticated too: specDigest is the canonical digest
// of the spec document the envelope travels with (SpecDigest: its JSON
// form with sorted keys, so comments, order and indentation do not count,
// every value does, the places of the sealed items included). Open
// compares it with the digest of the spec the machine read
// (ErrSpecMismatch) and every item's additional data holds it, so neither
// an edited clear spec (a node name, which otherwise decides which
// machine a template opens on; an endpoint the token is sent to; a file's
// path or mode) nor an edited specDigest opens. The first version,
// machineadm.io/v1alpha1, lacked it; Parse refuses it and asks for the
// spec to be sealed again. Each recipient stanza wraps the
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
// list, another machine or cluster name, an edited clear spec) is an *OpenError, which carries
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
