package access

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func document(t *testing.T, keys map[string]string, extra string) []byte {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"keys":{`)
	first := true
	for id, key := range keys {
		if !first {
			b.WriteString(",")
		}
		first = false
		fmt.Fprintf(&b, "%q:%q", id, key)
	}
	b.WriteString("}" + extra + "}")
	return []byte(b.String())
}

func newKey(t *testing.T) string {
	t.Helper()
	k, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func parse(t *testing.T, data []byte) *Document {
	t.Helper()
	d, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestVerify(t *testing.T) {
	keyA, keyB := newKey(t), newKey(t)
	d := parse(t, document(t, map[string]string{"a": keyA, "b": keyB}, `,"mint_key":"a"`))
	other := parse(t, document(t, map[string]string{"a": newKey(t)}, ""))

	token, id, err := d.Mint("acme", "")
	if err != nil {
		t.Fatal(err)
	}
	tokenB, idB, err := d.Mint("acme", "b")
	if err != nil {
		t.Fatal(err)
	}
	foreign, _, _ := other.Mint("acme", "")
	flip := []byte(token)
	flip[len(flip)-2] ^= 1
	rest := strings.TrimPrefix(token, "erpgw_a_")

	tests := []struct {
		name, instance, token string
		wantID                string
	}{
		{"minted for it", "acme", token, id},
		{"the second key", "acme", tokenB, idB},
		{"another instance", "acme2", token, ""},
		{"a name differing in case", "ACME", token, ""},
		{"another document's key", "acme", foreign, ""},
		{"a changed MAC", "acme", string(flip), ""},
		{"relabelled to the other key", "acme", "erpgw_b_" + rest, ""},
		{"an unknown key id", "acme", "erpgw_z_" + rest, ""},
		{"upper-case id", "acme", "erpgw_a_" + strings.ToUpper(id) + rest[32:], ""},
		{"no prefix", "acme", strings.TrimPrefix(token, "erpgw_"), ""},
		{"truncated", "acme", token[:len(token)-1], ""},
		{"empty", "acme", "", ""},
		{"only the prefix", "acme", "erpgw_", ""},
		{"a legacy random token", "acme", "erpgw_demo-token-for-local-use-only", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotID, ok := d.Verify(tt.instance, tt.token)
			if ok != (tt.wantID != "") || gotID != tt.wantID {
				t.Fatalf("Verify = %q, %v; want %q", gotID, ok, tt.wantID)
			}
		})
	}
	if !regexp.MustCompile(`^erpgw_a_[0-9a-f]{32}_[A-Za-z0-9_-]{43}$`).MatchString(token) {
		t.Fatalf("token layout: %s", token)
	}
}

func TestParse(t *testing.T) {
	key := newKey(t)
	tests := []struct {
		name, doc, wantErr string
	}{
		{"no keys", `{"keys":{}}`, `"keys" names no key`},
		{"short key", `{"keys":{"a":"c2hvcnQ="}}`, `key "a": 5 bytes`},
		{"not base64", `{"keys":{"a":"%%%"}}`, `key "a": not base64`},
		{"bad key id", `{"keys":{"a_b":"` + key + `"}}`, `key id "a_b"`},
		{"mint key missing", `{"keys":{"a":"` + key + `"},"mint_key":"b"}`, `mint_key "b"`},
		{"bad anonymous name", `{"keys":{"a":"` + key + `"},"anonymous":["a/b"]}`, `anonymous[0]`},
		{"unknown field", `{"keys":{"a":"` + key + `"},"anonymus":[]}`, `unknown field "anonymus"`},
		{"not an object", `[]`, `access document`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got %v, want %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), key) {
				t.Fatal("the error quotes a key")
			}
		})
	}
	d := parse(t, []byte(`{"keys":{"a":"`+key+`","b":"`+newKey(t)+`"}}`))
	if _, _, err := d.Mint("x", ""); err == nil {
		t.Fatal("minted without a mint_key among two keys")
	}
}

func TestAuthorize(t *testing.T) {
	d := parse(t, document(t, map[string]string{"k": newKey(t)}, `,"anonymous":["open"]`))
	c := Static(d)
	token, id, _ := d.Mint("acme", "")
	tests := []struct {
		name, instance string
		header         []string
		ok             bool
	}{
		{"bearer", "acme", []string{"Bearer " + token}, true},
		{"scheme in lower case", "acme", []string{"bearer " + token}, true},
		{"no header", "acme", nil, false},
		{"basic", "acme", []string{"Basic " + token}, false},
		{"no scheme", "acme", []string{token}, false},
		{"two headers, both right", "acme", []string{"Bearer " + token, "Bearer " + token}, false},
		{"two headers, one right", "acme", []string{"Bearer x", "Bearer " + token}, false},
		{"anonymous instance, no header", "open", nil, true},
		{"anonymous instance, any header", "open", []string{"Basic dXNlcg=="}, true},
		{"anonymous instance, two headers", "open", []string{"Bearer a", "Bearer b"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotID, ok := c.Authorize(tt.instance, tt.header)
			if ok != tt.ok || (ok && tt.instance == "acme" && gotID != id) {
				t.Fatalf("Authorize = %q, %v", gotID, ok)
			}
		})
	}
}

// TestCurrentRereads: a key added to the document reaches a running
// environment after the interval, by time only; a failed re-read keeps the
// document in force.
func TestCurrentRereads(t *testing.T) {
	old, added := newKey(t), newKey(t)
	var doc atomic.Pointer[[]byte]
	var loads atomic.Int64
	set := func(b []byte) { doc.Store(&b) }
	set(document(t, map[string]string{"old": old}, ""))
	load := func(context.Context) ([]byte, error) {
		loads.Add(1)
		b := doc.Load()
		if b == nil {
			return nil, errors.New("secret unreadable")
		}
		return *b, nil
	}
	c, err := Start(context.Background(), load, 50*time.Millisecond, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	next := parse(t, document(t, map[string]string{"old": old, "new": added}, `,"mint_key":"new"`))
	token, _, _ := next.Mint("acme", "")
	set(document(t, map[string]string{"old": old, "new": added}, ""))
	for range 100 {
		c.Authorize("acme", []string{"Bearer " + token})
	}
	if n := loads.Load(); n != 1 {
		t.Fatalf("%d loads before the interval", n)
	}
	time.Sleep(60 * time.Millisecond)
	deadline := time.Now().Add(2 * time.Second)
	for {
		if _, ok := c.Authorize("acme", []string{"Bearer " + token}); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the added key never took effect")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := loads.Load(); n != 2 {
		t.Fatalf("%d loads, want 2", n)
	}
	doc.Store(nil)
	time.Sleep(60 * time.Millisecond)
	c.Document()
	time.Sleep(20 * time.Millisecond)
	if _, ok := c.Authorize("acme", []string{"Bearer " + token}); !ok {
		t.Fatal("a failed re-read dropped the document in force")
	}
	if _, err := Start(context.Background(), load, time.Minute, slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("started without a document")
	}
}

// BenchmarkVerify is what every request pays before any per-instance work.
func BenchmarkVerify(b *testing.B) {
	key, _ := NewKey()
	d, _ := Parse([]byte(`{"keys":{"k":"` + key + `"}}`))
	token, _, _ := d.Mint("acme", "")
	for b.Loop() {
		d.Verify("acme", token)
	}
}
