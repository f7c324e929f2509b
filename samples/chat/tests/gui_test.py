#!/usr/bin/env python3
"""GUI tests of ikllm-chat: scripted runs under Xvfb (Mesa software GL) against refdata models.

usage: gui_test.py SCENARIO CHAT_EXE PNG_STATS_EXE SHARED_DIR DEMO_MODELS_DIR [MAKE_DEMO_EXE]
Exit 0 = pass, 1 = fail, 77 = skipped (no Xvfb, no refdata, or for `demo_model` neither
DEMO_MODELS_DIR/ikllm-demo.gguf nor MAKE_DEMO_EXE to make the interim demo model).
Each scenario writes its files under a fresh temporary directory (kept when a check fails).
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

SCENARIO, CHAT, PNG_STATS, SHARED, DEMO_DIR = sys.argv[1:6]
MAKE_DEMO = sys.argv[6] if len(sys.argv) > 6 else ""
TINY = os.path.join(SHARED, "refdata", "models", "llama-tiny-f16.gguf")
DEMO = os.path.join(DEMO_DIR, "ikllm-demo.gguf")
R1_TEMPLATE = os.path.join(SHARED, "refdata", "templates", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja")


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)
    print("ok:", what)


class Run:
    """One ikllm-chat process driven by a script; the config dir persists across runs."""

    def __init__(self, work):
        self.work = work
        self.cfg = os.path.join(work, "cfg")
        self.n = 0

    def __call__(self, lines, expect_rc=0, timeout=90):
        self.n += 1
        script = os.path.join(self.work, "script%d.txt" % self.n)
        with open(script, "w") as f:
            f.write("\n".join(lines) + "\n")
        env = dict(os.environ, LIBGL_ALWAYS_SOFTWARE="1", LP_NUM_THREADS="1")
        env.pop("IKLLM_CHAT_CONFIG_DIR", None)
        cmd = ["xvfb-run", "-a", "-s", "-screen 0 1280x800x24", CHAT, "--config-dir", self.cfg, "--script", script]
        t0 = time.time()
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
        out = p.stdout.decode("utf-8", "replace")
        print("--- run %d (%.1f s, rc %d)\n%s" % (self.n, time.time() - t0, p.returncode, out.strip()))
        check(p.returncode == expect_rc, "run %d exits with %d (got %d)" % (self.n, expect_rc, p.returncode))
        return out

    def path(self, name):
        return os.path.join(self.work, name)

    def state(self, name):
        with open(self.path(name)) as f:
            return json.load(f)


def non_blank(png):
    p = subprocess.run([PNG_STATS, png], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    print(p.stdout.decode().strip())
    check(p.returncode == 0, "screenshot %s is not blank" % os.path.basename(png))


def notices(state, level=None):
    return [n["text"] for n in state["notices"] if level is None or n["level"] == level]


def last_assistant(state):
    msgs = state["active"]["messages"]
    return msgs[-1] if msgs and msgs[-1]["role"] == "assistant" else None


def scenario_reply_and_reload(run):
    run(["open " + TINY, "wait-load 30", "set app.max_tokens 24",
         "type Hello there! Tell me about \\\"ikllm\\\".", "send", "wait-reply 30",
         "dump-state " + run.path("after_one.json"),
         "type And a second question, please.", "send", "wait-reply 30",
         "dump-state " + run.path("after_two.json"),
         "show card", "screenshot " + run.path("card.png"), "show card 0",
         "regenerate", "wait-reply 30", "dump-state " + run.path("after_regen.json"),
         "edit 0 Hello again, an edited first message.", "wait-reply 30",
         "dump-state " + run.path("after_edit.json"),
         "screenshot " + run.path("chat.png"), "quit"])
    s = run.state("after_two.json")
    check(s["model_loaded"] and s["card"]["architecture"] == "llama", "model card: architecture llama")
    check(s["card"]["n_params"] > 0 and s["card"]["tensor_types"], "model card: parameters and tensor types")
    msgs = s["active"]["messages"]
    check([m["role"] for m in msgs] == ["user", "assistant"] * 2, "two turns in the conversation")
    check(all(m["content"] for m in msgs), "both replies received (non-empty)")
    one = run.state("after_one.json")
    check(s["last_reply"]["reused_tokens"] > one["last_reply"]["prompt_tokens"],
          "second turn reused the first prompt and the generated tokens (%d of %d cached tokens)"
          % (s["last_reply"]["reused_tokens"], one["context"]["used"]))
    check(s["context"]["used"] > 0 and s["context"]["total"] > 0, "context used/total reported")
    r = run.state("after_regen.json")
    check(len(r["active"]["messages"]) == 4 and r["last_reply"]["reused_tokens"] > 0,
          "regenerate replaces the last reply and reuses the prefix (%d tokens)" % r["last_reply"]["reused_tokens"])
    e = run.state("after_edit.json")
    em = e["active"]["messages"]
    check(len(em) == 2 and em[0]["content"] == "Hello again, an edited first message." and em[1]["content"],
          "editing message 0 drops the later turns and gets a new reply")
    check(e["last_reply"]["reused_tokens"] > 0, "the edit reuses the prefix before the edited message")
    non_blank(run.path("chat.png"))
    non_blank(run.path("card.png"))
    files = glob.glob(os.path.join(run.cfg, "conversations", "*"))
    check(len([f for f in files if f.endswith(".json")]) == 1 and all(f.endswith(".json") for f in files),
          "one conversation file saved, no temporary files left")
    with open(os.path.join(run.cfg, "app.json")) as f:
        check(TINY in json.load(f)["recent_models"], "the model is in the recent models")

    # A second process restores the conversation and the recent models.
    run(["dump-state " + run.path("restored.json"), "screenshot " + run.path("restored.png"), "quit"])
    r = run.state("restored.json")
    check(r["active"]["messages"] == e["active"]["messages"], "the conversation is restored by a second run")
    check(r["recent_models"][0] == TINY and not r["model_loaded"], "recent models restored (nothing loaded yet)")
    non_blank(run.path("restored.png"))


def scenario_stop_and_close(run):
    # ignore_eos: how many tokens stream before a stop depends on timing, and so does where the
    # next reply's random draws land; an end-of-generation token must not end a reply early.
    run(["open " + TINY, "wait-load 30", "set app.max_tokens 0", "set session.n_ctx 8192", "set sampler.ignore_eos 1",
         "type Write forever.", "send", "wait-stream 20 30", "stop", "wait-reply 30",
         "dump-state " + run.path("stopped.json"),
         # The same with the keyboard: Enter sends, Esc stops.
         "type Again, with keys.", "key enter", "wait-stream 20 30", "key esc", "wait-reply 30",
         "dump-state " + run.path("stopped_keys.json"), "screenshot " + run.path("stopped.png"), "quit"])
    s = run.state("stopped.json")
    m = last_assistant(s)
    check(m is not None and m["content"] and m.get("stopped"), "Stop cuts the reply mid-stream (partial text kept)")
    check(s["last_reply"]["stopped"] and 0 < s["last_reply"]["generated_tokens"] < 8000,
          "stopped after %d tokens" % s["last_reply"]["generated_tokens"])
    k = run.state("stopped_keys.json")
    msgs = k["active"]["messages"]
    check(len(msgs) == 4 and msgs[2]["content"] == "Again, with keys.", "Enter sent the message")
    check(msgs[3].get("stopped") and k["phase"] == "idle", "Esc stopped the reply")
    non_blank(run.path("stopped.png"))

    # Quitting while a reply streams: clean exit (cancel + join), and the partial reply is not lost.
    t0 = time.time()
    run(["open " + TINY, "wait-load 30", "set app.max_tokens 0", "set sampler.ignore_eos 1", "type Keep going.", "send", "wait-stream 10 30", "quit"])
    check(time.time() - t0 < 30, "closing during generation exits promptly")
    run(["dump-state " + run.path("after_close.json"), "quit"])
    m = last_assistant(run.state("after_close.json"))
    check(m is not None and m["content"] and m.get("stopped"), "the reply cut by closing is saved as stopped")


def scenario_bad_input(run):
    bad = run.path("corrupt.gguf")
    with open(bad, "wb") as f:
        f.write(b"GGUF" + os.urandom(4096))
    truncated = run.path("truncated.gguf")
    with open(TINY, "rb") as src, open(truncated, "wb") as dst:
        dst.write(src.read(300000))
    os.makedirs(os.path.join(run.cfg, "conversations"))
    with open(os.path.join(run.cfg, "conversations", "broken.json"), "w") as f:
        f.write("{not json")
    run(["dump-state " + run.path("broken_conv.json"),
         "open " + TINY, "cancel-load", "wait-load 30", "dump-state " + run.path("cancelled.json"),
         "open /nonexistent/model.gguf", "wait-load 10", "dump-state " + run.path("missing.json"),
         "open " + bad, "wait-load 10", "dump-state " + run.path("corrupt.json"),
         "open " + truncated, "wait-load 10", "dump-state " + run.path("truncated.json"),
         "type no model yet", "send", "dump-state " + run.path("no_model.json"),
         "set session.n_ctx abc", "set sampler.temperature 1000", "set sampler.no_such_key 1",
         "show settings", "screenshot " + run.path("settings_errors.png"), "show settings 0",
         "dump-state " + run.path("settings.json"),
         "set session.n_ctx 1024", "set sampler.temperature 0.7",
         "open " + TINY, "wait-load 30", "dump-state " + run.path("no_template.json"),
         "paste-big 3000000", "sleep 0.3", "dump-state " + run.path("pasted.json"),
         "send", "wait-reply 60", "dump-state " + run.path("too_long.json"),
         "screenshot " + run.path("errors.png"),
         "set app.max_tokens 8", "type still alive?", "send", "wait-reply 30",
         "dump-state " + run.path("alive.json"), "quit"])
    check(any("conversation not restored" in n for n in notices(run.state("broken_conv.json"), "warning")),
          "a corrupt conversation file is skipped with a notice")
    c = run.state("cancelled.json")
    cancelled = any("loading cancelled" in n for n in notices(c))
    check(c["phase"] == "idle" and (c["model_loaded"] != cancelled),
          "cancel right after open: %s" % ("cancelled" if cancelled else "the load had already finished"))
    for name, what in (("missing.json", "missing file"), ("corrupt.json", "corrupt file"),
                       ("truncated.json", "truncated file")):
        s = run.state(name)
        errs = notices(s, "error")
        check(not s["model_loaded"] and any("cannot open" in e for e in errs), "%s: error shown (%s)" % (what, errs[-1][:120]))
    check(any("open a model first" in n for n in notices(run.state("no_model.json"))), "sending without a model: notice")
    st = run.state("settings.json")
    check("n_ctx" in st["settings_errors"] and "temperature" in st["settings_errors"],
          "invalid settings show the library's errors: %s" % st["settings_errors"])
    check(any("no_such_key" in e for e in notices(st, "error")), "unknown setting: error shown")
    s = run.state("no_template.json")
    check(s["template_fallback"] and any("no chat template" in n for n in notices(s, "warning")),
          "model without a chat template: default template with a notice")
    p = run.state("pasted.json")
    check(p["input_bytes"] == 1 << 20 and any("cut to 1 MiB" in n for n in notices(p)),
          "enormous paste is cut to 1 MiB with a notice (%d bytes in the box)" % p["input_bytes"])
    t = run.state("too_long.json")
    check(any("context holds" in e for e in notices(t, "error")), "a message larger than the context: error shown")
    check(t["input_bytes"] == 1 << 20 and len(t["active"]["messages"]) == 0,
          "the failed message goes back into the box, the conversation is unchanged")
    a = run.state("alive.json")
    check(last_assistant(a) is not None and last_assistant(a)["content"], "the app still answers afterwards")
    non_blank(run.path("settings_errors.png"))
    non_blank(run.path("errors.png"))


def scenario_keyboard_and_edit(run):
    raising = run.path("raising.jinja")
    with open(raising, "w") as f:
        f.write("{{ raise_exception('this template refuses: ' + messages[-1]['content']) }}")
    run(["open " + TINY, "wait-load 30", "set app.max_tokens 12",
         "type first line", "key shift+enter", "dump-state " + run.path("newline.json"),
         "key enter", "wait-reply 30", "dump-state " + run.path("sent.json"),
         "key ctrl+n", "dump-state " + run.path("new_chat.json"),
         "type in the second chat", "send", "wait-reply 30",
         "select-chat 1", "dump-state " + run.path("selected.json"),
         # A chat template from a file: DeepSeek R1's opens <think> in the prompt, so the reply is
         # reasoning (shown collapsed) until the model closes it.
         "new-chat", "set app.template_file " + R1_TEMPLATE, "type Think first.", "send", "wait-reply 30",
         "dump-state " + run.path("reasoning.json"), "screenshot " + run.path("reasoning.png"),
         "set app.template_file " + raising, "type boom?", "send", "wait-reply 30",
         "dump-state " + run.path("raising.json"),
         "set app.template_file /nonexistent.jinja", "send", "dump-state " + run.path("no_template_file.json"),
         "quit"])
    n = run.state("newline.json")
    check(n["input_bytes"] == len("first line") + 1, "Shift+Enter inserts a newline (not sent)")
    s = run.state("sent.json")
    check(s["active"]["messages"][0]["content"] == "first line" and last_assistant(s)["content"],
          "Enter sends the message and a reply arrives")
    c = run.state("new_chat.json")
    check(len(c["conversations"]) == 2 and not c["active"]["messages"], "Ctrl+N starts a new chat")
    sel = run.state("selected.json")
    check(len(sel["conversations"]) == 2 and sel["active"]["messages"][0]["content"] == "first line",
          "the sidebar switches back to the first chat")
    r = last_assistant(run.state("reasoning.json"))
    check(r is not None and r.get("reasoning"), "reasoning split off by the chat parser (template opened <think>)")
    non_blank(run.path("reasoning.png"))
    x = run.state("raising.json")
    check(any("this template refuses: boom?" in e for e in notices(x, "error")),
          "a template error is shown with the library's message")
    check(x["input_bytes"] == len("boom?") and len(x["active"]["messages"]) == 2,
          "after a template error the message is back in the box")
    n = run.state("no_template_file.json")
    check(any("cannot read the chat template file" in e for e in notices(n, "error")), "missing template file: error")


def scenario_demo_model(run):
    model = DEMO
    if not os.path.exists(model):
        if not MAKE_DEMO or not os.path.exists(MAKE_DEMO):
            print("skip: no demo model at", DEMO, "and no ikllm-make-demo")
            sys.exit(77)
        model = run.path("interim-demo.gguf")
        subprocess.run([MAKE_DEMO, model], check=True, stdout=subprocess.DEVNULL)
        print("using the interim demo model made by", MAKE_DEMO)
    run(["open " + model, "wait-load 60", "set app.max_tokens 64", "set sampler.temperature 0",
         "type It was the best of times,", "send",
         "wait-reply 60", "dump-state " + run.path("demo.json"), "screenshot " + run.path("demo.png"), "quit"])
    s = run.state("demo.json")
    check(s["model_loaded"] and last_assistant(s) and last_assistant(s)["content"], "demo model replies")
    if model != DEMO:  # the interim model recites A Tale of Two Cities: the reply is exact text
        check("it was the worst of times" in last_assistant(s)["content"], "the interim demo model recites its text")
    non_blank(run.path("demo.png"))


def main():
    if not shutil.which("xvfb-run") or not shutil.which("Xvfb"):
        print("skip: xvfb-run not installed")
        return 77
    if not os.path.exists(TINY):
        print("skip: no refdata at", TINY)
        return 77
    work = tempfile.mkdtemp(prefix="ikllm-chat-%s-" % SCENARIO)
    try:
        globals()["scenario_" + SCENARIO](Run(work))
    except (Failure, subprocess.TimeoutExpired, FileNotFoundError, KeyError, json.JSONDecodeError) as e:
        print("FAIL: %s (files kept in %s)" % (e, work))
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print("PASS", SCENARIO)
    return 0


if __name__ == "__main__":
    sys.exit(main())
