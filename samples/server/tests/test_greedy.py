"""Greedy output through the server equals `ikllm run --temp 0` for the same prompt (both add BOS
as the vocabulary asks), and streamed and non-streamed responses carry the same text.
argv: SERVER_BINARY IKLLM_CLI SHARED_DIR."""
import json
import subprocess
import sys

import harness

PROMPTS = ["The quick brown fox", "Once upon a time, in a land far away,"]
N = 32


def main():
    binary, cli, shared = sys.argv[1:4]
    failures = 0
    for name in ("qwen3-tiny-f16", "llama-tiny-f16"):
        model = harness.model_path(shared, name)
        with harness.Server(binary, model) as srv:
            for prompt in PROMPTS:
                run = subprocess.run([cli, "run", "-m", model, "-p", prompt, "-n", str(N), "--temp", "0", "-c", "2048", "-t", "2"],
                                     capture_output=True, timeout=120)
                expected = run.stdout.decode("utf-8", "replace")
                # `ikllm run` echoes the prompt and ends with a newline.
                assert expected.startswith(prompt) and expected.endswith("\n"), expected
                expected = expected[len(prompt):-1]
                body = {"prompt": prompt, "max_tokens": N, "temperature": 0}
                st, _, whole = harness.request(srv.port, "POST", "/v1/completions", body)
                text = json.loads(whole)["choices"][0]["text"]
                st2, _, raw = harness.request(srv.port, "POST", "/v1/completions", dict(body, stream=True))
                events = harness.sse_events(raw)
                streamed = "".join(json.loads(e)["choices"][0]["text"] for e in events if e != "[DONE]")
                # The same through the chat endpoint: streamed and whole must agree.
                chat = {"messages": [{"role": "user", "content": prompt}], "max_tokens": N, "temperature": 0}
                _, _, cw = harness.request(srv.port, "POST", "/v1/chat/completions", chat)
                _, _, cs = harness.request(srv.port, "POST", "/v1/chat/completions", dict(chat, stream=True))
                chat_whole = json.loads(cw)["choices"][0]["message"]["content"]
                chat_streamed = "".join(json.loads(e)["choices"][0]["delta"].get("content") or ""
                                        for e in harness.sse_events(cs) if e != "[DONE]")
                ok = st == st2 == 200 and text == expected and streamed == text and chat_whole == chat_streamed
                print(("ok   " if ok else "FAIL ") + "%s %r" % (name, prompt))
                if not ok:
                    failures += 1
                    print("  ikllm run: %r\n  server:    %r\n  streamed:  %r\n  chat:      %r / %r" %
                          (expected, text, streamed, chat_whole, chat_streamed))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
