// Writes src/Wire.g.cs, the wire shapes as C# classes, from the service's OpenAPI document
// (tools/GenWire.cs is its command line). test/ClientTests.cs runs the same generator on a
// live `rankd serve`'s /openapi.json and fails if src/Wire.g.cs differs, so the types cannot
// drift from the service. Only shapes are generated (properties, types, required, enums) and
// each operation's method and path, not descriptions or examples, so documentation edits do
// not churn the file. As clients/typescript/scripts/gen-wire.mjs does for TypeScript.

using System;
using System.Collections.Generic;
using System.Globalization;
using System.Linq;
using System.Text;

namespace Rankd.Tools
{
    public static class WireGenerator
    {
        private const string Header =
            "// Generated from the service's /openapi.json by tools/WireGenerator.cs (see README.md).\n" +
            "// Do not edit: test/ClientTests.cs regenerates it from a running rankd serve and fails\n" +
            "// when it differs.\n";

        private sealed class TypeInfo
        {
            public string Cs;          // the C# type
            public bool Value;         // a value type (long, double, bool)
            public Func<string, string> Read; // C# reading a JSON value expression
            public string Note;        // enum or const values, as a comment
        }

        private sealed class State
        {
            public readonly SortedDictionary<string, JsonObject> Named =
                new SortedDictionary<string, JsonObject>(StringComparer.Ordinal);
            public readonly HashSet<string> Inline = new HashSet<string>();
            public readonly Dictionary<string, string> ClassNames = new Dictionary<string, string>();
        }

        /// <summary>The C# source for an OpenAPI document (as Json.Parse reads it).</summary>
        public static string Generate(JsonObject openapi)
        {
            var state = new State();
            var components = openapi["components"] as JsonObject;
            var schemas = components == null ? null : components["schemas"] as JsonObject;
            if (schemas != null)
                foreach (var member in schemas) state.Named[member.Key] = (JsonObject)member.Value;

            var operations = new List<string[]>();
            var paths = openapi["paths"] as JsonObject ?? new JsonObject();
            foreach (var path in paths)
            {
                foreach (var method in (JsonObject)path.Value)
                {
                    var op = method.Value as JsonObject;
                    if (op == null || !(op["operationId"] is string)) continue;
                    var body = Dig(op, "requestBody", "content", "application/json", "schema") as JsonObject;
                    CollectInline(body, state);
                    operations.Add(new[] { (string)op["operationId"], method.Key.ToUpperInvariant(), path.Key });
                }
            }
            foreach (var name in state.Named.Keys) state.ClassNames[name] = ClassName(name, state.Named[name]);

            // answers and bodies, now that every class name is known
            var described = new List<string[]>();
            foreach (var path in paths)
            {
                foreach (var method in (JsonObject)path.Value)
                {
                    var op = method.Value as JsonObject;
                    if (op == null || !(op["operationId"] is string)) continue;
                    var body = Dig(op, "requestBody", "content", "application/json", "schema") as JsonObject;
                    var answers = new List<string>();
                    var responses = op["responses"] as JsonObject ?? new JsonObject();
                    foreach (var response in responses)
                    {
                        if (!response.Key.StartsWith("2", StringComparison.Ordinal)) continue;
                        var schema = Dig(response.Value, "content", "application/json", "schema") as JsonObject;
                        if (schema == null) continue;
                        var cs = TypeOf(schema, state).Cs;
                        if (!answers.Contains(cs)) answers.Add(cs);
                    }
                    described.Add(new[]
                    {
                        (string)op["operationId"], method.Key.ToUpperInvariant(), path.Key,
                        body == null ? "" : TypeOf(body, state).Cs,
                        answers.Count == 0 ? "string" : string.Join(" | ", answers.ToArray()),
                    });
                }
            }

            var o = new StringBuilder();
            o.Append(Header);
            o.Append("\nusing System.Collections.Generic;\n\nnamespace Rankd\n{\n");
            foreach (var member in state.Named) WriteClass(o, member.Key, member.Value, state);
            WriteOperations(o, described);
            o.Append("}\n");
            return o.ToString();
        }

        private static object Dig(object value, params string[] names)
        {
            foreach (var name in names)
            {
                var obj = value as JsonObject;
                if (obj == null) return null;
                value = obj[name];
            }
            return value;
        }

        // object schemas written inline under a title (FastAPI's request bodies: Run, BoardSettings...)
        private static void CollectInline(object value, State state)
        {
            var items = value as JsonArray;
            if (items != null)
            {
                foreach (var item in items) CollectInline(item, state);
                return;
            }
            var schema = value as JsonObject;
            if (schema == null) return;
            var title = schema["title"] as string;
            if (title != null && schema["properties"] is JsonObject && !state.Named.ContainsKey(title))
            {
                state.Named[title] = schema;
                state.Inline.Add(title);
            }
            foreach (var member in schema) CollectInline(member.Value, state);
        }

