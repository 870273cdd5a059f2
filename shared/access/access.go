// Package access decides, before any per-instance work, whether a request's
// credentials can open an instance. Tokens carry their own proof: an Ed25519
// signature over the instance name, made with a signing key that only
// whoever mints holds (Signer). The access document, which every execution
// environment reads at start-up and again every few minutes, holds the
// public keys alone: nothing that checks tokens can mint one. A request
// whose token does not hold for the name it asks for is refused without a
// lookup, a cache entry or a connection, whether that name exists or not.
package access

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/erp-gateway/gateway/shared/erp"
)

// Token layouts: erpgw_<key id>_<token id>_<signature>, and with limits
// erpgw_<key id>_<token id>.<limits>_<signature>. The token id is 128 random
// bits in lower-case hex, the limits JSON in base64url, the signature 64
// bytes in base64url (which may hold "_", so it comes last, at a fixed
// length).
const (
	prefix  = "erpgw_"
	idBytes = 16
	sigLen  = 86 // base64url of an Ed25519 signature, unpadded
	// retiredLen is the proof's length in the tokens of the retired kind,
	// HMACs made with a key the checkers shared.
	retiredLen = 43
	// domain separates these signatures from any other use of a key.
	domain = "erpgw token v3\n"
	// MaxTokenLength bounds what a token's check reads.
	MaxTokenLength = 2048
)

var validKeyID = regexp.MustCompile(`^[A-Za-z0-9-]{1,32}$`)

// DemoKey is the public key of infra/access.demo.json, whose signing key
// (infra/signing-key.demo.json) is published with the README's demo token: a
// document that holds it opens every instance to anyone who read the README
// (Options.RefuseDemoKey).
const DemoKey = "NB52qdQ42oKcRDzMzbeAYRAZaIUpkgUJfrVLt2ma4AU="

// The token errors Verify tells apart.
var (
	// ErrRetired: a token of the retired kind, whose holder needs a new one.
	ErrRetired = errors.New("a token signed with a shared key, which is no longer accepted")
	errInvalid = errors.New("not a token of this document's keys for this instance")
)

// Document is the access document (infra/docs/configuration.md#tokens): the public keys
// tokens are checked with. It is safe for concurrent use: nothing changes
// it after Parse.
type Document struct {
	keys      map[string]ed25519.PublicKey
	anonymous map[string]bool
}

type documentJSON struct {
	Keys      json.RawMessage `json:"keys"`
	Anonymous []string        `json:"anonymous"`
}

// spare stands in for an unknown key id, so a token naming one costs the
// same check as any other; no signature verifies with it.
var spare = ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public().(ed25519.PublicKey)

// Parse checks an access document.
func Parse(data []byte) (*Document, error) {
	var raw documentJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		if errors.As(err, &syn) || errors.As(err, &typ) || strings.HasPrefix(err.Error(), "json: unknown field") {
			return nil, fmt.Errorf("access document: %w", err)
		}
		return nil, errors.New("access document: not a valid JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("access document: something follows the document's closing brace: give one JSON object")
	}
	if name := erp.Repeated(data, true); name != "" {
		return nil, fmt.Errorf("access document: %q is given twice: give each field once", name)
	}
	var keys map[string]string
	if len(raw.Keys) > 0 {
		if err := json.Unmarshal(raw.Keys, &keys); err != nil {
			return nil, errors.New(`access document: "keys": want an object of key ids and public keys in base64`)
		}
	}
	if len(keys) == 0 {
		return nil, errors.New(`access document: "keys" names no key`)
	}
	// JSON keeps the last of two equal names without a word: a second key
	// added under the first's id would revoke every token of the first.
	if id := erp.Repeated(raw.Keys, false); id != "" {
		return nil, fmt.Errorf("access document: key id %q is given twice: a key needs an id of its own", id)
	}
	d := &Document{keys: make(map[string]ed25519.PublicKey, len(keys)), anonymous: map[string]bool{}}
	for id, enc := range keys {
		if !validKeyID.MatchString(id) {
			return nil, fmt.Errorf("access document: key id %q: want 1 to 32 letters, digits or -", id)
		}
		key, err := decode(enc, ed25519.PublicKeySize, "an Ed25519 public key")
		if err != nil {
			return nil, fmt.Errorf("access document: key %q: %w", id, err)
		}
		d.keys[id] = key
	}
	// A signature covers the token's id and limits, not its key id: a key
	// under two ids would let a token minted under one pass as the other,
	// and removing one id would then revoke none of its tokens.
	ids := d.KeyIDs()
	for i, a := range ids {
		for _, b := range ids[i+1:] {
			if bytes.Equal(d.keys[a], d.keys[b]) {
				return nil, fmt.Errorf("access document: keys %q and %q are the same public key: a key may be listed under one id only", a, b)
			}
		}
	}
	for i, name := range raw.Anonymous {
		if !erp.ValidInstanceName(name) {
			return nil, fmt.Errorf("access document: anonymous[%d] %q is not a valid instance name", i, name)
		}
		d.anonymous[name] = true
	}
	return d, nil
}

