package ikllm_test

// The binding's coverage of the C API; model tests load tiny refdata models (skip without).

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"ikllm.dev/ikllm"
)

var bg = context.Background()

func TestVersionInfo(t *testing.T) {
	if ikllm.VersionString() == "" || ikllm.LibraryVersionNumber() != ikllm.VersionNumber ||
		ikllm.LibraryABIVersion() != ikllm.ABIVersion {
		t.Fatal(ikllm.VersionString(), ikllm.LibraryVersionNumber(), ikllm.LibraryABIVersion())
	}
	if ikllm.ErrIO.String() != "IKLLM_ERR_IO" {
		t.Fatal(ikllm.ErrIO.String())
	}
}

func TestOptions(t *testing.T) {
	infos, err := ikllm.ListOptions(ikllm.OptionsSession)
	must(t, err)
	var nCtx *ikllm.OptionInfo
	for i := range infos {
		if infos[i].Name == "n_ctx" {
			nCtx = &infos[i]
		}
	}
	if nCtx == nil || nCtx.Type != ikllm.OptionInt || nCtx.Doc == "" {
		t.Fatalf("n_ctx not listed: %+v", infos)
	}
	o, err := ikllm.NewOptions(ikllm.OptionsSession)
	must(t, err)
	defer o.Close()
	v, err := o.Int("n_ctx")
	must(t, err)
	if fmt.Sprint(v) != nCtx.Default {
		t.Fatal(v, nCtx.Default)
	}
	must(t, o.SetInt("n_ctx", 256))
	must(t, o.SetText("n_batch", "64"))
	must(t, o.SetString("kv_type", "f32"))
	if v, _ := o.Int("n_batch"); v != 64 {
		t.Fatal(v)
	}
	if s, _ := o.String("kv_type"); s != "f32" {
		t.Fatal(s)
	}
	so, err := ikllm.NewOptions(ikllm.OptionsSampler)
	must(t, err)
	must(t, so.SetFloat("temperature", 0.5))
	if f, _ := so.Float("temperature"); f != 0.5 {
		t.Fatal(f)
	}
	so.Close()
	so.Close() // idempotent
	if err := so.SetInt("seed", 1); err != ikllm.ErrClosed {
		t.Fatal(err)
	}
	for _, k := range []ikllm.OptionsKind{ikllm.OptionsModel, ikllm.OptionsSampler, ikllm.OptionsQuantize, ikllm.OptionsChat} {
		if l, err := ikllm.ListOptions(k); err != nil || len(l) == 0 {
			t.Fatal(k, err)
		}
	}
}

func TestErrorBadOption(t *testing.T) {
	o, err := ikllm.NewOptions(ikllm.OptionsSession)
	must(t, err)
	defer o.Close()
	wantStatus(t, o.SetInt("n_ctx", 0), ikllm.ErrInvalidArgument)
	err = o.SetInt("no_such_option", 1)
	wantStatus(t, err, ikllm.ErrNotFound)
	if !errors.Is(err, ikllm.ErrNotFound) || !strings.Contains(err.Error(), "no_such_option") {
		t.Fatal(err)
	}
	wantStatus(t, o.SetText("n_ctx", "many"), ikllm.ErrInvalidArgument)
}

func TestErrorMissingFile(t *testing.T) {
	lib, err := ikllm.NewLibrary()
	must(t, err)
	defer lib.Close()
	_, err = ikllm.Load(lib, "/nonexistent/dir/model.gguf", nil)
	wantStatus(t, err, ikllm.ErrIO)
	if !errors.Is(err, ikllm.ErrIO) || !strings.Contains(err.Error(), "model.gguf") {
		t.Fatal(err)
	}
}

func TestErrorCorruptFile(t *testing.T) {
	lib, err := ikllm.NewLibrary()
	must(t, err)
	defer lib.Close()
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.gguf")
	must(t, os.WriteFile(garbage, []byte("GGUF\x03\x00\x00\x00 this is not a model at all"), 0o644))
	_, err = ikllm.Load(lib, garbage, nil)
	wantStatus(t, err, ikllm.ErrInvalidFile)
	data, err := os.ReadFile(modelPath(t, "llama-tiny-f16"))
	must(t, err)
	cut := filepath.Join(dir, "truncated.gguf")
	must(t, os.WriteFile(cut, data[:len(data)/2], 0o644))
	_, err = ikllm.Load(lib, cut, nil)
	wantStatus(t, err, ikllm.ErrInvalidFile)
}