        /// <summary>"board_id" → "BoardId".</summary>
        public static string Pascal(string name)
        {
            var o = new StringBuilder();
            bool upper = true;
            foreach (char c in name)
            {
                if (!char.IsLetterOrDigit(c))
                {
                    upper = true;
                    continue;
                }
                o.Append(upper ? char.ToUpperInvariant(c) : c);
                upper = false;
            }
            if (o.Length == 0 || char.IsDigit(o[0])) o.Insert(0, '_');
            return o.ToString();
        }

        // A class may not hold a member of its own name: Periods.periods makes PeriodsResult.Periods.
        private static string ClassName(string name, JsonObject schema)
        {
            var properties = schema["properties"] as JsonObject;
            if (properties != null)
                foreach (var member in properties)
                    if (Pascal(member.Key) == name) return name + "Result";
            return name;
        }

        private static string Literal(object value)
        {
            return Json.Write(value);
        }

        private static TypeInfo Raw()
        {
            return new TypeInfo { Cs = "object", Read = v => v };
        }

        private static TypeInfo TypeOf(JsonObject schema, State state)
        {
            if (schema == null || schema.Count == 0) return Raw();
            var reference = schema["$ref"] as string;
            if (reference != null)
            {
                var name = reference.Substring(reference.LastIndexOf('/') + 1);
                var cs = state.ClassNames.ContainsKey(name) ? state.ClassNames[name] : name;
                return new TypeInfo { Cs = cs, Read = v => cs + ".FromJson(" + v + ")" };
            }
            var title = schema["title"] as string;
            if (title != null && schema["properties"] is JsonObject && state.Inline.Contains(title))
            {
                var cs = state.ClassNames[title];
                return new TypeInfo { Cs = cs, Read = v => cs + ".FromJson(" + v + ")" };
            }
            var choices = (schema["anyOf"] ?? schema["oneOf"]) as JsonArray;
            if (choices != null)
            {
                var kinds = choices.Cast<JsonObject>().Where(c => (c["type"] as string) != "null").ToList();
                bool nullable = kinds.Count < choices.Count;
                if (kinds.Count != 1) return Raw();
                var one = TypeOf(kinds[0], state);
                return nullable ? Nullable(one) : one;
            }
            var values = schema["enum"] as JsonArray;
            if (values != null)
            {
                var note = "one of " + string.Join(", ", values.Select(Literal).ToArray());
                var inner = TypeOf(Without(schema, "enum"), state);
                inner.Note = note;
                return inner;
            }
            if (schema.Has("const"))
            {
                var inner = TypeOf(Without(schema, "const"), state);
                inner.Note = "always " + Literal(schema["const"]);
                return inner;
            }
            switch (schema["type"] as string)
            {
                case "string":
                    return new TypeInfo { Cs = "string", Read = v => "global::Rankd.Json.AsString(" + v + ")" };
                case "integer":
                    return new TypeInfo { Cs = "long", Value = true, Read = v => "global::Rankd.Json.AsLong(" + v + ")" };
                case "number":
                    return new TypeInfo { Cs = "double", Value = true, Read = v => "global::Rankd.Json.AsDouble(" + v + ")" };
                case "boolean":
                    return new TypeInfo { Cs = "bool", Value = true, Read = v => "global::Rankd.Json.AsBool(" + v + ")" };
                case "array":
                {
                    var item = TypeOf(schema["items"] as JsonObject, state);
                    var cs = "List<" + item.Cs + ">";
                    var note = item.Note;
                    return new TypeInfo
                    {
                        Cs = cs,
                        Note = note == null ? null : "each " + note,
                        Read = v => "global::Rankd.Json.AsList(" + v + ", x => " + item.Read("x") + ")",
                    };
                }
                case "object":
                {
                    var extra = schema["additionalProperties"] as JsonObject;
                    if (schema["properties"] == null && extra != null)
                    {
                        var item = TypeOf(extra, state);
                        var cs = "Dictionary<string, " + item.Cs + ">";
                        return new TypeInfo
                        {
                            Cs = cs,
                            Read = v => "global::Rankd.Json.AsMap(" + v + ", x => " + item.Read("x") + ")",
                        };
                    }
                    return new TypeInfo { Cs = "JsonObject", Read = v => "global::Rankd.Json.AsObject(" + v + ")" };
                }
                default:
                    return Raw();
            }
        }

