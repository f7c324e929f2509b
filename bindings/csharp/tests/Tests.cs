// Test runner of the C# binding: checks against the C API (through the `ikllm` CLI) on the
// ../shared/refdata models; tests that need a model are skipped when they are absent.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Text;
using Ikllm;
using Ikllm.Native;

sealed class SkipException : Exception { public SkipException(string m) : base(m) { } }

static class Tests
{
    static readonly string Repo = FindRepo();
    static readonly string Models = Path.GetFullPath(Path.Combine(Repo, "..", "shared", "refdata", "models"));
    static readonly string Llama = Path.Combine(Models, "llama-tiny-f16.gguf");
    static readonly string Cli = Environment.GetEnvironmentVariable("IKLLM_CLI") ?? Path.Combine(Repo, "build", "ikllm");
    const string Prompt = "The quick brown fox";

    static string FindRepo()
    {
        // bindings/csharp/tests/../../.. from the source; the binary lives in the build folder.
        string dir = Environment.GetEnvironmentVariable("IKLLM_REPO");
        if (!string.IsNullOrEmpty(dir)) return dir;
        dir = AppDomain.CurrentDomain.BaseDirectory;
        while (dir != null && !File.Exists(Path.Combine(dir, "include", "ikllm.h"))) dir = Path.GetDirectoryName(dir.TrimEnd('/'));
        return dir ?? ".";
    }

    static string Need(string path)
    {
        if (!File.Exists(path)) throw new SkipException("reference model " + path + " absent");
        return path;
    }

    static byte[] RunCli(params string[] args)
    {
        var psi = new ProcessStartInfo(Cli, string.Join(" ", args.Select(a => "\"" + a.Replace("\"", "\\\"") + "\"")))
        { UseShellExecute = false, RedirectStandardOutput = true };
        using (var p = Process.Start(psi))
        using (var ms = new MemoryStream())
        {
            p.StandardOutput.BaseStream.CopyTo(ms);
            p.WaitForExit();
            if (p.ExitCode != 0) throw new Exception("ikllm " + args[0] + " failed");
            return ms.ToArray();
        }
    }

    static void Assert(bool cond, string what) { if (!cond) throw new Exception("assertion failed: " + what); }

    static IkllmException Throws(Action a)
    {
        try { a(); }
        catch (IkllmException e) { return e; }
        throw new Exception("expected an IkllmException");
    }

    static Dictionary<string, object> D(params object[] kv)
    {
        var d = new Dictionary<string, object>();
        for (int i = 0; i < kv.Length; i += 2) d[(string)kv[i]] = kv[i + 1];
        return d;
    }

    // ---- tests
    static void VersionInfo()
    {
        Assert(Library.AbiVersion == AbiInfo.AbiVersion, "abi version");
        Assert(Library.Version == AbiInfo.Version, "version string " + Library.Version);
        Assert(Library.StatusName(C.IKLLM_ERR_IO) == "IKLLM_ERR_IO", "status name");
    }

    static string RunProcess(string exe, string args, string stdin, out int exitCode)
    {
        var psi = new ProcessStartInfo(exe, args) { UseShellExecute = false, RedirectStandardInput = stdin != null,
                                                    RedirectStandardOutput = true, RedirectStandardError = true };
        using (var p = Process.Start(psi))
        {
            if (stdin != null) { p.StandardInput.Write(stdin); p.StandardInput.Close(); }
            string text = p.StandardOutput.ReadToEnd() + p.StandardError.ReadToEnd();
            p.WaitForExit();
            exitCode = p.ExitCode;
            return text;
        }
    }

    static void OtherAbiMajorIsRefused()
    {
        // A library whose ikllm_abi_version() says 99, mapped in a copy of the binding.
        string dir = Path.Combine(Path.GetTempPath(), "ikllm-cs-" + Guid.NewGuid().ToString("N"));
        Directory.CreateDirectory(dir);
        try
        {
            int rc;
            string so = Path.Combine(dir, "libfake_ikllm.so");
            RunProcess("cc", "-shared -fPIC -o \"" + so + "\" -x c -", "int ikllm_abi_version(void) { return 99; }\n", out rc);
            Assert(rc == 0, "fake library built");
            string bin = AppDomain.CurrentDomain.BaseDirectory;
            foreach (var f in new[] { "Ikllm.dll", "Generate.exe" }) File.Copy(Path.Combine(bin, f), Path.Combine(dir, f));
            File.WriteAllText(Path.Combine(dir, "Ikllm.dll.config"),
                              "<configuration><dllmap dll=\"ikllm\" target=\"" + so + "\"/></configuration>");
            string output = RunProcess("mono", "\"" + Path.Combine(dir, "Generate.exe") + "\" m p 1", null, out rc);
            Assert(rc != 0 && output.Contains("LibraryLoadException") && output.Contains("has ABI major 99"), "refused: " + output);
        }
        finally { Directory.Delete(dir, true); }
    }

