package tenants

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// hashPrefix marks a token hash in an instance document. Tokens are 256
// random bits, so a plain SHA-256 is enough: there is nothing to brute-force.
const hashPrefix = "sha256:"

// NewToken mints a bearer token: "erpgw_" and 43 characters of base64url.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("minting a token: %w", err)
	}
	return "erpgw_" + base64.RawURLEncoding.EncodeToString(b), nil
}

// HashToken is what an instance document stores for a token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hashPrefix + hex.EncodeToString(sum[:])
}

func checkTokenHashes(hashes []string) error {
	for i, h := range hashes {
		raw, ok := strings.CutPrefix(h, hashPrefix)
		if b, err := hex.DecodeString(raw); !ok || err != nil || len(b) != sha256.Size {
			return fmt.Errorf("tokens[%d] is not a sha256:<64 hex digits> hash (store the hash, never the token)", i)
		}
	}
	return nil
}

// Authorize reports whether an Authorization header opens the instance. Every
// stored hash is compared, in constant time, whatever matches first.
func (inst Instance) Authorize(header string) bool {
	if inst.AllowAnonymous {
		return true
	}
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return false
	}
	presented := []byte(HashToken(strings.TrimSpace(token)))
	match := 0
	for _, h := range inst.Tokens {
		match |= subtle.ConstantTimeCompare(presented, []byte(h))
	}
	return match == 1
}
