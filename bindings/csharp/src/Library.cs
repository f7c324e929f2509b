// Loading the native library (IKLLM_LIB), the ABI major check, versions and the option listing.
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using Ikllm.Native;

namespace Ikllm
{
    /// <summary>One option key as the library lists it.</summary>
    public sealed class OptionInfo
    {
        public string Name, Type, Default, Min, Max, Doc;
    }

    public enum OptionsKind { Model = C.IKLLM_OPTIONS_MODEL, Session = C.IKLLM_OPTIONS_SESSION,
                              Sampler = C.IKLLM_OPTIONS_SAMPLER, Quantize = C.IKLLM_OPTIONS_QUANTIZE,
                              Chat = C.IKLLM_OPTIONS_CHAT }

    public static class Library
    {
        // Computed once on first use (static initialisation is thread-safe); never changes.
        private static readonly Exception loadFailure = Load();

        private static Exception Load()
        {
#if NETCOREAPP3_0_OR_GREATER
            string path = Environment.GetEnvironmentVariable("IKLLM_LIB");
            if (!string.IsNullOrEmpty(path))
                NativeLibrary.SetDllImportResolver(typeof(Library).Assembly, (name, asm, search) =>
                    name == NativeMethods.Lib ? NativeLibrary.Load(path) : IntPtr.Zero);
#endif
            int abi;
            try
            {
                abi = NativeMethods.ikllm_abi_version();
            }
            catch (DllNotFoundException e)
            {
                return new LibraryLoadException("cannot load libikllm: set IKLLM_LIB (with .NET) or LD_LIBRARY_PATH / " +
                                                "Ikllm.dll.config (with Mono) to the library built by the project", e);
            }
            if (abi != AbiInfo.AbiVersion)
                return new LibraryLoadException(string.Format(
                    "libikllm has ABI major {0}, but this binding was generated for ABI major {1}; " +
                    "use a matching library or binding", abi, AbiInfo.AbiVersion));
            return null;
        }

        /// <summary>Throws LibraryLoadException when the library is missing or has another ABI major.</summary>
        public static void EnsureLoaded()
        {
            if (loadFailure != null) throw new LibraryLoadException(loadFailure.Message, loadFailure);
        }

        public static string Version { get { EnsureLoaded(); return Utf8.FromPtr(NativeMethods.ikllm_version_string()); } }
        public static int VersionNumber { get { EnsureLoaded(); return NativeMethods.ikllm_version_number(); } }
        public static int AbiVersion { get { EnsureLoaded(); return NativeMethods.ikllm_abi_version(); } }

        public static string StatusName(int status)
        {
            return Utf8.FromPtr(NativeMethods.ikllm_status_name(status));
        }

        public static OptionInfo[] ListOptions(OptionsKind kind)
        {
            EnsureLoaded();
            var list = new List<OptionInfo>();
            int n = NativeMethods.ikllm_option_count((int)kind);
            for (int i = 0; i < n; i++)
            {
                IntPtr name, dflt, min, max, doc;
                int type;
                Err.Check(NativeMethods.ikllm_option_info((int)kind, i, out name, out type, out dflt, out min, out max,
                                                          out doc), "ikllm_option_info");
                list.Add(new OptionInfo {
                    Name = Utf8.FromPtr(name), Default = Utf8.FromPtr(dflt), Min = Utf8.FromPtr(min),
                    Max = Utf8.FromPtr(max), Doc = Utf8.FromPtr(doc),
                    Type = type == C.IKLLM_OPTION_INT ? "int" : type == C.IKLLM_OPTION_FLOAT ? "float" : "string" });
            }
            return list.ToArray();
        }
    }

    /// <summary>An options object of one kind, filled from a dictionary (int/long/bool, float/double, string).</summary>
    public sealed class Options : IDisposable
    {
        internal readonly OptionsHandle Handle;

        public Options(OptionsKind kind, IDictionary<string, object> values = null)
        {
            Library.EnsureLoaded();
            Err.Check(NativeMethods.ikllm_options_create((int)kind, out Handle), "ikllm_options_create");
            if (values == null) return;
            try
            {
                foreach (var kv in values) Set(kv.Key, kv.Value);
            }
            catch
            {
                Handle.Dispose();
                throw;
            }
        }

        public void Set(string key, object value)
        {
            byte[] k = Utf8.Z(key);
            string what = "option '" + key + "'";
            if (value is bool) Err.Check(NativeMethods.ikllm_options_set_int(Handle, k, (bool)value ? 1 : 0), what);
            else if (value is int || value is long) Err.Check(NativeMethods.ikllm_options_set_int(Handle, k, Convert.ToInt64(value)), what);
            else if (value is float || value is double) Err.Check(NativeMethods.ikllm_options_set_float(Handle, k, Convert.ToDouble(value)), what);
            else if (value is string) Err.Check(NativeMethods.ikllm_options_set_string(Handle, k, Utf8.Z((string)value)), what);
            else throw new ArgumentException(what + ": unsupported value type " + (value == null ? "null" : value.GetType().Name));
        }

        public long GetInt(string key)
        {
            long v;
            Err.Check(NativeMethods.ikllm_options_get_int(Handle, Utf8.Z(key), out v), "option '" + key + "'");
            return v;
        }

        public string GetString(string key)
        {
            IntPtr p;
            Err.Check(NativeMethods.ikllm_options_get_string(Handle, Utf8.Z(key), out p), "option '" + key + "'");
            return Utf8.FromPtr(p);
        }

        public void Dispose() { Handle.Dispose(); }
    }
}
