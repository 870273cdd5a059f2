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

// Token layouts: erpgw_<key id>_<token id>_<mac>, and with limits
// erpgw_<key id>_<token id>.<limits>_<mac>. The token id is 128 random bits
// in lower-case hex, the limits JSON in base64url, the MAC 256 bits in
// base64url (which may hold "_", so it comes last, at a fixed length).
const (
	prefix  = "erpgw_"
	idBytes = 16
	macLen  = 43 // base64url of 32 bytes, unpadded
	// domain and domainLimited separate these MACs from any other use of a
	// key.
	domain        = "erpgw token v1\n"
	domainLimited = "erpgw token v2\n"
	// MaxTokenLength bounds what a token's check reads.
	MaxTokenLength = 2048
	// MinKeyBytes is the shortest key accepted: HMAC-SHA256's own size.
	MinKeyBytes = 32
)

var (
	validKeyID = regexp.MustCompile(`^[A-Za-z0-9-]{1,32}$`)
)

// DemoKey is the key of infra/access.demo.json, published with the README's
// demo token: a document that holds it opens every instance to anyone who
// read the README (Options.RefuseDemoKey).
const DemoKey = "rzPh6y3fijkDbr7PxHPvf2VSe0v+puGM/93yQKw6v3k="

// HoldsDemoKey reports whether the document has DemoKey under any id.
func (d *Document) HoldsDemoKey() bool {
	demo, _ := base64.StdEncoding.DecodeString(DemoKey)
	for _, k := range d.keys {
		if hmac.Equal(k, demo) {
			return true
		}
	}
	return false
}

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
// when empty), narrowed by limits, and returns it with its id, the handle
// that revokes it. A token without limits has the first layout, which
// gateways before limits also accept.
func (d *Document) Mint(instance, keyID string, limits erp.Limits) (token, id string, err error) {
	if keyID == "" {
		keyID = d.mintKey
	}
	key, ok := d.keys[keyID]
	if !ok {
		return "", "", fmt.Errorf("no key %q in the access document (it has %s; set mint_key)", keyID, strings.Join(d.KeyIDs(), ", "))
	}
	if err := checkLimits(limits); err != nil {
		return "", "", err
	}
	b := make([]byte, idBytes)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("minting a token: %w", err)
	}
	id = hex.EncodeToString(b)
	if !limits.Narrowed() {
		return prefix + keyID + "_" + id + "_" + base64.RawURLEncoding.EncodeToString(mac(key, instance, id, "")), id, nil
	}
	limits.Expires = limits.Expires.UTC()
	data, err := json.Marshal(limits)
	if err != nil {
		return "", "", fmt.Errorf("minting a token: %w", err)
	}
	scope := base64.RawURLEncoding.EncodeToString(data)
	if len(prefix+keyID+id+scope)+3+macLen > MaxTokenLength {
		return "", "", fmt.Errorf("the limits make the token longer than %d characters: name fewer CLAVEs", MaxTokenLength)
	}
	return prefix + keyID + "_" + id + "." + scope + "_" + base64.RawURLEncoding.EncodeToString(mac(key, instance, id, scope)), id, nil
}

func checkLimits(l erp.Limits) error {
	for _, c := range l.Claves {
		if c == "" || strings.ContainsAny(c, ", ") {
			return fmt.Errorf("CLAVE %q: want a name without commas or spaces", c)
		}
	}
	return nil
}

// mac is the token's proof. A token with limits (scope, as the token spells
// it) has its own domain, so no MAC of one layout is valid in the other.
func mac(key []byte, instance, id, scope string) []byte {
	m := hmac.New(sha256.New, key)
	if scope == "" {
		m.Write([]byte(domain))
	} else {
		m.Write([]byte(domainLimited))
	}
	m.Write([]byte(instance))
	m.Write([]byte{'\n'})
	m.Write([]byte(id))
	if scope != "" {
		m.Write([]byte{'\n'})
		m.Write([]byte(scope))
	}
	return m.Sum(nil)
}

// Verify reports whether token was minted for instance by one of the
// document's keys, and returns its id and limits. Its cost does not depend
// on the instance, and hardly on the token; the limits are decoded only
// once the MAC holds, so a stranger's bytes are never parsed.
func (d *Document) Verify(instance, token string) (erp.Grant, bool) {
	rest, hasPrefix := strings.CutPrefix(token, prefix)
	n := len(rest) - macLen - 1
	if !hasPrefix || len(token) > MaxTokenLength || n < 0 || rest[n] != '_' {
		return erp.Grant{}, false
	}
	keyID, idScope, _ := strings.Cut(rest[:n], "_")
	id, scope, limited := strings.Cut(idScope, ".")
	if !erp.ValidTokenID(id) || (limited && scope == "") {
		return erp.Grant{}, false
	}
	key, known := d.keys[keyID]
	if !known {
		key = d.spare
	}
	// Strict: the MAC's two spare bits must be zero, so a token has one
	// spelling.
	got, err := base64.RawURLEncoding.Strict().DecodeString(rest[n+1:])
	want := mac(key, instance, id, scope)
	if err != nil || !hmac.Equal(got, want) || !known {
		return erp.Grant{}, false
	}
	g := erp.Grant{TokenID: id}
	if limited {
		// Limits this gateway does not know refuse the token: a
		// restriction must never be ignored.
		data, err := base64.RawURLEncoding.Strict().DecodeString(scope)
		if err != nil {
			return erp.Grant{}, false
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if dec.Decode(&g.Limits) != nil || checkLimits(g.Limits) != nil {
			return erp.Grant{}, false
		}
	}
	return g, true
}

// Anonymous reports whether instance lets requests in without a token.
func (d *Document) Anonymous(instance string) bool { return d.anonymous[instance] }
