package erp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

var (
	validInstance = regexp.MustCompile(InstanceNamePattern)
	validTokenID  = regexp.MustCompile(fmt.Sprintf(`^[0-9a-f]{%d}$`, TokenIDLength))
)

// InstanceNamePattern is the rule for instance names, for documents that
// state it (OpenAPI).
const InstanceNamePattern = `^[A-Za-z0-9_-]{1,64}$`

// InstanceNameRule says InstanceNamePattern in words, for messages.
const InstanceNameRule = "1 to 64 letters, digits, _ or -"

// ValidInstanceName reports whether name may name an instance: letters,
// digits, _ and -, at most 64. Names are checked before any lookup uses them.
func ValidInstanceName(name string) bool { return validInstance.MatchString(name) }

// TokenIDLength is a token id's length: 128 bits in hex.
const TokenIDLength = 32

// ValidTokenID reports whether s is a token id as tokens carry it: 128 bits
// in lower-case hex. Logs and revocation lists name tokens by it.
func ValidTokenID(s string) bool { return validTokenID.MatchString(s) }

// MaxKeyLength is the longest Idempotency-Key accepted.
const MaxKeyLength = 255

// ValidKey reports whether k may be an Idempotency-Key: 1 to MaxKeyLength
// printable ASCII characters (space included, as the IETF draft's sf-string).
func ValidKey(k string) bool {
	if len(k) == 0 || len(k) > MaxKeyLength {
		return false
	}
	for i := range len(k) {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// Repeated returns a member name the JSON object obj gives more than once,
// or "" (also when obj is no object). Go's decoder keeps the last of them
// without a word: in a document an operator edits (an instance's, the
// access document) the first, a revocation say, would be lost. fold
// compares names as the decoder matches struct fields, in any case.
func Repeated(obj []byte, fold bool) string {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return ""
		}
		name, _ := t.(string)
		key := name
		if fold {
			key = strings.ToLower(name)
		}
		if seen[key] {
			return name
		}
		seen[key] = true
		var value json.RawMessage
		if dec.Decode(&value) != nil {
			return ""
		}
	}
	return ""
}
