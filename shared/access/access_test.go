package access

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/erp"
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

// newKey makes a signing key with id and returns it with its public key.
func newKey(t testing.TB, id string) (*Signer, string) {
	t.Helper()
	k, err := NewSigner(id)
	if err != nil {
		t.Fatal(err)
	}
	return k, k.PublicKey()
}

func mint(t testing.TB, k *Signer, instance string, l erp.Limits) (string, string) {
	t.Helper()
	token, id, err := k.Mint(instance, l)
	if err != nil {
		t.Fatal(err)
	}
	return token, id
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
	a, keyA := newKey(t, "a")
	b, keyB := newKey(t, "b")
	d := parse(t, document(t, map[string]string{"a": keyA, "b": keyB}, ""))
	stranger, _ := newKey(t, "a")

	token, id := mint(t, a, "acme", erp.Limits{})
	tokenB, idB := mint(t, b, "acme", erp.Limits{})
	foreign, _ := mint(t, stranger, "acme", erp.Limits{})
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
		{"another signing key under the same id", "acme", foreign, ""},
		{"a changed signature", "acme", string(flip), ""},
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
			g, err := d.Verify(tt.instance, tt.token)
			if (err == nil) != (tt.wantID != "") || g.TokenID != tt.wantID || g.Narrowed() || errors.Is(err, ErrRetired) {
				t.Fatalf("Verify = %+v, %v; want %q", g, err, tt.wantID)
			}
		})
	}
	if !regexp.MustCompile(`^erpgw_a_[0-9a-f]{32}_[A-Za-z0-9_-]{86}$`).MatchString(token) {
		t.Fatalf("token layout: %s", token)
	}
	// A token of the retired kind (a shared key's HMAC) is told apart, so
	// its holder can be told what to do.
	for _, old := range []string{
		"erpgw_demo_8c04364041cbd740c97a63c0a3cff7cc_wLuaA3CSqmMyxAShB7x4f-G3dTF7S1-E-II8m9kYlRY",
		"erpgw_k_8c04364041cbd740c97a63c0a3cff7cc.eyJyZWFkX29ubHkiOnRydWV9_wLuaA3CSqmMyxAShB7x4f-G3dTF7S1-E-II8m9kYlRY",
	} {
		if _, err := d.Verify("acme", old); !errors.Is(err, ErrRetired) {
			t.Errorf("%s: %v, want ErrRetired", old, err)
		}
	}
	// Whoever holds only the document cannot sign: it has no private key.
	if strings.Contains(string(document(t, map[string]string{"a": keyA}, "")), string(a.JSON())) {
		t.Fatal("the document holds the signing key")
	}
}

