// Prints the greedy continuation of a prompt exactly as `ikllm run -m MODEL -p PROMPT -n N --temp 0`.
// Usage: go run ./examples/generate.go MODEL PROMPT N
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"ikllm.dev/ikllm"
)

func run(modelPath, prompt string, n int) error {
	lib, err := ikllm.NewLibrary()
	if err != nil {
		return err
	}
	defer lib.Close()
	model, err := ikllm.Load(lib, modelPath, nil)
	if err != nil {
		return err
	}
	defer model.Close()
	session, err := ikllm.NewSession(model, nil)
	if err != nil {
		return err
	}
	defer session.Close()
	sampler, err := ikllm.NewGreedySampler(model)
	if err != nil {
		return err
	}
	defer sampler.Close()
	tokens, err := model.Tokenize(prompt, ikllm.TokenizeAddSpecial)
	if err != nil {
		return err
	}
	os.Stdout.WriteString(prompt)
	gen, err := session.Generate(context.Background(), sampler, tokens, n)
	if err != nil {
		return err
	}
	for gen.Next() {
		os.Stdout.WriteString(gen.Text())
	}
	if err := gen.Err(); err != nil {
		return err
	}
	os.Stdout.WriteString("\n")
	return nil
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: generate MODEL PROMPT N_TOKENS")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[3])
	if err != nil || n < 0 {
		fmt.Fprintln(os.Stderr, "generate: N_TOKENS must be a non-negative integer")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2], n); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
}
