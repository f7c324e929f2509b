// Model loading (progress and cancel), metadata and tokenization.
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Threading;
using Ikllm.Native;

namespace Ikllm
{
    /// <summary>A flag the library polls: Cancel() from any thread stops a load or a session's decode.</summary>
    public sealed class CancelFlag : IDisposable
    {
        private IntPtr cell = Marshal.AllocHGlobal(4);
        public CancelFlag() { Marshal.WriteInt32(cell, 0); }
        public void Cancel() { Marshal.WriteInt32(cell, 1); Thread.MemoryBarrier(); }
        public void Reset() { Marshal.WriteInt32(cell, 0); }
        public bool IsCancelled { get { return Marshal.ReadInt32(cell) != 0; } }
        internal IntPtr Pointer { get { return cell; } }
        ~CancelFlag() { Dispose(); }
        public void Dispose()
        {
            IntPtr p = Interlocked.Exchange(ref cell, IntPtr.Zero);
            if (p != IntPtr.Zero) Marshal.FreeHGlobal(p);
            GC.SuppressFinalize(this);
        }
    }

    /// <summary>A loaded GGUF model: immutable, may be shared across threads. Dispose it (sessions
    /// created from it keep the native model alive until they are disposed too).</summary>
    public sealed class Model : IDisposable
    {
        internal readonly ModelHandle Handle;

        /// <param name="progress">called with the fraction loaded; return false to cancel</param>
        public Model(string path, IDictionary<string, object> options = null, Func<float, bool> progress = null,
                     CancelFlag cancel = null)
        {
            Library.EnsureLoaded();
            LibHandle lib;
            Err.Check(NativeMethods.ikllm_lib_create(0, out lib), "ikllm_lib_create");
            Exception raised = null;
            ikllm_progress_fn cb = null;
            if (progress != null)
                cb = (ud, p) => {
                    try { return progress(p) ? 0 : 1; }
                    catch (Exception e) { raised = e; return 1; }  // never unwind through the C frame
                };
            int st;
            using (var o = new Options(OptionsKind.Model, options))
                st = NativeMethods.ikllm_model_load(lib, Utf8.Z(path), o.Handle, cb, IntPtr.Zero,
                                                    cancel != null ? cancel.Pointer : IntPtr.Zero, out Handle);
            GC.KeepAlive(cb);
            GC.KeepAlive(cancel);
            if (raised != null) { lib.Dispose(); throw raised; }
            if (st != C.IKLLM_OK)
            {
                try { Err.Check(st, "cannot load model '" + path + "'"); }
                finally { lib.Dispose(); }
            }
            Handle.KeepAlive(lib);  // the lib is freed after the model
            lib.Dispose();          // drops our reference only
        }

        public void Dispose() { Handle.Dispose(); }

        public string Architecture { get { return Utf8.FromPtr(NativeMethods.ikllm_model_architecture(Handle)); } }
        public string Name { get { return Utf8.FromPtr(NativeMethods.ikllm_model_name(Handle)); } }
        public int VocabSize { get { return NativeMethods.ikllm_model_n_vocab(Handle); } }
        public int ContextTrain { get { return NativeMethods.ikllm_model_n_ctx_train(Handle); } }
        public int EmbeddingSize { get { return NativeMethods.ikllm_model_n_embd(Handle); } }
        public int LayerCount { get { return NativeMethods.ikllm_model_n_layer(Handle); } }
        public ulong ParameterCount { get { return NativeMethods.ikllm_model_n_params(Handle); } }

        /// <summary>Every GGUF metadata key with its value rendered as text.</summary>
        public Dictionary<string, string> Metadata(bool full = false)
        {
            var d = new Dictionary<string, string>();
            int n = NativeMethods.ikllm_model_meta_count(Handle);
            for (int i = 0; i < n; i++)
            {
                string key = Utf8.FromPtr(NativeMethods.ikllm_model_meta_key(Handle, i));
                byte[] k = Utf8.Z(key);
                d[key] = Utf8.ReadText((byte[] b, UIntPtr c, out UIntPtr nd) =>
                    NativeMethods.ikllm_model_meta_value(Handle, k, full ? C.IKLLM_META_FULL : 0u, b, c, out nd),
                    "ikllm_model_meta_value");
            }
            return d;
        }

        /// <summary>Id of a special token (C.IKLLM_TOKEN_BOS, ...), or -1.</summary>
        public int SpecialToken(int which) { return NativeMethods.ikllm_model_special_token(Handle, which); }
        public bool IsEndOfGeneration(int token) { return NativeMethods.ikllm_token_is_eog(Handle, token) != 0; }

        public int[] Tokenize(string text, bool addSpecial = true, bool parseSpecial = false)
        {
            byte[] data = System.Text.Encoding.UTF8.GetBytes(text);
            uint flags = (addSpecial ? C.IKLLM_TOKENIZE_ADD_SPECIAL : 0u) | (parseSpecial ? C.IKLLM_TOKENIZE_PARSE_SPECIAL : 0u);
            long n;
            int[] buf = Utf8.Read((int[] b, UIntPtr c, out UIntPtr nd) =>
                NativeMethods.ikllm_tokenize(Handle, data, new UIntPtr((ulong)data.Length), flags, b, c, out nd),
                "ikllm_tokenize", out n);
            Array.Resize(ref buf, (int)n);
            return buf;
        }

        public string Detokenize(int[] tokens, bool renderSpecial = false)
        {
            uint flags = renderSpecial ? C.IKLLM_DETOK_RENDER_SPECIAL : 0u;
            return Utf8.ReadText((byte[] b, UIntPtr c, out UIntPtr nd) =>
                NativeMethods.ikllm_detokenize(Handle, tokens, new UIntPtr((ulong)tokens.Length), flags, b, c, out nd),
                "ikllm_detokenize");
        }

        /// <summary>The default chat template (name null) or a named one; null when the model has none.</summary>
        public string ChatTemplate(string name = null)
        {
            IntPtr p;
            int st = NativeMethods.ikllm_model_chat_template(Handle, Utf8.Z(name), out p);
            if (st == C.IKLLM_ERR_NOT_FOUND) return null;
            Err.Check(st, "ikllm_model_chat_template");
            return Utf8.FromPtr(p);
        }
    }
}