// decode reads a key of size bytes in base64; its errors never quote it.
func decode(s string, size int, what string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if key, err := enc.DecodeString(s); err == nil {
			if len(key) != size {
				return nil, fmt.Errorf("%d bytes; want %s, %d bytes (make token-key)", len(key), what, size)
			}
			return key, nil
		}
	}
	return nil, errors.New("not base64 (make token-key)")
}

// KeyIDs lists the document's key ids, sorted.
func (d *Document) KeyIDs() []string {
	ids := make([]string, 0, len(d.keys))
	for id := range d.keys {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// HoldsDemoKey reports whether the document has DemoKey under any id.
func (d *Document) HoldsDemoKey() bool {
	demo, _ := base64.StdEncoding.DecodeString(DemoKey)
	for _, k := range d.keys {
		if bytes.Equal(k, demo) {
			return true
		}
	}
	return false
}

// Signer mints tokens with one signing key: whoever mints (make token)
// holds it, in a file or a secret the functions cannot read; the access
// document holds its public key under its id.
type Signer struct {
	keyID string
	key   ed25519.PrivateKey
}

type signerJSON struct {
	KeyID      string `json:"key_id"`
	PrivateKey string `json:"private_key"`
}

// NewSigner makes a signing key with a fresh random key pair.
func NewSigner(keyID string) (*Signer, error) {
	if !validKeyID.MatchString(keyID) {
		return nil, fmt.Errorf("key id %q: want 1 to 32 letters, digits or -", keyID)
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("making a key: %w", err)
	}
	return &Signer{keyID: keyID, key: key}, nil
}

// ParseSigner reads a signing key file ({"key_id", "private_key": the
// 32-byte Ed25519 seed in base64}); its errors never quote the key.
func ParseSigner(data []byte) (*Signer, error) {
	var raw signerJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, errors.New(`signing key: not a JSON object of "key_id" and "private_key" (make token-key)`)
	}
	if _, err := dec.Token(); err != io.EOF || erp.Repeated(data, true) != "" {
		return nil, errors.New(`signing key: give one JSON object, each field once (make token-key)`)
	}
	if !validKeyID.MatchString(raw.KeyID) {
		return nil, fmt.Errorf("signing key: key_id %q: want 1 to 32 letters, digits or -", raw.KeyID)
	}
	seed, err := decode(raw.PrivateKey, ed25519.SeedSize, "an Ed25519 private key (its seed)")
	if err != nil {
		return nil, fmt.Errorf("signing key: private_key: %w", err)
	}
	return &Signer{keyID: raw.KeyID, key: ed25519.NewKeyFromSeed(seed)}, nil
}

// JSON is the signing key as its file holds it: a secret.
func (s *Signer) JSON() []byte {
	b, _ := json.MarshalIndent(signerJSON{KeyID: s.keyID, PrivateKey: base64.StdEncoding.EncodeToString(s.key.Seed())}, "", "  ")
	return append(b, '\n')
}

// KeyID is the id the access document holds the public key under.
func (s *Signer) KeyID() string { return s.keyID }

// PublicKey is the public key, in base64 as the access document holds it.
func (s *Signer) PublicKey() string {
	return base64.StdEncoding.EncodeToString(s.key.Public().(ed25519.PublicKey))
}

// Mint makes a token for instance, narrowed by limits, and returns it with
// its id, the handle that revokes it.
func (s *Signer) Mint(instance string, limits erp.Limits) (token, id string, err error) {
	if err := checkLimits(limits); err != nil {
		return "", "", err
	}
	b := make([]byte, idBytes)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("minting a token: %w", err)
	}
	id = hex.EncodeToString(b)
	scope := ""
	if limits.Narrowed() {
		limits.Expires = limits.Expires.UTC()
		data, err := json.Marshal(limits)
		if err != nil {
			return "", "", fmt.Errorf("minting a token: %w", err)
		}
		scope = base64.RawURLEncoding.EncodeToString(data)
		if len(prefix+s.keyID+id+scope)+3+sigLen > MaxTokenLength {
			return "", "", fmt.Errorf("the limits make the token longer than %d characters: name fewer CLAVEs", MaxTokenLength)
		}
	}
	sig := base64.RawURLEncoding.EncodeToString(ed25519.Sign(s.key, message(instance, id, scope)))
	if scope != "" {
		return prefix + s.keyID + "_" + id + "." + scope + "_" + sig, id, nil
	}
	return prefix + s.keyID + "_" + id + "_" + sig, id, nil
}