    static void OptionListingAndSetting()
    {
        var sampler = Library.ListOptions(OptionsKind.Sampler);
        Assert(sampler.Any(o => o.Name == "temperature" && o.Type == "float"), "temperature listed");
        using (var o = new Options(OptionsKind.Session, D("n_ctx", 256, "kv_type", "f32")))
        {
            Assert(o.GetInt("n_ctx") == 256, "n_ctx");
            Assert(o.GetString("kv_type") == "f32", "kv_type");
        }
    }

    static void BadOption()
    {
        var e = Throws(() => new Options(OptionsKind.Session, D("no_such_option", 1)));
        Assert(e.Status == C.IKLLM_ERR_NOT_FOUND || e.Status == C.IKLLM_ERR_INVALID_ARGUMENT, "status " + e.StatusName);
        Assert(e.Message.Contains("no_such_option"), "message names the key: " + e.Message);
        e = Throws(() => new Options(OptionsKind.Session, D("n_ctx", -5)));
        Assert(e.Status == C.IKLLM_ERR_INVALID_ARGUMENT, "range: " + e.StatusName);
    }

    static void MissingFile()
    {
        var e = Throws(() => new Model("/nonexistent/model.gguf"));
        Assert(e.Status == C.IKLLM_ERR_IO && e.StatusName == "IKLLM_ERR_IO", "status " + e.StatusName);
        Assert(e.NativeMessage.Length > 0, "message");
    }

    static void CorruptFile()
    {
        string path = Path.GetTempFileName();
        try
        {
            var bytes = new List<byte>(Encoding.ASCII.GetBytes("GGUF"));
            bytes.AddRange(BitConverter.GetBytes(3u));
            bytes.AddRange(BitConverter.GetBytes(1UL << 60));
            bytes.AddRange(BitConverter.GetBytes(1UL << 60));
            bytes.AddRange(new byte[32]);
            File.WriteAllBytes(path, bytes.ToArray());
            var e = Throws(() => new Model(path));
            Assert(e.Status == C.IKLLM_ERR_INVALID_FILE, "status " + e.StatusName);
        }
        finally { File.Delete(path); }
    }

    static void OutOfRangeToken()
    {
        using (var m = new Model(Need(Llama)))
        using (var s = new Session(m, D("n_ctx", 64)))
        {
            foreach (int bad in new[] { m.VocabSize, -1 })
                Assert(Throws(() => s.Decode(new[] { bad })).Status == C.IKLLM_ERR_INVALID_ARGUMENT, "decode " + bad);
            Assert(Throws(() => m.Detokenize(new[] { m.VocabSize + 7 })).Status == C.IKLLM_ERR_INVALID_ARGUMENT, "detokenize");
        }
    }

    static void LoadProgressAndMetadata()
    {
        var seen = new List<float>();
        using (var m = new Model(Need(Llama), null, p => { seen.Add(p); return true; }))
        {
            Assert(seen.Count > 0 && seen[seen.Count - 1] == 1.0f, "progress reaches 1");
            Assert(m.Architecture == "llama", "architecture");
            Assert(m.Metadata()["general.architecture"] == "llama", "metadata");
            Assert(m.ChatTemplate() == null, "no chat template");
        }
    }

    static void LoadCancel()
    {
        var e = Throws(() => new Model(Need(Llama), null, p => false));
        Assert(e is CancelledException && e.Status == C.IKLLM_CANCELLED, "cancel from progress");
        using (var flag = new CancelFlag())
        {
            flag.Cancel();
            Assert(Throws(() => new Model(Llama, null, null, flag)) is CancelledException, "cancel flag");
        }
    }

    static void TokenizeRoundTrip()
    {
        using (var m = new Model(Need(Llama)))
        {
            int[] toks = m.Tokenize(Prompt);
            Assert(toks[0] == m.SpecialToken(C.IKLLM_TOKEN_BOS), "BOS first");
            Assert(m.Detokenize(toks).Trim() == Prompt, "round trip: " + m.Detokenize(toks));
            Assert(m.Tokenize(Prompt, false).SequenceEqual(toks.Skip(1)), "no BOS");
        }
    }

