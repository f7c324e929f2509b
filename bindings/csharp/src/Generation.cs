// Streaming generation (the loop of `ikllm run`), chat template rendering and JSON Schema grammars.
using System;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;
using Ikllm.Native;

namespace Ikllm
{
    public static class Generation
    {
        /// <summary>Streams the continuation of prompt as text pieces, as `ikllm run` does: BOS as the
        /// vocabulary asks, the prompt recorded in the sampler (not its grammar) and decoded as one batch,
        /// then one token at a time until end of generation, a completed grammar, a full context or
        /// nPredict tokens. samplerOptions: e.g. { "temperature", 0 } for greedy.</summary>
        public static IEnumerable<string> Generate(Model model, string prompt, int nPredict,
                                                   IDictionary<string, object> samplerOptions = null,
                                                   IDictionary<string, object> sessionOptions = null)
        {
            var so = new Dictionary<string, object> { { "n_ctx", 4096 }, { "n_seq_max", 1 } };
            if (sessionOptions != null) foreach (var kv in sessionOptions) so[kv.Key] = kv.Value;
            using (var session = new Session(model, so))
            using (var sampler = new Sampler(model, samplerOptions))
            using (var detok = new Detokenizer(model))
            {
                int[] toks = model.Tokenize(prompt);
                if (toks.Length == 0) throw new ArgumentException("the prompt produced no tokens");
                sampler.Accept(toks, false);
                session.Decode(toks);
                for (int i = 0; i < nPredict; i++)
                {
                    int tok = sampler.Sample(session);
                    if (model.IsEndOfGeneration(tok)) break;
                    string piece = detok.Push(tok);
                    if (piece.Length > 0) yield return piece;
                    if (sampler.GrammarState == C.IKLLM_GRAMMAR_DONE) break;
                    if (!session.TryDecodeOne(tok)) break;
                }
                string tail = detok.Flush();
                if (tail.Length > 0) yield return tail;
            }
        }

#if NETCOREAPP3_0_OR_GREATER
        /// <summary>Generate with every step on the thread pool (needs C# 8 / .NET Core 3+; not built by Mono).</summary>
        public static async IAsyncEnumerable<string> GenerateAsync(Model model, string prompt, int nPredict,
            IDictionary<string, object> samplerOptions = null,
            [System.Runtime.CompilerServices.EnumeratorCancellation] CancellationToken cancel = default)
        {
            using var e = Generate(model, prompt, nPredict, samplerOptions).GetEnumerator();
            while (await Task.Run(() => e.MoveNext(), cancel).ConfigureAwait(false))
                yield return e.Current;
        }
#endif

        /// <summary>Runs Generate on a worker thread, calling onPiece there for each piece (works on Mono).</summary>
        public static Task GenerateInBackground(Model model, string prompt, int nPredict, Action<string> onPiece,
                                                IDictionary<string, object> samplerOptions = null)
        {
            return Task.Run(() => { foreach (var p in Generate(model, prompt, nPredict, samplerOptions)) onPiece(p); });
        }
    }

    public static class Chat
    {
        /// <summary>Renders a Jinja chat template (template text, or the model's default when null).
        /// messagesJson: a JSON array of {"role", "content"} objects.</summary>
        public static string Render(string template, string messagesJson, bool addGenerationPrompt = true,
                                    Model model = null, string toolsJson = null, string extraVarsJson = null)
        {
            Library.EnsureLoaded();
            using (var o = new Options(OptionsKind.Chat))
            {
                ModelHandle m = model != null ? model.Handle : ModelHandle.Null;
                byte[] t = Utf8.Z(template), msgs = Utf8.Z(messagesJson), tools = Utf8.Z(toolsJson), extra = Utf8.Z(extraVarsJson);
                return Utf8.ReadText((byte[] b, UIntPtr c, out UIntPtr nd) =>
                    NativeMethods.ikllm_chat_render(m, t, msgs, tools, extra, addGenerationPrompt ? 1 : 0, o.Handle, b, c, out nd),
                    "ikllm_chat_render");
            }
        }
    }

    public static class Grammar
    {
        /// <summary>GBNF text for a JSON Schema.</summary>
        public static string FromJsonSchema(string schemaJson)
        {
            Library.EnsureLoaded();
            IntPtr p;
            Err.Check(NativeMethods.ikllm_json_schema_to_grammar(Utf8.Z(schemaJson), out p), "ikllm_json_schema_to_grammar");
            try { return Utf8.FromPtr(p); }
            finally { NativeMethods.ikllm_free(p); }
        }
    }
}
