"""Tests of the Python binding against the C API (through the `ikllm` CLI) on ../shared/refdata
models; every test that needs a model skips when the reference data is absent."""
import array
import json
import os
import subprocess
import sys
import tempfile
import threading
import unittest

import ikllm
from ikllm import abi

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
MODELS = os.path.normpath(os.path.join(REPO, "..", "shared", "refdata", "models"))
LLAMA = os.path.join(MODELS, "llama-tiny-f16.gguf")
QWEN = os.path.join(MODELS, "qwen3-tiny-f16.gguf")
CLI = os.environ.get("IKLLM_CLI", os.path.join(REPO, "build", "ikllm"))
PROMPT = "The quick brown fox"


def need(path):
    if not os.path.exists(path):
        raise unittest.SkipTest("reference model %s absent" % path)
    return path


def cli(*args):
    return subprocess.run([CLI, *args], check=True, stdout=subprocess.PIPE).stdout


class VersionAndOptions(unittest.TestCase):
    def test_version(self):
        self.assertEqual(ikllm.abi_version(), abi.ABI_VERSION)
        self.assertEqual(ikllm.version(), "%d.%d.%d" % abi.VERSION)
        self.assertEqual(ikllm.status_name(abi.IKLLM_ERR_IO), "IKLLM_ERR_IO")

    def test_list_options(self):
        names = {o["name"]: o for o in ikllm.list_options("sampler")}
        self.assertEqual(names["temperature"]["type"], "float")
        self.assertIn("n_ctx", {o["name"] for o in ikllm.list_options("session")})

    def test_set_and_get(self):
        with ikllm.Options("session", {"n_ctx": 256, "kv_type": "f32"}) as o:
            self.assertEqual(o.get("n_ctx"), 256)
            self.assertEqual(o.get("kv_type"), "f32")

    def test_bad_option(self):
        with self.assertRaises(ikllm.IkllmError) as c:
            ikllm.Options("session", {"no_such_option": 1})
        self.assertIn(c.exception.status, (abi.IKLLM_ERR_NOT_FOUND, abi.IKLLM_ERR_INVALID_ARGUMENT))
        self.assertIn("no_such_option", str(c.exception))
        with self.assertRaises(ikllm.IkllmError) as c:
            ikllm.Options("session", {"n_ctx": -5})
        self.assertEqual(c.exception.status, abi.IKLLM_ERR_INVALID_ARGUMENT)

    def test_abi_mismatch_is_refused(self):
        from ikllm import _native
        saved = abi.ABI_VERSION
        _native.lib.cache_clear()
        try:
            abi.ABI_VERSION = saved + 1
            with self.assertRaises(ikllm.AbiMismatchError) as c:
                _native.lib()
            self.assertIn("ABI major", str(c.exception))
        finally:
            abi.ABI_VERSION = saved
            _native.lib.cache_clear()


def fake_library(tmp):
    """A shared library whose ikllm_abi_version() says 99 (built with the C compiler)."""
    so = os.path.join(tmp, "libfake_ikllm.so")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", so, "-x", "c", "-"], check=True,
                   input=b"int ikllm_abi_version(void) { return 99; }\n")
    return so


