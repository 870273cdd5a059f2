// Package access decides, before any per-instance work, whether a request's
// credentials can open an instance. Tokens carry their own proof: a MAC over
// the instance name, made with a key of the access document, which every
// execution environment reads at start-up and again every few minutes. A request whose token does not
// hold for the name it asks for is refused without a lookup, a cache entry or
// a connection, whether that name exists or not.
package access

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/erp-gateway/gateway/shared/erp"
)

// Token layout: erpgw_<key id>_<token id>_<mac>. The token id is 128 random
// bits in lower-case hex, the MAC 256 bits in base64url (which may hold "_",
// so it comes last and the split stops before it).
const (
	prefix  = "erpgw_"
	idBytes = 16
	macLen  = 43 // base64url of 32 bytes, unpadded
	// domain separates these MACs from any other use of a key.
	domain = "erpgw token v1\n"
	// MinKeyBytes is the shortest key accepted: HMAC-SHA256's own size.
	MinKeyBytes = 32
)

var (
	validKeyID = regexp.MustCompile(`^[A-Za-z0-9-]{1,32}$`)
)

// Document is the access document (README, "Tokens"). It is safe for
// concurrent use: nothing changes it after Parse.
type Document struct {
	keys      map[string][]byte
	mintKey   string
	anonymous map[string]bool
	// spare stands in for an unknown key id, so a token naming one costs the
	// same MAC as any other.
	spare []byte
}

type documentJSON struct {
	Keys      map[string]string `json:"keys"`
	MintKey   string            `json:"mint_key"`
	Anonymous []string          `json:"anonymous"`
}

// Parse checks an access document. Its errors never quote a key.
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
	d := &Document{keys: make(map[string][]byte, len(raw.Keys)), mintKey: raw.MintKey, anonymous: map[string]bool{}}
	if len(raw.Keys) == 0 {
		return nil, errors.New(`access document: "keys" names no key`)
	}
	for id, enc := range raw.Keys {
		if !validKeyID.MatchString(id) {
			return nil, fmt.Errorf("access document: key id %q: want 1 to 32 letters, digits or -", id)
		}
		key, err := decodeKey(enc)
		if err != nil {
			return nil, fmt.Errorf("access document: key %q: %w", id, err)
		}
		d.keys[id] = key
	}
	if d.mintKey == "" && len(d.keys) == 1 {
		for id := range d.keys {
			d.mintKey = id
		}
	}
	if _, ok := d.keys[d.mintKey]; !ok && d.mintKey != "" {
		return nil, fmt.Errorf("access document: mint_key %q is not one of the keys", d.mintKey)
	}
	for i, name := range raw.Anonymous {
		if !erp.ValidInstanceName(name) {
			return nil, fmt.Errorf("access document: anonymous[%d] %q is not a valid instance name", i, name)
		}
		d.anonymous[name] = true
	}
	d.spare = make([]byte, MinKeyBytes)
	return d, nil
}

func decodeKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if key, err := enc.DecodeString(s); err == nil {
			if len(key) < MinKeyBytes {
				return nil, fmt.Errorf("%d bytes; want at least %d (make token-key)", len(key), MinKeyBytes)
			}
			return key, nil
		}
	}
	return nil, errors.New("not base64 (make token-key)")
}

// NewKey returns a fresh random key, base64-encoded as the document holds it.
func NewKey() (string, error) {
	b := make([]byte, MinKeyBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making a key: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
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

// Mint makes a token for instance with key keyID (the document's mint_key
// when empty) and returns it with its id, the handle that revokes it.
func (d *Document) Mint(instance, keyID string) (token, id string, err error) {
	if keyID == "" {
		keyID = d.mintKey
	}
	key, ok := d.keys[keyID]
	if !ok {
		return "", "", fmt.Errorf("no key %q in the access document (it has %s; set mint_key)", keyID, strings.Join(d.KeyIDs(), ", "))
	}
	b := make([]byte, idBytes)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("minting a token: %w", err)
	}
	id = hex.EncodeToString(b)
	return prefix + keyID + "_" + id + "_" + base64.RawURLEncoding.EncodeToString(mac(key, instance, id)), id, nil
}

func mac(key []byte, instance, id string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(domain))
	m.Write([]byte(instance))
	m.Write([]byte{'\n'})
	m.Write([]byte(id))
	return m.Sum(nil)
}

// Verify reports whether token was minted for instance by one of the
// document's keys, and returns its id. Its cost does not depend on the
// instance, and hardly on the token.
func (d *Document) Verify(instance, token string) (id string, ok bool) {
	rest, hasPrefix := strings.CutPrefix(token, prefix)
	parts := strings.SplitN(rest, "_", 3)
	if !hasPrefix || len(parts) != 3 || !erp.ValidTokenID(parts[1]) || len(parts[2]) != macLen {
		return "", false
	}
	key, known := d.keys[parts[0]]
	if !known {
		key = d.spare
	}
	// Strict: the MAC's two spare bits must be zero, so a token has one
	// spelling.
	got, err := base64.RawURLEncoding.Strict().DecodeString(parts[2])
	want := mac(key, instance, parts[1])
	if err != nil || !hmac.Equal(got, want) || !known {
		return "", false
	}
	return parts[1], true
}

// Anonymous reports whether instance lets requests in without a token.
func (d *Document) Anonymous(instance string) bool { return d.anonymous[instance] }
