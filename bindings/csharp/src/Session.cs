// Sessions (KV cache, batched decode, logits), samplers and the streaming detokenizer.
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using Ikllm.Native;

namespace Ikllm
{
    /// <summary>A context over a model; used by one thread at a time.</summary>
    public sealed class Session : IDisposable
    {
        internal readonly SessionHandle Handle;
        public readonly Model Model;

        /// <param name="options">session options: n_ctx, n_seq_max, n_batch, n_threads, kv_type, ...</param>
        public Session(Model model, IDictionary<string, object> options = null)
        {
            Model = model;
            using (var o = new Options(OptionsKind.Session, options))
                Err.Check(NativeMethods.ikllm_session_create(model.Handle, o.Handle, out Handle), "ikllm_session_create");
            Handle.KeepAlive(model.Handle);
        }

        public void Dispose() { Handle.Dispose(); }

        public int ContextSize { get { return NativeMethods.ikllm_session_n_ctx(Handle); } }

        /// <summary>Decodes one batch. seqIds/positions may be null; wantLogits null = only the last token.</summary>
        public void Decode(int[] tokens, int[] positions = null, int[] seqIds = null, int[] wantLogits = null)
        {
            foreach (var a in new[] { positions, seqIds, wantLogits })
                if (a != null && a.Length != tokens.Length) throw new ArgumentException("per-token arrays must match tokens");
            Err.Check(NativeMethods.ikllm_session_decode(Handle, tokens, positions, seqIds, wantLogits, tokens.Length, 0),
                      "ikllm_session_decode");
        }

        /// <summary>A copy of the logits of batch token index of the last decode (-1: the last with logits).</summary>
        public float[] Logits(int index = -1)
        {
            IntPtr p;
            int n;
            Err.Check(NativeMethods.ikllm_session_logits(Handle, index, out p, out n), "ikllm_session_logits");
            var out_ = new float[n];
            Marshal.Copy(p, out_, 0, n);
            return out_;
        }

        public int SequencePosMax(int seqId) { return NativeMethods.ikllm_session_seq_pos_max(Handle, seqId); }

        public void Clear() { Err.Check(NativeMethods.ikllm_session_clear(Handle), "ikllm_session_clear"); }

        /// <summary>Decodes one token appended to sequence 0; false when the context is full.</summary>
        internal bool TryDecodeOne(int token)
        {
            int st = NativeMethods.ikllm_session_decode(Handle, new[] { token }, null, null, null, 1, 0);
            if (st == C.IKLLM_CONTEXT_FULL) return false;
            Err.Check(st, "ikllm_session_decode");
            return true;
        }
    }

    /// <summary>A sampler chain: temperature (0 = greedy), top_k, ..., grammar or json_schema.</summary>
    public sealed class Sampler : IDisposable
    {
        internal readonly SamplerHandle Handle;

        public Sampler(Model model, IDictionary<string, object> options = null)
        {
            using (var o = new Options(OptionsKind.Sampler, options))
                Err.Check(NativeMethods.ikllm_sampler_create(model.Handle, o.Handle, out Handle), "ikllm_sampler_create");
            Handle.KeepAlive(model.Handle);
        }

        public void Dispose() { Handle.Dispose(); }

        public int Sample(Session session, int index = -1)
        {
            int tok;
            Err.Check(NativeMethods.ikllm_sampler_sample(Handle, session.Handle, index, out tok), "ikllm_sampler_sample");
            return tok;
        }

        public int SampleLogits(float[] logits)
        {
            int tok;
            Err.Check(NativeMethods.ikllm_sampler_sample_logits(Handle, logits, logits.Length, out tok), "ikllm_sampler_sample_logits");
            return tok;
        }

        /// <summary>Records tokens for penalties (and the grammar unless grammar is false, as for a prompt).</summary>
        public void Accept(int[] tokens, bool grammar = true)
        {
            Err.Check(NativeMethods.ikllm_sampler_accept_v2(Handle, tokens, new UIntPtr((ulong)tokens.Length),
                                                            grammar ? 0u : C.IKLLM_SAMPLER_ACCEPT_NO_GRAMMAR), "ikllm_sampler_accept_v2");
        }

        public int GrammarState
        {
            get
            {
                int s;
                Err.Check(NativeMethods.ikllm_sampler_grammar_state(Handle, out s), "ikllm_sampler_grammar_state");
                return s;
            }
        }
    }

    /// <summary>Incremental detokenizer: Push returns only complete UTF-8 text.</summary>
    public sealed class Detokenizer : IDisposable
    {
        internal readonly DetokHandle Handle;

        public Detokenizer(Model model, bool keepLeadingSpace = true, bool renderSpecial = false)
        {
            uint flags = (keepLeadingSpace ? C.IKLLM_DETOK_KEEP_LEADING_SPACE : 0u) | (renderSpecial ? C.IKLLM_DETOK_RENDER_SPECIAL : 0u);
            Err.Check(NativeMethods.ikllm_detok_create(model.Handle, flags, out Handle), "ikllm_detok_create");
            Handle.KeepAlive(model.Handle);
        }

        public void Dispose() { Handle.Dispose(); }

        public string Push(int token)
        {
            IntPtr p;
            UIntPtr n;
            Err.Check(NativeMethods.ikllm_detok_push(Handle, token, out p, out n), "ikllm_detok_push");
            return Utf8.FromPtr(p, (long)n.ToUInt64());
        }

        public string Flush()
        {
            IntPtr p;
            UIntPtr n;
            Err.Check(NativeMethods.ikllm_detok_flush(Handle, out p, out n), "ikllm_detok_flush");
            return Utf8.FromPtr(p, (long)n.ToUInt64());
        }
    }
}