        private static JsonObject Without(JsonObject schema, string name)
        {
            var copy = new JsonObject();
            foreach (var member in schema)
                if (member.Key != name) copy[member.Key] = member.Value;
            return copy;
        }

        private static TypeInfo Nullable(TypeInfo info)
        {
            if (!info.Value) return info;
            var plain = info.Cs;
            var suffix = plain == "long" ? "Long" : plain == "double" ? "Double" : "Bool";
            return new TypeInfo
            {
                Cs = plain + "?",
                Note = info.Note,
                Read = v => "global::Rankd.Json.As" + suffix + "OrNull(" + v + ")",
            };
        }

        private static void WriteClass(StringBuilder o, string name, JsonObject schema, State state)
        {
            var cs = state.ClassNames[name];
            var properties = schema["properties"] as JsonObject;
            if (properties == null)
            {
                // a schema that is not an object: its C# type in a comment only
                o.Append("    // ").Append(name).Append(": ").Append(TypeOf(schema, state).Cs).Append("\n\n");
                return;
            }
            var required = new HashSet<string>();
            var listed = schema["required"] as JsonArray;
            if (listed != null) foreach (var r in listed) required.Add((string)r);

            var fields = new List<string[]>(); // json name, C# name, type, read, note
            foreach (var member in properties)
            {
                var info = TypeOf(member.Value as JsonObject, state);
                if (!required.Contains(member.Key)) info = Nullable(info);
                fields.Add(new[] { member.Key, Pascal(member.Key), info.Cs, info.Read("o[" + Literal(member.Key) + "]"), info.Note });
            }

            o.Append("    /// <summary>").Append(name).Append(" (");
            o.Append(state.Inline.Contains(name) ? "a request body" : "components.schemas");
            o.Append(").</summary>\n");
            o.Append("    public sealed partial class ").Append(cs).Append(" : IJsonWritable\n    {\n");
            foreach (var f in fields)
            {
                o.Append("        /// <summary><c>").Append(f[0]).Append("</c>");
                o.Append(required.Contains(f[0]) ? ", required" : ", optional");
                if (f[4] != null) o.Append(": ").Append(f[4].Replace("<", "&lt;").Replace(">", "&gt;"));
                o.Append(".</summary>\n");
                o.Append("        public ").Append(f[2]).Append(' ').Append(f[1]).Append(" { get; set; }\n\n");
            }
            o.Append("        /// <summary>The object as it came (members this version does not know included);\n");
            o.Append("        /// null when built here.</summary>\n");
            o.Append("        public JsonObject Raw { get; private set; }\n\n");
            o.Append("        public static ").Append(cs).Append(" FromJson(object value)\n        {\n");
            o.Append("            var o = value as JsonObject;\n");
            o.Append("            if (o == null) return null;\n");
            o.Append("            var it = new ").Append(cs).Append(" { Raw = o };\n");
            foreach (var f in fields) o.Append("            it.").Append(f[1]).Append(" = ").Append(f[3]).Append(";\n");
            o.Append("            return it;\n        }\n\n");
            o.Append("        /// <summary>The members that are set (null ones left out).</summary>\n");
            o.Append("        public JsonObject ToJson()\n        {\n");
            o.Append("            var o = new JsonObject();\n");
            foreach (var f in fields)
            {
                bool alwaysSet = f[2] == "long" || f[2] == "double" || f[2] == "bool";
                if (alwaysSet)
                    o.Append("            o[").Append(Literal(f[0])).Append("] = ").Append(f[1]).Append(";\n");
                else
                    o.Append("            if (").Append(f[1]).Append(" != null) o[").Append(Literal(f[0]))
                        .Append("] = ").Append(f[1]).Append(";\n");
            }
            o.Append("            return o;\n        }\n    }\n\n");
        }

        private static void WriteOperations(StringBuilder o, List<string[]> operations)
        {
            operations.Sort((a, b) => string.CompareOrdinal(a[0], b[0]));
            o.Append("    /// <summary>Each operation (by operationId): its method and path, and in a comment its\n");
            o.Append("    /// JSON body and 2xx answer.</summary>\n");
            o.Append("    public static class Operations\n    {\n");
            foreach (var op in operations)
            {
                o.Append("        // ").Append(op[3] == "" ? "no body" : op[3]).Append(" -> ").Append(op[4]).Append('\n');
                o.Append("        public static readonly Operation ").Append(Pascal(op[0])).Append(" = new Operation(")
                    .Append(Literal(op[0])).Append(", ").Append(Literal(op[1])).Append(", ").Append(Literal(op[2]))
                    .Append(");\n");
            }
            o.Append("    }\n");
        }
    }
}
