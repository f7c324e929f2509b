package ikllm_test

// The rest of the ABI: embeddings, scoring, sequence tools, state save/restore, tensors,
// quantization, importance matrix, chat output parsing.

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ikllm.dev/ikllm"
)

func sessionWith(t *testing.T, m *ikllm.Model, settings map[string]string) *ikllm.Session {
	t.Helper()
	o, err := ikllm.NewOptions(ikllm.OptionsSession)
	must(t, err)
	defer o.Close()
	must(t, o.SetInt("n_ctx", 256))
	for k, v := range settings {
		must(t, o.SetText(k, v))
	}
	s, err := ikllm.NewSession(m, o)
	must(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestEmbeddingsAndHiddenStates(t *testing.T) {
	m := load(t, "llama-tiny-f16")
	toks, _ := m.Tokenize("Hello world", ikllm.TokenizeAddSpecial)
	s := sessionWith(t, m, map[string]string{"embeddings": "1", "pooling": "mean"})
	if p, ok := s.Pooling(); !ok || p != ikllm.PoolingMean {
		t.Fatal(p, ok)
	}
	must(t, s.DecodeTokens(bg, toks))
	h, err := s.HiddenState(-1)
	must(t, err)
	e, err := s.Embeddings(0)
	must(t, err)
	norm := 0.0
	for _, v := range e {
		norm += float64(v) * float64(v)
	}
	if len(h) != m.NEmbd() || math.Abs(math.Sqrt(norm)-1) > 1e-3 {
		t.Fatal(len(h), norm)
	}
	plain := sessionWith(t, m, nil)
	if _, ok := plain.Pooling(); ok {
		t.Fatal("embeddings off")
	}
	_, err = plain.Embeddings(0)
	wantStatus(t, err, ikllm.ErrInvalidArgument)
}

func TestScoreTokensMatchesLogits(t *testing.T) {
	m := load(t, "llama-tiny-f16")
	toks, _ := m.Tokenize("The quick brown fox jumps", ikllm.TokenizeAddSpecial)
	lp, err := sessionWith(t, m, nil).ScoreTokens(0, toks, 0)
	must(t, err)
	if len(lp) != len(toks)-1 {
		t.Fatal(len(lp))
	}
	s := sessionWith(t, m, nil)
	must(t, s.DecodeTokens(bg, toks[:len(toks)-1]))
	lg, _ := s.Logits(-1)
	max := math.Inf(-1)
	for _, v := range lg {
		max = math.Max(max, float64(v))
	}
	sum := 0.0
	for _, v := range lg {
		sum += math.Exp(float64(v) - max)
	}
	want := float64(lg[toks[len(toks)-1]]) - (math.Log(sum) + max)
	if math.Abs(float64(lp[len(lp)-1])-want) > 1e-3 {
		t.Fatal(lp[len(lp)-1], want)
	}
}

func TestSequenceTools(t *testing.T) {
	m := load(t, "llama-tiny-f16")
	toks, _ := m.Tokenize("one two three four five six", ikllm.TokenizeAddSpecial)
	s := sessionWith(t, m, map[string]string{"n_seq_max": "2"})
	must(t, s.DecodeTokens(bg, toks))
	held, err := s.SeqTokens(0)
	if err != nil || fmt.Sprint(held) != fmt.Sprint(toks) {
		t.Fatal(held, err)
	}
	if n, err := s.PromptReuse(1, toks); err != nil || n != len(toks)-1 {
		t.Fatal(n, err)
	}
	must(t, s.SeqCopy(0, 1, 0, -1))
	must(t, s.SeqKeep(1))
	if s.SeqPosMax(0) != -1 {
		t.Fatal("seq 0 kept")
	}
	must(t, s.ContextShift(1, 1, 2))
	if s.SeqPosMax(1) != len(toks)-3 {
		t.Fatal(s.SeqPosMax(1))
	}
	must(t, s.SeqShift(1, 0, -1, 5))
	if s.SeqPosMax(1) != len(toks)+2 {
		t.Fatal(s.SeqPosMax(1))
	}
}

func TestStateSaveAndRestore(t *testing.T) {
	m := load(t, "llama-tiny-f16")
	toks, _ := m.Tokenize("Remember this sentence", ikllm.TokenizeAddSpecial)
	a := sessionWith(t, m, nil)
	smp, _ := ikllm.NewGreedySampler(m)
	defer smp.Close()
	must(t, a.DecodeTokens(bg, toks[:len(toks)-1]))
	state, err := a.StateSave(nil, smp)
	must(t, err)
	must(t, a.DecodeTokens(bg, toks[len(toks)-1:]))
	want, _ := a.Logits(-1)
	b := sessionWith(t, m, nil)
	must(t, b.StateLoad(state, smp, false))
	must(t, b.DecodeTokens(bg, toks[len(toks)-1:]))
	got, _ := b.Logits(-1)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatal("restored sessions continue bit-identically")
	}
	file := filepath.Join(t.TempDir(), "s.bin")
	must(t, a.StateSaveFile(file, []int32{0}, nil))
	c := sessionWith(t, m, nil)
	must(t, c.StateLoadFile(file, nil, true))
	if held, _ := c.SeqTokens(0); fmt.Sprint(held) != fmt.Sprint(toks) {
		t.Fatal(held)
	}
	wantStatus(t, c.StateLoad([]byte("not a state"), nil, false), ikllm.ErrInvalidFile)
}

func TestTensorsAndQuantization(t *testing.T) {
	path := modelPath(t, "llama-tiny-f16")
	lib, err := ikllm.NewLibrary()
	must(t, err)
	defer lib.Close()
	m, err := ikllm.Load(lib, path, nil)
	must(t, err)
	defer m.Close()
	if n, err := m.KVBytesPerToken("f16"); err != nil || n == 0 {
		t.Fatal(n, err)
	}
	tensors, err := m.Tensors()
	must(t, err)
	var mat *ikllm.TensorInfo
	for i := range tensors {
		if tensors[i].Ne[1] > 1 {
			mat = &tensors[i]
			break
		}
	}
	if mat == nil || ikllm.TypeName(mat.Type) == "" {
		t.Fatal("no matrix")
	}
	vals, err := m.TensorDequantize(mat.Name)
	must(t, err)
	if int64(len(vals)) != mat.Ne[0]*mat.Ne[1]*mat.Ne[2]*mat.Ne[3] {
		t.Fatal(len(vals))
	}
	_, err = m.TensorDequantize("no.such.tensor")
	wantStatus(t, err, ikllm.ErrNotFound)

	o, _ := ikllm.NewOptions(ikllm.OptionsQuantize)
	defer o.Close()
	must(t, o.SetString("type", "q8_0"))
	out := filepath.Join(t.TempDir(), "q8.gguf")
	steps := 0
	before, after, err := ikllm.Quantize(lib, path, out, o, func(ikllm.QuantizeStep) bool { steps++; return true })
	must(t, err)
	if steps != len(tensors) || after >= before {
		t.Fatal(steps, before, after)
	}
	q, err := ikllm.Load(lib, out, nil)
	must(t, err)
	q.Close()
	cancelled := filepath.Join(t.TempDir(), "cancelled.gguf")
	_, _, err = ikllm.Quantize(lib, path, cancelled, o, func(ikllm.QuantizeStep) bool { return false })
	wantStatus(t, err, ikllm.Cancelled)
	if _, err := os.Stat(cancelled); err == nil {
		t.Fatal("a cancelled quantization left its output")
	}
}

func TestImportanceMatrix(t *testing.T) {
	m := load(t, "llama-tiny-f16")
	s := sessionWith(t, m, nil)
	must(t, s.ImatrixStart())
	toks, _ := m.Tokenize("calibration text", ikllm.TokenizeAddSpecial)
	must(t, s.DecodeTokens(bg, toks))
	file := filepath.Join(t.TempDir(), "imatrix.dat")
	must(t, s.ImatrixSave(file, 1, "test"))
	must(t, s.ImatrixStop())
	if st, err := os.Stat(file); err != nil || st.Size() == 0 {
		t.Fatal(err)
	}
}

func TestChatOutputParsing(t *testing.T) {
	text := `<think>Let me see.</think>Calling it.<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>`
	args := ikllm.ChatParse{Format: "hermes"}
	p, err := ikllm.NewChatParser(args)
	must(t, err)
	defer p.Close()
	if p.Format() != "hermes" {
		t.Fatal(p.Format())
	}
	for i := 0; i < len(text); i += 7 { // any split gives the same result
		end := i + 7
		if end > len(text) {
			end = len(text)
		}
		_, err := p.Push(text[i:end])
		must(t, err)
	}
	_, message, err := p.Finish()
	must(t, err)
	reasoning, _ := p.Text(ikllm.ChatTextReasoning)
	content, _ := p.Text(ikllm.ChatTextContent)
	calls, err := p.ToolCalls()
	must(t, err)
	if reasoning != "Let me see." || content != "Calling it." || len(calls) != 1 || calls[0].Name != "get_weather" ||
		!strings.Contains(calls[0].Arguments, "Paris") {
		t.Fatalf("%q %q %+v", reasoning, content, calls)
	}
	if once, err := ikllm.ParseChat(args, text); err != nil || once != message {
		t.Fatal(once, message, err)
	}
	must(t, p.Reset())
	_, err = ikllm.NewChatParser(ikllm.ChatParse{Format: "nonsense"})
	wantStatus(t, err, ikllm.ErrInvalidArgument)
}
