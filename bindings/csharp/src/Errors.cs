// Exceptions carrying the library's status code and message.
using System;
using Ikllm.Native;

namespace Ikllm
{
    /// <summary>A failed ikllm call: Status (C.IKLLM_*), StatusName and the library's message.</summary>
    public class IkllmException : Exception
    {
        public int Status { get; private set; }
        public string StatusName { get; private set; }
        public string NativeMessage { get; private set; }

        public IkllmException(int status, string message, string call)
            : base((string.IsNullOrEmpty(call) ? "" : call + ": ") + message + " [" + Ikllm.Library.StatusName(status) + "]")
        {
            Status = status;
            StatusName = Ikllm.Library.StatusName(status);
            NativeMessage = message;
        }
    }

    /// <summary>A progress callback or cancel flag stopped the call (IKLLM_CANCELLED).</summary>
    public sealed class CancelledException : IkllmException
    {
        public CancelledException(string message, string call) : base(C.IKLLM_CANCELLED, message, call) { }
    }

    /// <summary>The shared library cannot be loaded or has another ABI major than this binding.</summary>
    public sealed class LibraryLoadException : Exception
    {
        public LibraryLoadException(string message, Exception inner = null) : base(message, inner) { }
    }

    internal static class Err
    {
        /// <summary>Throws for any status but IKLLM_OK, with the message of this thread's last failure.</summary>
        internal static void Check(int status, string call)
        {
            if (status == C.IKLLM_OK) return;
            string msg = Utf8.FromPtr(NativeMethods.ikllm_last_error());
            if (string.IsNullOrEmpty(msg)) msg = Ikllm.Library.StatusName(status);
            if (status == C.IKLLM_CANCELLED) throw new CancelledException(msg, call);
            throw new IkllmException(status, msg, call);
        }
    }
}
