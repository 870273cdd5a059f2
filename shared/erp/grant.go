package erp

import (
	"slices"
	"strings"
	"time"
)

// Limits narrow what a token may do on the instance it opens. The zero
// Limits narrow nothing: tokens minted before limits existed keep every
// right.
type Limits struct {
	// ReadOnly: only reads (executequery).
	ReadOnly bool `json:"read_only,omitempty"`
	// Claves, when not empty, are the only operations the token may run.
	Claves []string `json:"claves,omitempty"`
	// Expires, when not zero, is the instant the token stops opening
	// anything.
	Expires time.Time `json:"expires,omitzero"`
}

// Narrowed reports whether l limits anything.
func (l Limits) Narrowed() bool { return l.ReadOnly || len(l.Claves) > 0 || !l.Expires.IsZero() }

// Grant is what an authorized request may do: its token's id ("" for an
// anonymous instance, which has no token) and that token's limits.
type Grant struct {
	TokenID string
	Limits
}

// Expired refuses a token whose expiry has passed at now.
func (l Limits) Expired(now time.Time) *Error {
	if l.Expires.IsZero() || now.Before(l.Expires) {
		return nil
	}
	return Refuse(CodeTokenExpired, "this token expired at %s; ask the instance's operator for a new one", l.Expires.UTC().Format(time.RFC3339))
}

// Allow refuses an operation the limits exclude, naming it: the caller has
// proved it holds a token for the instance, so saying so leaks nothing.
func (l Limits) Allow(clave string, write bool) *Error {
	switch {
	case write && l.ReadOnly:
		return Refuse(CodeOutOfScope, "this token may not run CLAVE %s: it is limited to reads", clave)
	case len(l.Claves) > 0 && !slices.Contains(l.Claves, clave):
		return Refuse(CodeOutOfScope, "this token may not run CLAVE %s: it is limited to %s", clave, strings.Join(l.Claves, ", "))
	}
	return nil
}

// Unauthorized is the one refusal of a request whose credentials do not
// open the instance, for whatever reason (infra/docs/configuration.md#tokens): a caller must
// not learn which instance names exist or why a token failed.
func Unauthorized() *Error {
	return &Error{Code: CodeUnauthorized, Message: "missing or invalid credentials for this instance: send Authorization: Bearer <token>"}
}