func TestParse(t *testing.T) {
	_, key := newKey(t, "a")
	_, keyB := newKey(t, "b")
	tests := []struct {
		name, doc, wantErr string
	}{
		{"no keys", `{"keys":{}}`, `"keys" names no key`},
		{"short key", `{"keys":{"a":"c2hvcnQ="}}`, `key "a": 5 bytes; want an Ed25519 public key, 32 bytes`},
		{"not base64", `{"keys":{"a":"%%%"}}`, `key "a": not base64`},
		{"bad key id", `{"keys":{"a_b":"` + key + `"}}`, `key id "a_b"`},
		{"a mint key, which documents no longer hold", `{"keys":{"a":"` + key + `"},"mint_key":"a"}`, `unknown field "mint_key"`},
		{"bad anonymous name", `{"keys":{"a":"` + key + `"},"anonymous":["a/b"]}`, `anonymous[0]`},
		{"unknown field", `{"keys":{"a":"` + key + `"},"anonymus":[]}`, `unknown field "anonymus"`},
		{"not an object", `[]`, `access document`},
		// Else a token minted under demo would pass as erpgw_alias_...,
		// and removing demo would revoke none of its tokens.
		{"one key under two ids", `{"keys":{"demo":"` + key + `","alias":"` + key + `"}}`, `keys "alias" and "demo" are the same public key`},
		// Else the second would silently replace the first, whose tokens
		// would all be refused.
		{"one id twice", `{"keys":{"2027-05":"` + key + `","2027-05":"` + keyB + `"}}`, `key id "2027-05" is given twice`},
		{"keys not an object", `{"keys":["` + key + `"]}`, `"keys": want an object`},
		{"keys null", `{"keys":null}`, `"keys" names no key`},
		{"keys twice", `{"keys":{"a":"` + key + `"},"Keys":{}}`, `"Keys" is given twice`},
		{"two documents", `{"keys":{"a":"` + key + `"}}{"keys":{"b":"` + keyB + `"}}`, "something follows the document's closing brace"},
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
}

func TestParseSigner(t *testing.T) {
	k, _ := newKey(t, "2026-11")
	again, err := ParseSigner(k.JSON())
	if err != nil || again.KeyID() != "2026-11" || again.PublicKey() != k.PublicKey() {
		t.Fatalf("ParseSigner(JSON()) = %v, %v", again, err)
	}
	seed := base64.StdEncoding.EncodeToString(k.key.Seed())
	for _, tt := range []struct{ name, data, wantErr string }{
		{"an access document", `{"keys":{"a":"` + k.PublicKey() + `"}}`, "not a JSON object"},
		{"a bad key id", `{"key_id":"a_b","private_key":"` + seed + `"}`, `key_id "a_b"`},
		{"a short key", `{"key_id":"a","private_key":"c2hvcnQ="}`, "5 bytes"},
		{"not base64", `{"key_id":"a","private_key":"%%%"}`, "not base64"},
		{"two keys", `{"key_id":"a","private_key":"` + seed + `"}{"key_id":"b","private_key":"` + seed + `"}`, "give one JSON object, each field once"},
		{"a field twice", `{"key_id":"a","private_key":"` + seed + `","key_id":"b"}`, "give one JSON object, each field once"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSigner([]byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), seed) {
				t.Fatalf("got %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestAuthorize(t *testing.T) {
	k, key := newKey(t, "k")
	d := parse(t, document(t, map[string]string{"k": key}, `,"anonymous":["open"]`))
	c := Static(d)
	token, id := mint(t, k, "acme", erp.Limits{})
	expired, expiredID := mint(t, k, "acme", erp.Limits{ReadOnly: true, Expires: time.Now().Add(-time.Second)})
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
			g, refused := c.Authorize(context.Background(), tt.instance, tt.header)
			if (refused == nil) != tt.ok || (tt.ok && tt.instance == "acme" && g.TokenID != id) {
				t.Fatalf("Authorize = %+v, %v", g, refused)
			}
			if refused != nil && *refused != *erp.Unauthorized() {
				t.Fatalf("refused with %v, want the one 401", refused)
			}
		})
	}
	g, refused := c.Authorize(context.Background(), "acme", []string{"Bearer " + expired})
	if refused == nil || refused.Code != erp.CodeTokenExpired || !strings.Contains(refused.Message, "expired at") || g.TokenID != expiredID {
		t.Fatalf("an expired token: %+v, %v", g, refused)
	}
	// A token of the retired kind: the one 401, saying what to do, the same
	// for every instance.
	for _, instance := range []string{"acme", "nadie"} {
		_, refused := c.Authorize(context.Background(), instance, []string{"Bearer erpgw_demo_8c04364041cbd740c97a63c0a3cff7cc_wLuaA3CSqmMyxAShB7x4f-G3dTF7S1-E-II8m9kYlRY"})
		if refused == nil || refused.Code != erp.CodeUnauthorized || !strings.Contains(refused.Message, "ask the instance's operator for a new one") {
			t.Fatalf("%s, a retired token: %v", instance, refused)
		}
	}
}

// TestLimitedTokens: limits travel under the signature; changing them, or
// moving a signature between layouts, opens nothing, and limits this gateway does
// not know refuse the token.
func TestLimitedTokens(t *testing.T) {
	k, key := newKey(t, "k")
	d := parse(t, document(t, map[string]string{"k": key}, ""))
	at := time.Date(2027, 7, 1, 0, 0, 0, 0, time.UTC)
	limits := erp.Limits{ReadOnly: true, Claves: []string{"Get_Inventario_Precio", "Get_Terceros"}, Expires: at}
	token, id := mint(t, k, "acme", limits)
	if !regexp.MustCompile(`^erpgw_k_[0-9a-f]{32}\.[A-Za-z0-9_-]+_[A-Za-z0-9_-]{86}$`).MatchString(token) {
		t.Fatalf("token layout: %s", token)
	}
	g, err := d.Verify("acme", token)
	if err != nil || g.TokenID != id || !g.ReadOnly || !slices.Equal(g.Claves, limits.Claves) || !g.Expires.Equal(at) {
		t.Fatalf("Verify = %+v, %v", g, err)
	}

	n := len(token) - sigLen - 1
	head, tail := token[:n], token[n:]
	idScope := strings.TrimPrefix(head, "erpgw_k_")
	scope := idScope[len(id)+1:]
	sign := func(scope string) string {
		return base64.RawURLEncoding.EncodeToString(ed25519.Sign(k.key, message("acme", id, scope)))
	}
	// resign makes a token with scope text the key really signed, as a
	// minter of another gateway version would.
	resign := func(scopeJSON string) string {
		s := base64.RawURLEncoding.EncodeToString([]byte(scopeJSON))
		return "erpgw_k_" + id + "." + s + "_" + sign(s)
	}
	wider := base64.RawURLEncoding.EncodeToString([]byte(`{"read_only":false}`))
	tests := []struct {
		name, token string
		ok          bool
	}{
		{"as minted", token, true},
		{"limits widened", "erpgw_k_" + id + "." + wider + tail, false},
		{"limits dropped", "erpgw_k_" + id + tail, false},
		{"an empty scope", "erpgw_k_" + id + "." + tail, false},
		{"the unlimited signature with limits", "erpgw_k_" + id + "." + scope + "_" + sign(""), false},
		{"signed limits", resign(`{"read_only":true}`), true},
		{"a limit this gateway does not know", resign(`{"read_only":true,"ip":"10.0.0.0/8"}`), false},
		{"limits that are not JSON", resign(`read_only`), false},
		{"a CLAVE list with a comma", resign(`{"claves":["a,b"]}`), false},
		{"too long", "erpgw_k_" + id + "." + strings.Repeat("A", MaxTokenLength) + tail, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := d.Verify("acme", tt.token); (err == nil) != tt.ok {
				t.Fatalf("Verify = %v, want ok %v", err, tt.ok)
			}
		})
	}
	if _, err := d.Verify("acme2", token); err == nil {
		t.Fatal("a limited token opened another instance")
	}
	if _, _, err := k.Mint("acme", erp.Limits{Claves: []string{strings.Repeat("C", 63)}}); err != nil {
		t.Fatal(err)
	}
	many := make([]string, 40)
	for i := range many {
		many[i] = fmt.Sprintf("%s%02d", strings.Repeat("C", 61), i)
	}
	if _, _, err := k.Mint("acme", erp.Limits{Claves: many}); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("40 long CLAVEs: %v", err)
	}
}