func TestErrorOutOfRangeToken(t *testing.T) {
	m := load(t, "llama-tiny-f16")
	bad := ikllm.Token(m.NVocab() + 5)
	_, err := m.Detokenize([]ikllm.Token{1, bad}, 0)
	wantStatus(t, err, ikllm.ErrInvalidArgument)
	_, err = m.TokenPiece(-3, 0)
	wantStatus(t, err, ikllm.ErrInvalidArgument)
	s := session(t, m, 1, 64)
	wantStatus(t, s.DecodeTokens(bg, []ikllm.Token{1, bad}), ikllm.ErrInvalidArgument)
	if s.SeqPosMax(0) != -1 {
		t.Fatal("a failed decode leaves the cache unchanged")
	}
}

func TestLoadProgressAndCancel(t *testing.T) {
	path := modelPath(t, "llama-tiny-f16")
	lib, err := ikllm.NewLibrary()
	must(t, err)
	defer lib.Close()
	var seen []float32
	m, err := ikllm.Load(lib, path, &ikllm.LoadOptions{Progress: func(p float32) bool { seen = append(seen, p); return true }})
	must(t, err)
	m.Close()
	if len(seen) == 0 || seen[len(seen)-1] != 1 {
		t.Fatal(seen)
	}
	_, err = ikllm.Load(lib, path, &ikllm.LoadOptions{Progress: func(float32) bool { return false }})
	wantStatus(t, err, ikllm.Cancelled)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	_, err = ikllm.LoadContext(ctx, lib, path, nil)
	wantStatus(t, err, ikllm.Cancelled)
	if !errors.Is(err, context.Canceled) {
		t.Fatal("a context cancellation unwraps to ctx.Err():", err)
	}
	mo, err := ikllm.NewOptions(ikllm.OptionsModel)
	must(t, err)
	defer mo.Close()
	must(t, mo.SetInt("use_mmap", 0))
	m, err = ikllm.Load(lib, path, &ikllm.LoadOptions{Options: mo})
	must(t, err)
	m.Close()
}

func TestMetadata(t *testing.T) {
	m := load(t, "llama-tiny-f16")
	if m.Architecture() != "llama" || m.NVocab() <= 0 || m.NEmbd() <= 0 || m.NLayer() <= 0 || m.NCtxTrain() <= 0 ||
		m.NParams() == 0 || m.SizeBytes() == 0 {
		t.Fatal(m.Architecture(), m.NVocab(), m.NEmbd(), m.NLayer())
	}
	found := false
	for _, k := range m.MetaKeys() {
		found = found || k == "general.architecture"
	}
	v, err := m.MetaValue("general.architecture", false)
	if !found || err != nil || v != "llama" {
		t.Fatal(found, v, err)
	}
	_, err = m.MetaValue("no.such.key", false)
	wantStatus(t, err, ikllm.ErrNotFound)
	if _, ok := m.SpecialToken(ikllm.TokenBOS); !ok {
		t.Fatal("no BOS")
	}
	eos, ok := m.SpecialToken(ikllm.TokenEOS)
	if !ok || !m.IsEOG(eos) {
		t.Fatal("EOS")
	}
}

