package ikllm_test

// Test helpers: where the reference models and the C CLI are.

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"ikllm.dev/ikllm"
)

func refdata() string {
	if d := os.Getenv("IKLLM_REFDATA"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "..", "shared", "refdata")
}

// modelPath returns a refdata model's path, skipping the test when it is absent.
func modelPath(t *testing.T, name string) string {
	t.Helper()
	p, _ := filepath.Abs(filepath.Join(refdata(), "models", name+".gguf"))
	if _, err := os.Stat(p); err != nil {
		t.Skipf("skipped: %s not found", p)
	}
	return p
}

// cli is the `ikllm` CLI next to the library under test.
func cli() string {
	if c := os.Getenv("IKLLM_CLI"); c != "" {
		return c
	}
	if l := os.Getenv("IKLLM_LIB"); l != "" {
		return filepath.Join(filepath.Dir(l), "ikllm")
	}
	return filepath.Join("..", "..", "build", "ikllm")
}

func runCLI(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := exec.Command(cli(), args...).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("ikllm %v: %v %s", args, err, msg)
	}
	return out
}

// load loads a refdata model; the library and model are closed when the test ends.
func load(t *testing.T, name string) *ikllm.Model {
	t.Helper()
	path := modelPath(t, name)
	lib, err := ikllm.NewLibrary()
	must(t, err)
	m, err := ikllm.Load(lib, path, nil)
	must(t, err)
	t.Cleanup(func() { m.Close(); lib.Close() })
	return m
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantStatus checks err is an *ikllm.Error with the status and a message.
func wantStatus(t *testing.T, err error, want ikllm.Status) {
	t.Helper()
	e, ok := err.(*ikllm.Error)
	if !ok {
		t.Fatalf("want %v, got %v", want, err)
	}
	if e.Status != want || e.Message == "" {
		t.Fatalf("want %v with a message, got %v", want, err)
	}
}

func session(t *testing.T, m *ikllm.Model, nSeq, nCtx int64) *ikllm.Session {
	t.Helper()
	o, err := ikllm.NewOptions(ikllm.OptionsSession)
	must(t, err)
	defer o.Close()
	must(t, o.SetInt("n_ctx", nCtx))
	must(t, o.SetInt("n_seq_max", nSeq))
	s, err := ikllm.NewSession(m, o)
	must(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}
