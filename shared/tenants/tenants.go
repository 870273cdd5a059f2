// Package tenants resolves an instance name to its settings: the instance
// document, read from a local instances file or (in AWS) from Secrets Manager.
package tenants

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/erp-gateway/gateway/shared/erp"
)

// Instance is the instance document (infra/docs/configuration.md#the-instance-document).
type Instance struct {
	erp.Connection
	// RevokedTokens lists the ids of tokens minted for this instance that
	// no longer open it (infra/docs/configuration.md#tokens).
	RevokedTokens []string `json:"revoked_tokens,omitempty"`
	// Idempotency: the instance's database has the idempotency keys' table
	// (make idempotency-sql), so writes may carry an Idempotency-Key.
	Idempotency bool `json:"idempotency,omitempty"`
	// ReadOnly: the document's user may only read, the reads' own user of a
	// deployment that keeps one apart (infra/docs/configuration.md#a-user-for-reads): its health check and the doctor hold it to the reads, and
	// warn of each write it could run.
	ReadOnly bool `json:"read_only,omitempty"`
}

// Revoked reports whether the token with this id was revoked.
func (inst Instance) Revoked(tokenID string) bool {
	return slices.Contains(inst.RevokedTokens, tokenID)
}

// ErrUnknown means no instance has that name.
var ErrUnknown = errors.New("unknown instance")

// ErrMalformed means an instance's document was read and is wrong: a
// mistake of its author, which no retry mends.
var ErrMalformed = errors.New("instance document malformed")

// ParseInstance decodes and checks one instance document. Unknown fields are
// refused so a misspelt setting is not silently ignored.
func ParseInstance(data []byte) (Instance, error) {
	var inst Instance
	if err := retired(data); err != nil {
		return Instance{}, fmt.Errorf("instance document: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&inst); err != nil {
		return Instance{}, fmt.Errorf("instance document: %w", scrub(err))
	}
	// A value pasted twice or appended to would otherwise be read up to
	// its first object, and the change after it dropped without a word.
	if _, err := dec.Token(); err != io.EOF {
		return Instance{}, errors.New("instance document: something follows the document's closing brace: give one JSON object")
	}
	if name := erp.Repeated(data, true); name != "" {
		return Instance{}, fmt.Errorf("instance document: %q is given twice: give each setting once (a list, such as revoked_tokens, holds all its values)", name)
	}
	if err := inst.Connection.Check(); err != nil {
		return Instance{}, fmt.Errorf("instance document: %w", err)
	}
	for i, id := range inst.RevokedTokens {
		// Ids are lower-case hex; one pasted in upper case must still revoke.
		inst.RevokedTokens[i] = strings.ToLower(id)
		if !erp.ValidTokenID(inst.RevokedTokens[i]) {
			return Instance{}, fmt.Errorf("instance document: revoked_tokens[%d] is not a token id (32 hex digits, printed by make token)", i)
		}
	}
	return inst, nil
}

// retired names the settings that moved to the access document, so an old
// document fails with directions instead of "unknown field".
func retired(data []byte) error {
	var fields map[string]json.RawMessage
	if json.Unmarshal(data, &fields) != nil {
		return nil // the decoder below says what is wrong
	}
	if _, ok := fields["tokens"]; ok {
		return errors.New(`"tokens" (token hashes) is retired: tokens are now signed with the access document's keys; mint new ones with make token and drop "tokens" (infra/docs/configuration.md#tokens)`)
	}
	if _, ok := fields["allow_anonymous"]; ok {
		return errors.New(`"allow_anonymous" moved to the access document's "anonymous" list (infra/docs/configuration.md#tokens)`)
	}
	return nil
}

// scrub drops a JSON error's text when it could quote the document (and so
// a password); type and syntax errors name only fields and offsets.
func scrub(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		// Its text quotes the character it stopped at, which may be one
		// of a password's.
		return fmt.Errorf("not valid JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		return err
	}
	if strings.HasPrefix(err.Error(), "json: unknown field") {
		return err
	}
	return errors.New("not a valid JSON object")
}

// File serves the instances of a local instances file: a JSON object mapping
// instance name to instance document.
type File struct {
	instances map[string]Instance
}

// LoadFile reads and checks an instances file.
func LoadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("instances file: %w", err)
	}
	f, err := ParseFile(data)
	if err != nil {
		return nil, fmt.Errorf("instances file %s: %w", path, err)
	}
	return f, nil
}

// ParseFile checks the content of an instances file.
func ParseFile(data []byte) (*File, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, scrub(err)
	}
	if name := erp.Repeated(data, false); name != "" {
		return nil, fmt.Errorf("instance %q is given twice", name)
	}
	f := &File{instances: make(map[string]Instance, len(raw))}
	for name, doc := range raw {
		if !erp.ValidInstanceName(name) {
			return nil, fmt.Errorf("%q is not a valid instance name", name)
		}
		inst, err := ParseInstance(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		f.instances[name] = inst
	}
	return f, nil
}

// Lookup returns the named instance or ErrUnknown.
func (f *File) Lookup(_ context.Context, name string) (Instance, error) {
	inst, ok := f.instances[name]
	if !ok {
		return Instance{}, ErrUnknown
	}
	return inst, nil
}

// Names lists the file's instances, sorted.
func (f *File) Names() []string {
	names := make([]string, 0, len(f.instances))
	for name := range f.instances {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