func TestTokenizeDetokenize(t *testing.T) {
	m := load(t, "llama-tiny-f16")
	text := "Hello world, how are you?"
	plain, err := m.Tokenize(text, 0)
	must(t, err)
	withBOS, err := m.Tokenize(text, ikllm.TokenizeAddSpecial)
	must(t, err)
	bos, _ := m.SpecialToken(ikllm.TokenBOS)
	if withBOS[0] != bos || fmt.Sprint(withBOS[1:]) != fmt.Sprint(plain) {
		t.Fatal(withBOS, plain)
	}
	if back, err := m.Detokenize(plain, 0); err != nil || back != text {
		t.Fatalf("%q %v", back, err)
	}
	var pieces []byte
	for _, tok := range plain {
		p, err := m.TokenPiece(tok, 0)
		must(t, err)
		pieces = append(pieces, p...)
	}
	if !strings.Contains(string(pieces), "Hello") {
		t.Fatal(string(pieces))
	}
	d, err := ikllm.NewDetokenizer(m, 0)
	must(t, err)
	defer d.Close()
	var sb strings.Builder
	for _, tok := range plain {
		p, err := d.Push(tok)
		must(t, err)
		sb.WriteString(p)
	}
	p, err := d.Flush()
	must(t, err)
	if sb.String()+p != text {
		t.Fatalf("%q", sb.String()+p)
	}
	if toks, err := m.Tokenize("", 0); err != nil || len(toks) != 0 {
		t.Fatal(toks, err)
	}
	toks, err := m.Tokenize("ok \xff\xfe end", 0)
	must(t, err)
	if s, _ := m.Detokenize(toks, 0); !strings.ContainsRune(s, '\uFFFD') {
		t.Fatalf("%q", s)
	}
}

func maxAbsDiff(a, b []float32) float64 {
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i]-b[i])))
	}
	return d
}

func TestBatchedDecodeOfTwoSequences(t *testing.T) {
	m := load(t, "llama-tiny-f16")
	a, _ := m.Tokenize("The quick brown fox", ikllm.TokenizeAddSpecial)
	b, _ := m.Tokenize("Once upon a time there", ikllm.TokenizeAddSpecial)
	s := session(t, m, 2, 256)
	if s.NSeqMax() != 2 {
		t.Fatal(s.NSeqMax())
	}
	var batch ikllm.Batch
	for i, tok := range a {
		batch.Add(tok, int32(i), 0, i == len(a)-1)
	}
	for i, tok := range b {
		batch.Add(tok, int32(i), 1, i == len(b)-1)
	}
	must(t, s.Decode(bg, &batch))
	la, err := s.Logits(len(a) - 1)
	must(t, err)
	lb, err := s.Logits(len(batch.Tokens) - 1)
	must(t, err)
	if len(la) != m.NVocab() || s.SeqPosMax(0) != len(a)-1 || s.SeqPosMax(1) != len(b)-1 {
		t.Fatal(len(la), s.SeqPosMax(0), s.SeqPosMax(1))
	}
	for i, c := range []struct {
		toks    []ikllm.Token
		batched []float32
	}{{a, la}, {b, lb}} {
		one := session(t, m, 1, 256)
		must(t, one.DecodeTokens(bg, c.toks))
		alone, err := one.Logits(-1)
		must(t, err)
		if d := maxAbsDiff(alone, c.batched); d > 1e-3 {
			t.Fatalf("sequence %d: batched logits differ by %g", i, d)
		}
	}
	if maxAbsDiff(la, lb) < 1e-3 {
		t.Fatal("two different prompts gave the same logits")
	}
	_, err = s.Logits(0)
	wantStatus(t, err, ikllm.ErrInvalidArgument)
	must(t, s.SeqRemove(1, 0, -1))
	if s.SeqPosMax(1) != -1 {
		t.Fatal("seq 1 not removed")
	}
	must(t, s.Clear())
}

func TestLogitsEqualTheCAPI(t *testing.T) {
	for _, name := range []string{"llama-tiny-f16", "qwen3-tiny-f16"} {
		path := modelPath(t, name)
		m := load(t, name)
		ids, err := m.Tokenize("The capital of France is", ikllm.TokenizeAddSpecial)
		must(t, err)
		dir := t.TempDir()
		idsFile, outFile := filepath.Join(dir, "ids.txt"), filepath.Join(dir, "out.f32")
		must(t, os.WriteFile(idsFile, []byte(strings.Trim(fmt.Sprint(ids), "[]")), 0o644))
		runCLI(t, "logits", "-m", path, "--tokens", idsFile, "--out", outFile)
		raw, err := os.ReadFile(outFile)
		must(t, err)
		// As `ikllm logits` does: one batch, every position's logits, n_ctx 512.
		o, _ := ikllm.NewOptions(ikllm.OptionsSession)
		must(t, o.SetInt("n_ctx", 512))
		must(t, o.SetInt("n_batch", int64(len(ids))))
		s, err := ikllm.NewSession(m, o)
		must(t, err)
		o.Close()
		var batch ikllm.Batch
		for i, tok := range ids {
			batch.Add(tok, int32(i), 0, true)
		}
		must(t, s.Decode(bg, &batch))
		nv := m.NVocab()
		if len(raw) != 4*nv*len(ids) {
			t.Fatal(len(raw))
		}
		for i := range ids {
			lg, err := s.Logits(i)
			must(t, err)
			for j, v := range lg {
				if math.Float32bits(v) != binary.LittleEndian.Uint32(raw[4*(i*nv+j):]) {
					t.Fatalf("%s: logits of position %d differ at %d", name, i, j)
				}
			}
		}
		s.Close()
	}
}

