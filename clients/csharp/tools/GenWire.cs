// The wire generator's command line: writes src/Wire.g.cs from an OpenAPI document.
//   mono GenWire.exe [http://127.0.0.1:8000/openapi.json | openapi.json] [src/Wire.g.cs]
// (README.md: "The types" says how to build it.)

using System;
using System.IO;
using System.Net.Http;
using System.Text;

namespace Rankd.Tools
{
    public static class GenWire
    {
        public static int Main(string[] args)
        {
            var source = args.Length > 0 ? args[0] : "http://127.0.0.1:8000/openapi.json";
            var target = args.Length > 1 ? args[1] : Path.Combine("src", "Wire.g.cs");
            string text;
            if (source.StartsWith("http:", StringComparison.Ordinal) || source.StartsWith("https:", StringComparison.Ordinal))
            {
                using (var http = new HttpClient())
                    text = http.GetStringAsync(source).GetAwaiter().GetResult();
            }
            else
            {
                text = File.ReadAllText(source, Encoding.UTF8);
            }
            var openapi = (JsonObject)Json.Parse(text);
            File.WriteAllText(target, WireGenerator.Generate(openapi), new UTF8Encoding(false));
            Console.WriteLine("wrote " + target + " from " + source);
            return 0;
        }
    }
}