func checkLimits(l erp.Limits) error {
	for _, c := range l.Claves {
		if c == "" || strings.ContainsAny(c, ", ") {
			return fmt.Errorf("CLAVE %q: want a name without commas or spaces", c)
		}
	}
	return nil
}

// message is what a token's signature signs: the instance, the id and the
// limits as the token spells them.
func message(instance, id, scope string) []byte {
	return []byte(domain + instance + "\n" + id + "\n" + scope)
}

// retired reports whether head, a token less its prefix and its proof, is
// laid out as a retired token's: a key id, then a token id and its limits.
// A proof's length alone would also take a current token cut short whose
// signature holds a "_" at that place (one in 64).
func retired(head string) bool {
	keyID, idScope, _ := strings.Cut(head, "_")
	id, _, _ := strings.Cut(idScope, ".")
	return validKeyID.MatchString(keyID) && erp.ValidTokenID(id)
}

// Verify reports whether token was signed for instance by one of the
// document's keys, and returns its id and limits; ErrRetired for a token of
// the retired kind. Its cost does not depend on the instance, and hardly on
// the token; the limits are decoded only once the signature holds, so a
// stranger's bytes are never parsed.
func (d *Document) Verify(instance, token string) (erp.Grant, error) {
	rest, hasPrefix := strings.CutPrefix(token, prefix)
	n := len(rest) - sigLen - 1
	if hasPrefix && n < 0 || hasPrefix && rest[n] != '_' {
		if r := len(rest) - retiredLen - 1; r > 0 && rest[r] == '_' && retired(rest[:r]) {
			return erp.Grant{}, ErrRetired
		}
	}
	if !hasPrefix || len(token) > MaxTokenLength || n < 0 || rest[n] != '_' {
		return erp.Grant{}, errInvalid
	}
	keyID, idScope, _ := strings.Cut(rest[:n], "_")
	id, scope, limited := strings.Cut(idScope, ".")
	if !erp.ValidTokenID(id) || (limited && scope == "") {
		return erp.Grant{}, errInvalid
	}
	key, known := d.keys[keyID]
	if !known {
		key = spare
	}
	// Strict: the signature's spare bits must be zero, so a token has one
	// spelling.
	sig, err := base64.RawURLEncoding.Strict().DecodeString(rest[n+1:])
	if err != nil || len(sig) != ed25519.SignatureSize || !ed25519.Verify(key, message(instance, id, scope), sig) || !known {
		return erp.Grant{}, errInvalid
	}
	g := erp.Grant{TokenID: id}
	if limited {
		// Limits this gateway does not know refuse the token: a
		// restriction must never be ignored.
		data, err := base64.RawURLEncoding.Strict().DecodeString(scope)
		if err != nil {
			return erp.Grant{}, errInvalid
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if dec.Decode(&g.Limits) != nil || checkLimits(g.Limits) != nil {
			return erp.Grant{}, errInvalid
		}
	}
	return g, nil
}

// Anonymous reports whether instance lets requests in without a token.
func (d *Document) Anonymous(instance string) bool { return d.anonymous[instance] }