// clock is a test's time, moved by the test.
type clock struct{ at atomic.Int64 }

func (c *clock) now() time.Time       { return time.Unix(0, c.at.Load()) }
func (c *clock) move(d time.Duration) { c.at.Add(int64(d)) }
func newClock() *clock {
	c := &clock{}
	c.at.Store(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}

// source is an access document that a test changes, breaks or silences,
// counting reads.
type source struct {
	doc   atomic.Pointer[[]byte]
	fail  atomic.Bool
	reads atomic.Int64
}

func (s *source) set(b []byte) { s.doc.Store(&b) }

func (s *source) load(context.Context) ([]byte, error) {
	s.reads.Add(1)
	if s.fail.Load() {
		return nil, errors.New("secret unreadable")
	}
	return *s.doc.Load(), nil
}

// TestCurrentRereads: a key added to the document reaches a running
// environment after the interval, by time only; a failed re-read keeps the
// document in force.
func TestCurrentRereads(t *testing.T) {
	_, old := newKey(t, "old")
	k, added := newKey(t, "new")
	var src source
	src.set(document(t, map[string]string{"old": old}, ""))
	// The test's clock: a busy machine (the race detector, CI) must not
	// pass the interval while the test means to stay within it.
	clk := newClock()
	c, err := Start(context.Background(), src.load, Options{Every: time.Minute, Now: clk.now}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	settle := func() {
		for c.docs.Fetching(struct{}{}) {
			time.Sleep(time.Millisecond)
		}
	}
	token, _ := mint(t, k, "acme", erp.Limits{})
	src.set(document(t, map[string]string{"old": old, "new": added}, ""))
	authorize := func() *erp.Error {
		_, refused := c.Authorize(context.Background(), "acme", []string{"Bearer " + token})
		return refused
	}
	for range 100 {
		authorize()
	}
	if n := src.reads.Load(); n != 1 {
		t.Fatalf("%d loads before the interval", n)
	}
	clk.move(time.Minute + time.Second)
	deadline := time.Now().Add(2 * time.Second)
	for authorize() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the added key never took effect")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := src.reads.Load(); n != 2 {
		t.Fatalf("%d loads, want 2", n)
	}
	src.fail.Store(true)
	clk.move(time.Minute + time.Second)
	c.Document(context.Background())
	settle()
	if n := src.reads.Load(); n != 3 {
		t.Fatalf("%d loads, want a third (failing) one", n)
	}
	if refused := authorize(); refused != nil {
		t.Fatalf("a failed re-read dropped the document in force: %v", refused)
	}
}

// TestKeyRemovalHasABound: an environment that cannot read the document
// refuses every token once its last good read is older than MaxAge, waits
// for at most one read per Retry while it does, and serves again at the
// first good read. A malformed document refuses at once, in a running
// environment as in a new one.
func TestKeyRemovalHasABound(t *testing.T) {
	k, key := newKey(t, "k")
	good := document(t, map[string]string{"k": key}, "")
	token, _ := mint(t, k, "acme", erp.Limits{})
	clk := newClock()
	o := Options{Every: 5 * time.Minute, MaxAge: time.Hour, Retry: 5 * time.Second, Now: clk.now}
	var src source
	src.set(good)
	c, err := Start(context.Background(), src.load, o, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	code := func() erp.Code {
		_, refused := c.Authorize(context.Background(), "acme", []string{"Bearer " + token})
		if refused == nil {
			return 0
		}
		if refused.Code == erp.CodeAccessStale && refused.RetryAfter != o.Retry {
			t.Fatalf("Retry-After %s", refused.RetryAfter)
		}
		return refused.Code
	}
	// settle lets a background read finish.
	settle := func() {
		for c.docs.Fetching(struct{}{}) {
			time.Sleep(time.Millisecond)
		}
	}

	src.fail.Store(true)
	for clk.now().Sub(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)) < time.Hour {
		if got := code(); got != 0 {
			t.Fatalf("refused %d at %s, within the bound", got, clk.now())
		}
		settle()
		clk.move(time.Minute)
	}
	if n := src.reads.Load(); n < 10 || n > 13 {
		t.Fatalf("%d reads in an hour, want one per 5 minutes", n)
	}
	clk.move(time.Second)
	if got := code(); got != erp.CodeAccessStale {
		t.Fatalf("past the bound: %d", got)
	}
	reads := src.reads.Load()
	for range 1000 {
		if got := code(); got != erp.CodeAccessStale {
			t.Fatalf("past the bound: %d", got)
		}
	}
	if n := src.reads.Load() - reads; n != 0 {
		t.Fatalf("1,000 refused requests within Retry made %d reads", n)
	}
	clk.move(o.Retry)
	src.fail.Store(false)
	if got := code(); got != 0 {
		t.Fatalf("after a good read: %d", got)
	}

	// Malformed: refused at once, not at the bound.
	src.set([]byte(`{"keys":{}}`))
	clk.move(o.Every + time.Second)
	code()
	settle()
	if got := code(); got != erp.CodeAccessStale {
		t.Fatalf("a malformed document in a running environment: %d", got)
	}
	fresh, err := Start(context.Background(), src.load, o, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("a new environment with a malformed document: %v", err)
	}
	if _, refused := fresh.Authorize(context.Background(), "acme", []string{"Bearer " + token}); refused == nil || refused.Code != erp.CodeAccessStale {
		t.Fatalf("a malformed document in a new environment: %v", refused)
	}
	src.set(good)
	clk.move(o.Retry)
	for _, cur := range []*Current{c, fresh} {
		if _, refused := cur.Authorize(context.Background(), "acme", []string{"Bearer " + token}); refused != nil {
			t.Fatalf("the mended document: %v", refused)
		}
	}
	// A source read once must be readable at start.
	if _, err := Start(context.Background(), src.load, Options{}, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	src.fail.Store(true)
	if _, err := Start(context.Background(), src.load, Options{}, slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("a document read once started unread")
	}
}

// TestStaleWaitsForOneRead: requests arriving while the document cannot be
// trusted share one read, and a request that goes away stops waiting.
func TestStaleWaitsForOneRead(t *testing.T) {
	k, key := newKey(t, "k")
	good := document(t, map[string]string{"k": key}, "")
	token, _ := mint(t, k, "acme", erp.Limits{})
	var src source
	src.set(good)
	src.fail.Store(true)
	release := make(chan struct{})
	slow := func(ctx context.Context) ([]byte, error) {
		<-release
		return src.load(ctx)
	}
	clk := newClock()
	c, err := Start(context.Background(), func(ctx context.Context) ([]byte, error) { return src.load(ctx) }, Options{Every: time.Minute, Now: clk.now}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	c.load = slow
	src.fail.Store(false)
	clk.move(DefaultRetry)
	var wg sync.WaitGroup
	var refusedN atomic.Int64
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, refused := c.Authorize(context.Background(), "acme", []string{"Bearer " + token}); refused != nil {
				refusedN.Add(1)
			}
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, refused := c.Authorize(ctx, "acme", []string{"Bearer " + token}); refused == nil || refused.Code != erp.CodeAccessStale {
		t.Fatalf("a request that went away: %v", refused)
	}
	close(release)
	wg.Wait()
	if n := src.reads.Load(); n != 2 || refusedN.Load() != 0 {
		t.Fatalf("%d reads (want the start's and one), %d refused", n, refusedN.Load())
	}
}

// FuzzVerify: any token, for any instance, is refused or is exactly a token
// that was minted for that instance, never a panic: a token has one
// spelling, and its limits are those it was minted with.
func FuzzVerify(f *testing.F) {
	k, key := newKey(f, "k")
	d, err := Parse([]byte(`{"keys":{"k":"` + key + `"}}`))
	if err != nil {
		f.Fatal(err)
	}
	limits := erp.Limits{ReadOnly: true, Claves: []string{"Get_Terceros"}, Expires: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	plain, _ := mint(f, k, "acme", erp.Limits{})
	limited, _ := mint(f, k, "acme", limits)
	minted := map[string]erp.Limits{plain: {}, limited: limits}
	for _, token := range []string{plain, limited, plain[:len(plain)-1], "erpgw_k__", "erpgw_" + strings.Repeat("_", 100), ""} {
		f.Add("acme", token)
		f.Add("other", token)
	}
	f.Fuzz(func(t *testing.T, instance, token string) {
		g, err := d.Verify(instance, token)
		if err != nil {
			return
		}
		want, ok := minted[token]
		if !ok || instance != "acme" {
			t.Fatalf("%q verified for %q", token, instance)
		}
		if !g.Limits.Expires.Equal(want.Expires) || g.Limits.ReadOnly != want.ReadOnly || !slices.Equal(g.Limits.Claves, want.Claves) {
			t.Fatalf("%q verified with limits %+v, minted with %+v", token, g.Limits, want)
		}
	})
}

// BenchmarkVerify is what every request pays before any per-instance work:
// an unlimited token, a limited one (its limits decoded once the signature holds),
// and a stranger's limited token (the signature alone).
func BenchmarkVerify(b *testing.B) {
	k, key := newKey(b, "k")
	foreign, _ := newKey(b, "k")
	d, _ := Parse([]byte(`{"keys":{"k":"` + key + `"}}`))
	limits := erp.Limits{ReadOnly: true, Claves: []string{"Get_Inventario_Precio", "Get_Terceros"}, Expires: time.Now().Add(time.Hour)}
	plain, _ := mint(b, k, "acme", erp.Limits{})
	limited, _ := mint(b, k, "acme", limits)
	stranger, _ := mint(b, foreign, "acme", limits)
	for _, bb := range []struct{ name, token string }{{"unlimited", plain}, {"limited", limited}, {"stranger", stranger}} {
		b.Run(bb.name, func(b *testing.B) {
			for b.Loop() {
				d.Verify("acme", bb.token) //nolint:errcheck // the cost is what is measured
			}
		})
	}
}

// TestDemoKeyIsTheDemoDocuments: DemoKey is the key of
// infra/access.demo.json, the one the README's token is minted with.
func TestDemoKeyIsTheDemoDocuments(t *testing.T) {
	data, err := os.ReadFile("../../infra/access.demo.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := Parse(data)
	if err != nil || !doc.HoldsDemoKey() {
		t.Fatalf("infra/access.demo.json does not hold access.DemoKey (%v)", err)
	}
	_, key := newKey(t, "own")
	if other, err := Parse([]byte(`{"keys":{"own":"` + key + `"}}`)); err != nil || other.HoldsDemoKey() {
		t.Fatalf("a fresh key is the demo key (%v)", err)
	}
}