func TestSampling(t *testing.T) {
	m := load(t, "llama-tiny-f16")
	s := session(t, m, 1, 256)
	toks, _ := m.Tokenize("Hello", ikllm.TokenizeAddSpecial)
	must(t, s.DecodeTokens(bg, toks))
	lg, err := s.Logits(-1)
	must(t, err)
	best := 0
	for i, v := range lg {
		if v > lg[best] {
			best = i
		}
	}
	g, err := ikllm.NewGreedySampler(m)
	must(t, err)
	defer g.Close()
	if tok, err := g.Sample(s, -1); err != nil || int(tok) != best {
		t.Fatal(tok, best, err)
	}
	if tok, err := g.SampleLogits(lg); err != nil || int(tok) != best {
		t.Fatal(tok, best, err)
	}
	o, _ := ikllm.NewOptions(ikllm.OptionsSampler)
	must(t, o.SetInt("seed", 42))
	must(t, o.SetFloat("temperature", 1.5))
	must(t, o.SetInt("top_k", 0))
	x, err := ikllm.NewSampler(m, o)
	must(t, err)
	y, err := ikllm.NewSampler(m, o)
	must(t, err)
	o.Close()
	var xs, ys []ikllm.Token
	for i := 0; i < 8; i++ {
		a, err := x.Sample(s, -1)
		must(t, err)
		b, err := y.Sample(s, -1)
		must(t, err)
		xs, ys = append(xs, a), append(ys, b)
	}
	if fmt.Sprint(xs) != fmt.Sprint(ys) {
		t.Fatal(xs, ys)
	}
	must(t, x.Reset())
	if a, _ := x.Sample(s, -1); a != xs[0] {
		t.Fatal("reset re-seeds")
	}
	if st, err := x.GrammarState(); err != nil || st != ikllm.GrammarNone {
		t.Fatal(st, err)
	}
	x.Close()
	y.Close()
}

func greedyText(t *testing.T, m *ikllm.Model, prompt string, n int) string {
	s, err := ikllm.NewSession(m, nil)
	must(t, err)
	defer s.Close()
	smp, err := ikllm.NewGreedySampler(m)
	must(t, err)
	defer smp.Close()
	toks, err := m.Tokenize(prompt, ikllm.TokenizeAddSpecial)
	must(t, err)
	g, err := s.Generate(bg, smp, toks, n)
	must(t, err)
	var sb strings.Builder
	sb.WriteString(prompt)
	for g.Next() {
		sb.WriteString(g.Text())
	}
	must(t, g.Err())
	return sb.String() + "\n"
}

func TestGreedyGenerationEqualsTheCLI(t *testing.T) {
	for _, c := range [][2]string{{"llama-tiny-f16", "Hello world"}, {"qwen3-tiny-f16", "Once upon a time"},
		{"qwen2-tiny-f16", "Ünïcödé test: 1 2 3"}} {
		m := load(t, c[0])
		want := string(runCLI(t, "run", "-m", modelPath(t, c[0]), "-p", c[1], "-n", "40", "--temp", "0"))
		if got := greedyText(t, m, c[1], 40); got != want {
			t.Fatalf("%s:\n got %q\nwant %q", c[0], got, want)
		}
	}
}

