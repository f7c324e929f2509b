// UTF-8 conversions and the caller-buffer convention (query the size, then fill).
using System;
using System.Runtime.InteropServices;
using System.Text;
using Ikllm.Native;

namespace Ikllm
{
    internal static class Utf8
    {
        /// <summary>NUL-terminated UTF-8 bytes of s (null stays null: a NULL pointer).</summary>
        internal static byte[] Z(string s)
        {
            return s == null ? null : Encoding.UTF8.GetBytes(s + "\0");
        }

        internal static string FromPtr(IntPtr p)
        {
            if (p == IntPtr.Zero) return null;
            int n = 0;
            while (Marshal.ReadByte(p, n) != 0) n++;
            return FromPtr(p, n);
        }

        internal static string FromPtr(IntPtr p, long n)
        {
            if (p == IntPtr.Zero || n == 0) return "";
            var bytes = new byte[n];
            Marshal.Copy(p, bytes, 0, (int)n);
            return Encoding.UTF8.GetString(bytes);
        }

        internal delegate int BufferCall<T>(T[] buf, UIntPtr capacity, out UIntPtr needed);

        /// <summary>Runs call with a NULL buffer to learn the size, then with a buffer that large.
        /// Returns the buffer and the count the library reported.</summary>
        internal static T[] Read<T>(BufferCall<T> call, string what, out long count)
        {
            UIntPtr needed;
            int st = call(null, UIntPtr.Zero, out needed);
            if (st != C.IKLLM_OK && st != C.IKLLM_ERR_BUFFER_TOO_SMALL) Err.Check(st, what);
            var buf = new T[Math.Max(1, (long)needed.ToUInt64())];
            Err.Check(call(buf, new UIntPtr((ulong)buf.Length), out needed), what);
            count = (long)needed.ToUInt64();
            return buf;
        }

        /// <summary>Text written by a caller-buffer call (needed counts the terminating NUL).</summary>
        internal static string ReadText(BufferCall<byte> call, string what)
        {
            long n;
            byte[] buf = Read(call, what, out n);
            return Encoding.UTF8.GetString(buf, 0, (int)Math.Max(0, n - 1));
        }
    }
}
