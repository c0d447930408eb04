//go:build kms_aws || kms_all

// Package awskms registers the "aws-kms" recipient type of machineadm's
// sealed secrets (build tag kms_aws or kms_all): the 32-byte data key is
// encrypted by an AWS KMS symmetric key (Encrypt, SYMMETRIC_DEFAULT, that
// is AES-256-GCM inside the KMS HSMs) through
// github.com/aws/aws-sdk-go-v2/service/kms, with the encryption context
// {"machineadm.io/cluster": <cluster>, "machineadm.io/machine": <machine>}
// so that the blob decrypts only for the envelope it was made for, and key
// policies or IAM conditions (kms:EncryptionContext:machineadm.io/machine)
// can limit a machine to its own envelopes.
//
// Recipient string: "aws-kms:" and a key ARN
// ("aws-kms:arn:aws:kms:eu-west-1:111122223333:key/1234abcd-…") or an
// alias ARN ("…:alias/machineadm"); the region comes from the ARN. The
// stanza's keyID is the key ARN KMS reports. Sealing uses the operator's
// credentials from the SDK's default chain (AWS_* environment, shared
// config and SSO profiles, …); kms:Encrypt is needed.
//
// Identity line: "MACHINEADM-AWS-KMS-IDENTITY". The machine decrypts with
// the SDK's default credential chain, on EC2 its instance profile through
// IMDSv2; kms:Decrypt is needed. The endpoints follow the SDK's settings
// (AWS_ENDPOINT_URL_KMS, AWS_EC2_METADATA_SERVICE_ENDPOINT, FIPS endpoints
// with AWS_USE_FIPS_ENDPOINT=true).
package awskms

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/seal/sealkms"
)

// Type is the stanza type of AWS KMS recipients.
const Type = "aws-kms"

// Suite is the KMS encryption algorithm of aws-kms stanzas.
const Suite = string(types.EncryptionAlgorithmSpecSymmetricDefault)

const recipientPrefix = Type + ":"

// newClient makes a KMS client for region from the SDK's default
// configuration. Tests may replace it.
var newClient = func(ctx context.Context, region string) (*kms.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(region))
	if err != nil {
		return nil, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	return kms.NewFromConfig(cfg), nil
}

// arnRegion checks that s is a KMS key or alias ARN
// (arn:PARTITION:kms:REGION:ACCOUNT:key/ID or …:alias/NAME) and returns
// its region.
func arnRegion(s string) (string, error) {
	f := strings.SplitN(s, ":", 6)
	if len(f) != 6 || f[0] != "arn" || f[1] == "" || f[2] != "kms" || f[3] == "" || f[4] == "" ||
		!(strings.HasPrefix(f[5], "key/") && len(f[5]) > 4 || strings.HasPrefix(f[5], "alias/") && len(f[5]) > 6) {
		return "", fmt.Errorf("want a KMS key or alias ARN (arn:aws:kms:REGION:ACCOUNT:key/ID), got %q", s)
	}
	return f[3], nil
}

type recipient struct {
	arn, region string
}

func (r *recipient) Type() string   { return Type }
func (r *recipient) String() string { return recipientPrefix + r.arn }

func (r *recipient) Wrap(dataKey, info []byte) (seal.Stanza, error) {
	ec, err := sealkms.Context(info)
	if err != nil {
		return seal.Stanza{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), sealkms.CallTimeout)
	defer cancel()
	c, err := newClient(ctx, r.region)
	if err != nil {
		return seal.Stanza{}, err
	}
	out, err := c.Encrypt(ctx, &kms.EncryptInput{
		KeyId:               aws.String(r.arn),
		Plaintext:           dataKey,
		EncryptionContext:   ec,
		EncryptionAlgorithm: types.EncryptionAlgorithmSpecSymmetricDefault,
	})
	if err != nil {
		return seal.Stanza{}, fmt.Errorf("kms:Encrypt with %s: %w", r.arn, err)
	}
	keyID := aws.ToString(out.KeyId)
	if keyID == "" {
		keyID = r.arn
	}
	return seal.Stanza{Type: Type, KeyID: keyID, Suite: Suite, WrappedKey: base64.StdEncoding.EncodeToString(out.CiphertextBlob)}, nil
}

// ParseRecipient parses "aws-kms:<key or alias ARN>".
func ParseRecipient(s string) (seal.Recipient, error) {
	arn := strings.TrimPrefix(s, recipientPrefix)
	region, err := arnRegion(arn)
	if err != nil {
		return nil, err
	}
	return &recipient{arn: arn, region: region}, nil
}

// identity is the machine's own AWS identity.
type identity struct{}

func (identity) Type() string  { return Type }
func (identity) KeyID() string { return "" }

// Unwrap is unwrap with a key service that did not answer marked as
// such (sealkms.Unavailable), so the machine retries rather than refuses.
func (id identity) Unwrap(st seal.Stanza, info []byte) ([]byte, error) {
	key, err := id.unwrap(st, info)
	return key, sealkms.Unavailable(err, 0)
}

func (id identity) unwrap(st seal.Stanza, info []byte) ([]byte, error) {
	region, err := arnRegion(st.KeyID)
	if err != nil {
		return nil, err
	}
	if st.Suite != Suite {
		return nil, fmt.Errorf("unsupported suite %q, want %s", st.Suite, Suite)
	}
	blob, err := base64.StdEncoding.DecodeString(st.WrappedKey)
	if err != nil {
		return nil, err
	}
	ec, err := sealkms.Context(info)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), sealkms.CallTimeout)
	defer cancel()
	c, err := newClient(ctx, region)
	if err != nil {
		return nil, err
	}
	out, err := c.Decrypt(ctx, &kms.DecryptInput{
		CiphertextBlob:      blob,
		KeyId:               aws.String(st.KeyID),
		EncryptionContext:   ec,
		EncryptionAlgorithm: types.EncryptionAlgorithmSpecSymmetricDefault,
	})
	if err != nil {
		return nil, fmt.Errorf("kms:Decrypt with %s: %w", st.KeyID, err)
	}
	if len(out.Plaintext) != 32 {
		clear(out.Plaintext)
		return nil, errors.New("KMS returned a plaintext that is not a 32-byte data key")
	}
	return out.Plaintext, nil
}

// ParseIdentity parses "MACHINEADM-AWS-KMS-IDENTITY" (no options).
func ParseIdentity(line string) (seal.Identity, error) {
	if _, err := sealkms.ParseIdentityLine(Type, line); err != nil {
		return nil, err
	}
	return identity{}, nil
}

func init() {
	sealkms.Register(Type, recipientPrefix, ParseRecipient, ParseIdentity)
}