func TestStreaming(t *testing.T) {
	m := load(t, "llama-tiny-f16")
	toks, _ := m.Tokenize("Hi", ikllm.TokenizeAddSpecial)
	s := session(t, m, 1, 64)
	smp, _ := ikllm.NewGreedySampler(m)
	defer smp.Close()
	g, err := s.Generate(bg, smp, toks, 5)
	must(t, err)
	pieces, errc := g.Stream()
	n := 0
	for p := range pieces {
		if p.Token >= 0 {
			n++
			if m.IsEOG(p.Token) {
				t.Fatal("end-of-generation token streamed")
			}
		}
	}
	if err := <-errc; err != nil || n > 5 {
		t.Fatal(n, err)
	}
	// A full context ends the stream cleanly.
	tiny := session(t, m, 1, 8)
	g, err = tiny.Generate(bg, smp, toks, 100)
	must(t, err)
	n = 0
	for g.Next() {
		n++
	}
	if g.Err() != nil || n > 9 {
		t.Fatal(n, g.Err())
	}
	_, err = s.Generate(bg, smp, nil, 3)
	wantStatus(t, err, ikllm.ErrInvalidArgument)
	// A cancelled context stops the stream with an error that unwraps to context.Canceled.
	ctx, cancel := context.WithCancel(bg)
	must(t, s.Clear())
	g, err = s.Generate(ctx, smp, toks, 50)
	must(t, err)
	if !g.Next() {
		t.Fatal(g.Err())
	}
	cancel()
	for g.Next() {
	}
	if !errors.Is(g.Err(), context.Canceled) || !errors.Is(g.Err(), ikllm.Cancelled) {
		t.Fatal(g.Err())
	}
}

func TestDecodeContextCancel(t *testing.T) {
	m := load(t, "llama-tiny-f16")
	s := session(t, m, 1, 64)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	err := s.DecodeTokens(ctx, []ikllm.Token{1, 2, 3})
	wantStatus(t, err, ikllm.Cancelled)
	if !errors.Is(err, context.Canceled) || s.SeqPosMax(0) != -1 {
		t.Fatal(err, s.SeqPosMax(0))
	}
	must(t, s.DecodeTokens(bg, []ikllm.Token{1, 2, 3}))
	if s.SeqPosMax(0) != 2 {
		t.Fatal(s.SeqPosMax(0))
	}
}

func TestChatTemplateRendering(t *testing.T) {
	m := load(t, "qwen3-tiny-f16")
	_, err := m.ChatTemplate("")
	wantStatus(t, err, ikllm.ErrNotFound) // refdata models carry none
	if len(m.ChatTemplateNames()) != 0 {
		t.Fatal(m.ChatTemplateNames())
	}
	msgs := `[{"role":"user","content":"Hi there"}]`
	tpl := "{% for m in messages %}<{{ m.role }}>{{ m.content }}</{{ m.role }}>{% endfor %}" +
		"{% if add_generation_prompt %}<assistant>{% endif %}"
	out, err := ikllm.RenderChat(nil, msgs, ikllm.ChatRender{Template: tpl, AddGenerationPrompt: true})
	if err != nil || out != "<user>Hi there</user><assistant>" {
		t.Fatalf("%q %v", out, err)
	}
	_, err = ikllm.RenderChat(nil, msgs, ikllm.ChatRender{Template: "{{ raise_exception('no') }}"})
	wantStatus(t, err, ikllm.ErrTemplate)
	_, err = ikllm.RenderChat(nil, "[{", ikllm.ChatRender{Template: tpl})
	wantStatus(t, err, ikllm.ErrInvalidArgument)
	src, err := os.ReadFile(filepath.Join(refdata(), "templates", "Qwen-Qwen3-0.6B.jinja"))
	if err == nil {
		out, err := ikllm.RenderChat(m, msgs, ikllm.ChatRender{Template: string(src), AddGenerationPrompt: true})
		must(t, err)
		if !strings.Contains(out, "<|im_start|>user\nHi there<|im_end|>") || !strings.HasSuffix(out, "<|im_start|>assistant\n") {
			t.Fatalf("%q", out)
		}
	}
}