    static void LogitsEqualCApi()
    {
        using (var m = new Model(Need(Llama)))
        {
            int[] toks = m.Tokenize(Prompt);
            string ids = Path.GetTempFileName(), outf = Path.GetTempFileName();
            try
            {
                File.WriteAllText(ids, string.Join(" ", toks));
                RunCli("logits", "-m", Llama, "--tokens", ids, "--out", outf);
                byte[] refBytes = File.ReadAllBytes(outf);
                int n = m.VocabSize;
                using (var s = new Session(m, D("n_ctx", 512, "n_batch", toks.Length)))
                {
                    s.Decode(toks, null, null, Enumerable.Repeat(1, toks.Length).ToArray());
                    for (int i = 0; i < toks.Length; i++)
                    {
                        float[] lg = s.Logits(i);
                        Assert(lg.Length == n, "n_vocab");
                        var got = new byte[n * 4];
                        Buffer.BlockCopy(lg, 0, got, 0, got.Length);
                        Assert(got.SequenceEqual(refBytes.Skip(i * n * 4).Take(n * 4)), "logits row " + i + " equal");
                    }
                }
            }
            finally { File.Delete(ids); File.Delete(outf); }
        }
    }

    static void BatchedTwoSequences()
    {
        using (var m = new Model(Need(Llama)))
        {
            int[] a = m.Tokenize("Hello world"), b = m.Tokenize(Prompt);
            var alone = new List<float[]>();
            foreach (var t in new[] { a, b })
                using (var s = new Session(m, D("n_ctx", 128)))
                {
                    s.Decode(t);
                    alone.Add(s.Logits());
                }
            using (var s = new Session(m, D("n_ctx", 128, "n_seq_max", 2)))
            {
                int[] toks = a.Concat(b).ToArray();
                int[] seq = a.Select(_ => 0).Concat(b.Select(_ => 1)).ToArray();
                int[] want = new int[toks.Length];
                want[a.Length - 1] = 1;
                want[toks.Length - 1] = 1;
                s.Decode(toks, null, seq, want);
                var both = new[] { s.Logits(a.Length - 1), s.Logits(toks.Length - 1) };
                Assert(s.SequencePosMax(0) == a.Length - 1 && s.SequencePosMax(1) == b.Length - 1, "positions");
                for (int k = 0; k < 2; k++)
                    Assert(alone[k].Zip(both[k], (x, y) => Math.Abs(x - y)).Max() < 1e-3, "sequence " + k + " logits");
            }
        }
    }

    static void Sampling()
    {
        using (var m = new Model(Need(Llama)))
        using (var s = new Session(m, D("n_ctx", 64)))
        using (var greedy = new Sampler(m, D("temperature", 0)))
        {
            s.Decode(m.Tokenize(Prompt));
            float[] lg = s.Logits();
            int best = Array.IndexOf(lg, lg.Max());
            Assert(greedy.Sample(s) == best, "greedy = argmax");
            Assert(greedy.SampleLogits(lg) == best, "greedy from logits");
            var runs = new List<int[]>();
            for (int r = 0; r < 2; r++)
                using (var smp = new Sampler(m, D("temperature", 1.0, "seed", 7)))
                    runs.Add(Enumerable.Range(0, 5).Select(_ => smp.SampleLogits(lg)).ToArray());
            Assert(runs[0].SequenceEqual(runs[1]), "same seed, same tokens");
        }
    }

    static string Greedy(Model m, string prompt, int n, Dictionary<string, object> extra = null)
    {
        var opts = D("temperature", 0);
        if (extra != null) foreach (var kv in extra) opts[kv.Key] = kv.Value;
        return string.Concat(Generation.Generate(m, prompt, n, opts));
    }

    static void GreedyEqualsCli()
    {
        using (var m = new Model(Need(Llama)))
            foreach (var c in new[] { Tuple.Create(Prompt, 24), Tuple.Create("Hello", 40) })
            {
                byte[] want = RunCli("run", "-m", Llama, "-p", c.Item1, "-n", c.Item2.ToString(), "--temp", "0");
                var pieces = Generation.Generate(m, c.Item1, c.Item2, D("temperature", 0)).ToList();
                Assert(pieces.Count > 1, "streamed");
                Assert(Encoding.UTF8.GetBytes(c.Item1 + string.Concat(pieces) + "\n").SequenceEqual(want), "same text as ikllm run");
            }
    }

