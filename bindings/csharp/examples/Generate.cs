// Prints the greedy continuation of a prompt exactly as `ikllm run -m MODEL -p PROMPT -n N --temp 0`.
// Usage: mono Generate.exe MODEL PROMPT N
using System;
using System.Collections.Generic;
using System.IO;
using System.Text;
using Ikllm;

static class GenerateExample
{
    static int Main(string[] args)
    {
        if (args.Length != 3) { Console.Error.WriteLine("usage: Generate.exe MODEL PROMPT N"); return 2; }
        var stdout = Console.OpenStandardOutput();
        Action<string> write = s => { var b = Encoding.UTF8.GetBytes(s); stdout.Write(b, 0, b.Length); stdout.Flush(); };
        using (var model = new Model(args[0]))
        {
            write(args[1]);
            var greedy = new Dictionary<string, object> { { "temperature", 0 } };
            foreach (string piece in Generation.Generate(model, args[1], int.Parse(args[2]), greedy))
                write(piece);
            write("\n");
        }
        return 0;
    }
}