func constrained(t *testing.T, m *ikllm.Model, s *ikllm.Session, key, value string) (string, *ikllm.Sampler) {
	o, _ := ikllm.NewOptions(ikllm.OptionsSampler)
	defer o.Close()
	must(t, o.SetFloat("temperature", 0))
	must(t, o.SetString(key, value))
	smp, err := ikllm.NewSampler(m, o)
	must(t, err)
	t.Cleanup(func() { smp.Close() })
	toks, _ := m.Tokenize("Answer:", ikllm.TokenizeAddSpecial)
	must(t, s.Clear())
	g, err := s.Generate(bg, smp, toks, 20)
	must(t, err)
	var sb strings.Builder
	for g.Next() {
		sb.WriteString(g.Text())
	}
	must(t, g.Err())
	return sb.String(), smp
}

func TestConstrainedSampling(t *testing.T) {
	m := load(t, "llama-tiny-f16")
	s := session(t, m, 1, 128)
	text, smp := constrained(t, m, s, "grammar", `root ::= ("yes" | "no") "!"`)
	if text != "yes!" && text != "no!" {
		t.Fatalf("%q", text)
	}
	if st, _ := smp.GrammarState(); st != ikllm.GrammarDone {
		t.Fatal(st)
	}
	text, _ = constrained(t, m, s, "json_schema", `{"enum":["red","green"]}`)
	if text != `"red"` && text != `"green"` {
		t.Fatalf("%q", text)
	}
	gbnf, err := ikllm.JSONSchemaToGrammar(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)
	if err != nil || !strings.Contains(gbnf, "root") {
		t.Fatal(gbnf, err)
	}
	_, err = ikllm.JSONSchemaToGrammar("{not json")
	wantStatus(t, err, ikllm.ErrGrammar)
	o, _ := ikllm.NewOptions(ikllm.OptionsSampler)
	defer o.Close()
	must(t, o.SetString("grammar", "root ::= ("))
	_, err = ikllm.NewSampler(m, o)
	wantStatus(t, err, ikllm.ErrGrammar)
	if !strings.Contains(err.Error(), "line") {
		t.Fatal(err)
	}
}

func TestOneModelManyGoroutines(t *testing.T) {
	m := load(t, "llama-tiny-f16")
	want := greedyText(t, m, "Hello world", 16)
	var wg sync.WaitGroup
	got := make([]string, 4)
	for i := range got {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			got[i] = greedyText(t, m, "Hello world", 16)
		}(i)
	}
	wg.Wait()
	for _, g := range got {
		if g != want {
			t.Fatalf("%q != %q", g, want)
		}
	}
}

func TestCloseOrderIsFree(t *testing.T) {
	path := modelPath(t, "llama-tiny-f16")
	lib, err := ikllm.NewLibrary()
	must(t, err)
	m, err := ikllm.Load(lib, path, nil)
	must(t, err)
	s, err := ikllm.NewSession(m, nil)
	must(t, err)
	lib.Close() // freed only after the model
	m.Close()   // freed only after the session
	if _, err := ikllm.NewSession(m, nil); err != ikllm.ErrClosed {
		t.Fatal(err)
	}
	must(t, s.DecodeTokens(bg, []ikllm.Token{1, 2}))
	s.Close()
	s.Close()
	if err := s.DecodeTokens(bg, []ikllm.Token{1}); err != ikllm.ErrClosed {
		t.Fatal(err)
	}
}

func TestLibraryConfiguration(t *testing.T) {
	path := modelPath(t, "llama-tiny-f16")
	lib, err := ikllm.NewLibrary()
	must(t, err)
	defer lib.Close()
	var mu sync.Mutex
	n := 0
	must(t, lib.SetLog(func(ikllm.LogLevel, string) { mu.Lock(); n++; mu.Unlock() }, ikllm.LogDebug))
	must(t, lib.SetDefaultThreads(1))
	m, err := ikllm.Load(lib, path, nil)
	must(t, err)
	mu.Lock()
	if n == 0 {
		t.Fatal("no log messages")
	}
	mu.Unlock()
	wantStatus(t, lib.SetDefaultThreads(2), ikllm.ErrInvalidArgument) // models share it now
	m.Close()
	must(t, lib.SetLog(nil, ikllm.LogError))
}