    static void ExamplePrintsLikeCli()
    {
        Need(Llama);
        string exe = Path.Combine(AppDomain.CurrentDomain.BaseDirectory, "Generate.exe");
        var psi = new ProcessStartInfo("mono", "\"" + exe + "\" \"" + Llama + "\" \"" + Prompt + "\" 16")
        { UseShellExecute = false, RedirectStandardOutput = true };
        byte[] got;
        using (var p = Process.Start(psi))
        using (var ms = new MemoryStream())
        {
            p.StandardOutput.BaseStream.CopyTo(ms);
            p.WaitForExit();
            got = ms.ToArray();
        }
        Assert(got.SequenceEqual(RunCli("run", "-m", Llama, "-p", Prompt, "-n", "16", "--temp", "0")), "example output");
    }

    static void BackgroundGeneration()
    {
        using (var m = new Model(Need(Llama)))
        {
            var sb = new StringBuilder();
            Generation.GenerateInBackground(m, Prompt, 8, p => sb.Append(p), D("temperature", 0)).Wait();
            Assert(sb.ToString() == Greedy(m, Prompt, 8), "same text off the main thread");
        }
    }

    static void Constrained()
    {
        using (var m = new Model(Need(Llama)))
        {
            string yn = Greedy(m, Prompt, 16, D("grammar", "root ::= \"yes\" | \"no\""));
            Assert(yn == "yes" || yn == "no", "grammar: " + yn);
            string schema = "{\"type\":\"object\",\"properties\":{\"ok\":{\"type\":\"boolean\"}},\"required\":[\"ok\"],\"additionalProperties\":false}";
            string json = Greedy(m, Prompt, 64, D("json_schema", schema)).Replace(" ", "").Replace("\n", "");
            Assert(json == "{\"ok\":true}" || json == "{\"ok\":false}", "json_schema: " + json);
            Assert(Grammar.FromJsonSchema(schema).Contains("root"), "schema to grammar");
            Assert(Throws(() => Grammar.FromJsonSchema("{not json")).Status == C.IKLLM_ERR_GRAMMAR, "bad schema");
            Assert(Throws(() => new Sampler(m, D("grammar", "root ::= ("))).Status == C.IKLLM_ERR_GRAMMAR, "bad grammar");
        }
    }

    static void ChatTemplate()
    {
        const string tpl = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
        string msgs = "[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"Hi\"}]";
        Assert(Chat.Render(tpl, msgs) == "<|system|>Be brief.\n<|user|>Hi\n<|assistant|>", "render");
        Assert(Chat.Render(tpl, msgs, false) == "<|system|>Be brief.\n<|user|>Hi\n", "no generation prompt");
        var e = Throws(() => Chat.Render("{{ raise_exception('nope') }}", "[]"));
        Assert(e.Status == C.IKLLM_ERR_TEMPLATE && e.NativeMessage.Contains("nope"), "template error");
    }

    static int Main()
    {
        var tests = new Dictionary<string, Action> {
            { "VersionInfo", VersionInfo }, { "OtherAbiMajorIsRefused", OtherAbiMajorIsRefused },
            { "OptionListingAndSetting", OptionListingAndSetting },
            { "BadOption", BadOption }, { "MissingFile", MissingFile }, { "CorruptFile", CorruptFile },
            { "OutOfRangeToken", OutOfRangeToken }, { "LoadProgressAndMetadata", LoadProgressAndMetadata },
            { "LoadCancel", LoadCancel }, { "TokenizeRoundTrip", TokenizeRoundTrip },
            { "LogitsEqualCApi", LogitsEqualCApi }, { "BatchedTwoSequences", BatchedTwoSequences },
            { "Sampling", Sampling }, { "GreedyEqualsCli", GreedyEqualsCli },
            { "ExamplePrintsLikeCli", ExamplePrintsLikeCli }, { "BackgroundGeneration", BackgroundGeneration },
            { "Constrained", Constrained }, { "ChatTemplate", ChatTemplate },
        };
        int failed = 0, skipped = 0;
        foreach (var t in tests)
        {
            try { t.Value(); Console.WriteLine("ok      " + t.Key); }
            catch (SkipException e) { skipped++; Console.WriteLine("skipped " + t.Key + ": " + e.Message); }
            catch (Exception e) { failed++; Console.WriteLine("FAILED  " + t.Key + ": " + e); }
        }
        Console.WriteLine("{0} tests, {1} failed, {2} skipped", tests.Count, failed, skipped);
        return failed == 0 ? 0 : 1;
    }
}