class AbiCheck(unittest.TestCase):
    def test_other_abi_major_is_refused_at_load(self):
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, IKLLM_LIB=fake_library(tmp), PYTHONPATH=os.path.dirname(HERE))
            r = subprocess.run([sys.executable, "-c", "import ikllm; ikllm.version()"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(b"AbiMismatchError", r.stderr)
        self.assertIn(b"has ABI major 99", r.stderr)


class Errors(unittest.TestCase):
    def test_missing_file(self):
        with self.assertRaises(ikllm.IkllmError) as c:
            ikllm.Model("/nonexistent/model.gguf")
        self.assertEqual(c.exception.status, abi.IKLLM_ERR_IO)
        self.assertEqual(c.exception.status_name, "IKLLM_ERR_IO")
        self.assertTrue(c.exception.message)

    def test_corrupt_file(self):
        with tempfile.NamedTemporaryFile(suffix=".gguf") as f:
            # A GGUF v3 header announcing more tensors and keys than any file could hold.
            f.write(b"GGUF" + (3).to_bytes(4, "little") + (1 << 60).to_bytes(8, "little") * 2 + b"\0" * 32)
            f.flush()
            with self.assertRaises(ikllm.IkllmError) as c:
                ikllm.Model(f.name)
        self.assertEqual(c.exception.status, abi.IKLLM_ERR_INVALID_FILE)

    def test_out_of_range_token(self):
        with ikllm.Model(need(LLAMA)) as m, m.session(n_ctx=64) as s:
            for bad in (m.n_vocab, -1):
                with self.assertRaises(ikllm.IkllmError) as c:
                    s.decode([bad])
                self.assertEqual(c.exception.status, abi.IKLLM_ERR_INVALID_ARGUMENT)
            with self.assertRaises(ikllm.IkllmError) as c:
                m.detokenize([m.n_vocab + 7])
            self.assertEqual(c.exception.status, abi.IKLLM_ERR_INVALID_ARGUMENT)


class Loading(unittest.TestCase):
    def test_progress_and_metadata(self):
        seen = []
        with ikllm.Model(need(LLAMA), progress=seen.append) as m:
            self.assertTrue(seen and seen[-1] == 1.0 and seen == sorted(seen))
            self.assertEqual(m.architecture, "llama")
            self.assertEqual(m.metadata()["general.architecture"], "llama")
            self.assertGreater(m.n_vocab, 0)
            self.assertIsNone(m.chat_template())

    def test_cancel_from_progress(self):
        with self.assertRaises(ikllm.CancelledError) as c:
            ikllm.Model(need(LLAMA), progress=lambda p: False)
        self.assertEqual(c.exception.status, abi.IKLLM_CANCELLED)

    def test_cancel_flag(self):
        flag = ikllm.CancelFlag()
        flag.cancel()
        with self.assertRaises(ikllm.CancelledError):
            ikllm.Model(need(LLAMA), cancel=flag)

    def test_exception_in_progress_propagates(self):
        def boom(p):
            raise KeyError("from callback")
        with self.assertRaises(KeyError):
            ikllm.Model(need(LLAMA), progress=boom)


class Inference(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = ikllm.Model(need(LLAMA))

    @classmethod
    def tearDownClass(cls):
        cls.model.close()

    def test_tokenize_roundtrip(self):
        toks = self.model.tokenize(PROMPT)
        self.assertEqual(toks[0], self.model.bos)
        self.assertEqual(self.model.detokenize(toks), " " + PROMPT if self.model.detokenize(toks)[0] == " " else PROMPT)
        self.assertEqual(self.model.tokenize(PROMPT, add_special=False), toks[1:])
        self.assertEqual(b"".join(self.model.token_to_piece(t) for t in toks[1:]).decode().strip(), PROMPT)

    def test_logits_equal_c_api(self):
        toks = self.model.tokenize(PROMPT)
        with tempfile.TemporaryDirectory() as tmp:
            ids, out = os.path.join(tmp, "ids.txt"), os.path.join(tmp, "out.f32")
            with open(ids, "w") as f:
                f.write(" ".join(map(str, toks)))
            cli("logits", "-m", LLAMA, "--tokens", ids, "--out", out)
            with open(out, "rb") as fo:
                ref = array.array("f", fo.read())
        n = self.model.n_vocab
        with self.model.session(n_ctx=512, n_batch=len(toks)) as s:
            s.decode(toks, logits="all")
            for i in range(len(toks)):
                got = s.logits(i)
                self.assertEqual(got.format, "f")
                self.assertEqual(len(got), n)
                self.assertEqual(got.tobytes(), ref[i * n:(i + 1) * n].tobytes(), "logits row %d" % i)

    def test_batched_two_sequences(self):
        a = self.model.tokenize("Hello world")
        b = self.model.tokenize(PROMPT)
        alone = []
        for toks in (a, b):
            with self.model.session(n_ctx=128) as s:
                s.decode(toks)
                alone.append(s.logits())
        with self.model.session(n_ctx=128, n_seq_max=2) as s:
            s.decode(a + b, seq_ids=[0] * len(a) + [1] * len(b),
                     logits=[0] * (len(a) - 1) + [1] + [0] * (len(b) - 1) + [1])
            both = [s.logits(len(a) - 1), s.logits(len(a) + len(b) - 1)]
            self.assertEqual(s.seq_pos_max(0), len(a) - 1)
            self.assertEqual(s.seq_pos_max(1), len(b) - 1)
        for x, y in zip(alone, both):
            self.assertLess(max(abs(p - q) for p, q in zip(x, y)), 1e-3)

    def test_sampling(self):
        toks = self.model.tokenize(PROMPT)
        with self.model.session(n_ctx=64) as s, self.model.sampler(temperature=0) as greedy:
            s.decode(toks)
            lg = s.logits()
            best = max(range(len(lg)), key=lambda i: lg[i])
            self.assertEqual(greedy.sample(s), best)
            self.assertEqual(greedy.sample_logits(lg), best)
            picks = []
            for _ in range(2):
                with self.model.sampler(temperature=1.0, seed=7) as smp:
                    picks.append([smp.sample_logits(lg) for _ in range(5)])
            self.assertEqual(picks[0], picks[1])

    def test_greedy_generation_equals_cli(self):
        for prompt, n in ((PROMPT, 24), ("Hello", 40)):
            ref = cli("run", "-m", LLAMA, "-p", prompt, "-n", str(n), "--temp", "0")
            pieces = list(ikllm.generate(self.model, prompt, n, temperature=0))
            self.assertGreater(len(pieces), 1)  # streamed piece by piece
            self.assertEqual((prompt + "".join(pieces) + "\n").encode(), ref)

    def test_greedy_generation_other_vocabulary(self):
        with ikllm.Model(need(QWEN)) as qwen:
            prompt = "Grüße, 世界! Once upon"
            ref = cli("run", "-m", QWEN, "-p", prompt, "-n", "20", "--temp", "0")
            self.assertEqual((prompt + "".join(ikllm.generate(qwen, prompt, 20, temperature=0)) + "\n").encode(), ref)

    def test_example_prints_like_cli(self):
        ref = cli("run", "-m", LLAMA, "-p", PROMPT, "-n", "16", "--temp", "0")
        env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
        got = subprocess.run([sys.executable, os.path.join(HERE, "..", "examples", "generate.py"), LLAMA, PROMPT,
                              "16"], check=True, stdout=subprocess.PIPE, env=env).stdout
        self.assertEqual(got, ref)

    def test_grammar(self):
        text = "".join(ikllm.generate(self.model, PROMPT, 16, temperature=0, grammar='root ::= "yes" | "no"'))
        self.assertIn(text, ("yes", "no"))

    def test_json_schema(self):
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
                  "additionalProperties": False}
        text = "".join(ikllm.generate(self.model, PROMPT, 64, temperature=0, json_schema=json.dumps(schema)))
        self.assertIsInstance(json.loads(text)["ok"], bool)
        self.assertIn("root", ikllm.json_schema_to_grammar(schema))
        with self.assertRaises(ikllm.IkllmError) as c:
            ikllm.json_schema_to_grammar("{not json")
        self.assertEqual(c.exception.status, abi.IKLLM_ERR_GRAMMAR)

    def test_bad_grammar(self):
        with self.assertRaises(ikllm.IkllmError) as c:
            self.model.sampler(grammar="root ::= (")
        self.assertEqual(c.exception.status, abi.IKLLM_ERR_GRAMMAR)

    def test_generation_in_thread(self):
        out = []
        t = threading.Thread(target=lambda: out.append("".join(ikllm.generate(self.model, PROMPT, 8, temperature=0))))
        t.start()
        t.join()
        self.assertEqual(out[0], "".join(ikllm.generate(self.model, PROMPT, 8, temperature=0)))


class Chat(unittest.TestCase):
    TEMPLATE = ("{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}"
                "{% if add_generation_prompt %}<|assistant|>{% endif %}")

    def test_render(self):
        msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
        self.assertEqual(ikllm.render_chat(msgs, template=self.TEMPLATE),
                         "<|system|>Be brief.\n<|user|>Hi\n<|assistant|>")
        self.assertEqual(ikllm.render_chat(msgs, template=self.TEMPLATE, add_generation_prompt=False),
                         "<|system|>Be brief.\n<|user|>Hi\n")

    def test_template_error(self):
        with self.assertRaises(ikllm.IkllmError) as c:
            ikllm.render_chat([], template="{{ raise_exception('nope') }}")
        self.assertEqual(c.exception.status, abi.IKLLM_ERR_TEMPLATE)
        self.assertIn("nope", c.exception.message)


class Packaging(unittest.TestCase):
    def test_wheel_has_the_package(self):
        import zipfile
        sys.path.insert(0, os.path.dirname(HERE))
        import build_backend
        with tempfile.TemporaryDirectory() as tmp:
            name = build_backend.build_wheel(tmp)
            names = zipfile.ZipFile(os.path.join(tmp, name)).namelist()
        for f in ("ikllm/__init__.py", "ikllm/_abi.py", "ikllm/py.typed", "ikllm-0.1.0.dist-info/RECORD"):
            self.assertIn(f, names)


if __name__ == "__main__":
    unittest.main()
