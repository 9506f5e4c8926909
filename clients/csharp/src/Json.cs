// A small JSON reader and writer, so the client needs nothing beyond what Unity and .NET both
// ship. Values are plain objects: JsonObject (ordered names), JsonArray, string, long (an
// integer that fits, as every score, rank and total does), double (any other number), bool
// and null. The generated wire types (Wire.g.cs) map these to typed fields without
// reflection, so IL2CPP's code stripping has nothing to break.

using System;
using System.Collections;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace Rankd
{
    /// <summary>A JSON object: its names in the order they came, each with its value.</summary>
    public sealed class JsonObject : IEnumerable<KeyValuePair<string, object>>
    {
        private readonly List<string> names = new List<string>();
        private readonly Dictionary<string, object> values = new Dictionary<string, object>();

        public int Count { get { return names.Count; } }

        public IList<string> Names { get { return names.AsReadOnly(); } }

        /// <summary>The value of <paramref name="name"/> (null when absent); setting it adds or
        /// replaces the member.</summary>
        public object this[string name]
        {
            get
            {
                object value;
                return values.TryGetValue(name, out value) ? value : null;
            }
            set
            {
                if (!values.ContainsKey(name)) names.Add(name);
                values[name] = value;
            }
        }

        /// <summary>Adds a member (collection initialisers: new JsonObject { {"a", 1} }).</summary>
        public void Add(string name, object value)
        {
            this[name] = value;
        }

        public bool Has(string name)
        {
            return values.ContainsKey(name);
        }

        public bool Remove(string name)
        {
            if (!values.Remove(name)) return false;
            names.Remove(name);
            return true;
        }

        public IEnumerator<KeyValuePair<string, object>> GetEnumerator()
        {
            foreach (var name in names) yield return new KeyValuePair<string, object>(name, values[name]);
        }

        IEnumerator IEnumerable.GetEnumerator()
        {
            return GetEnumerator();
        }

        public override string ToString()
        {
            return Json.Write(this);
        }
    }

    /// <summary>A JSON array.</summary>
    public sealed class JsonArray : List<object>
    {
        public JsonArray() { }

        public JsonArray(IEnumerable<object> items) : base(items) { }

        public override string ToString()
        {
            return Json.Write(this);
        }
    }

    /// <summary>The text was not JSON.</summary>
    public sealed class JsonFormatException : FormatException
    {
        public JsonFormatException(string message) : base(message) { }
    }

    /// <summary>Reads and writes JSON text (RFC 8259).</summary>
    public static class Json
    {
        private const int MaxDepth = 256;

        // --- reading ---------------------------------------------------------------------

        /// <summary>The value <paramref name="text"/> holds: a JsonObject, JsonArray, string,
        /// long, double, bool or null.</summary>
        public static object Parse(string text)
        {
            if (text == null) throw new ArgumentNullException("text");
            var reader = new Reader(text);
            reader.SkipSpace();
            var value = reader.Value(0);
            reader.SkipSpace();
            if (!reader.AtEnd) throw reader.Fail("text after the JSON value");
            return value;
        }

        private sealed class Reader
        {
            private readonly string text;
            private int at;

            public Reader(string text)
            {
                this.text = text;
            }

            public bool AtEnd { get { return at >= text.Length; } }

            public JsonFormatException Fail(string what)
            {
                return new JsonFormatException("JSON: " + what + " at offset " + at);
            }

            public void SkipSpace()
            {
                while (at < text.Length)
                {
                    char c = text[at];
                    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') at++;
                    else break;
                }
            }

            private char Peek()
            {
                if (at >= text.Length) throw Fail("unexpected end");
                return text[at];
            }

            private void Expect(string word)
            {
                if (string.CompareOrdinal(text, at, word, 0, word.Length) != 0) throw Fail("expected '" + word + "'");
                at += word.Length;
            }

            public object Value(int depth)
            {
                if (depth > MaxDepth) throw Fail("nested too deep");
                char c = Peek();
                switch (c)
                {
                    case '{': return Object(depth);
                    case '[': return Array(depth);
                    case '"': return String();
                    case 't': Expect("true"); return true;
                    case 'f': Expect("false"); return false;
                    case 'n': Expect("null"); return null;
                    default:
                        if (c == '-' || (c >= '0' && c <= '9')) return Number();
                        throw Fail("unexpected '" + c + "'");
                }
            }

            private JsonObject Object(int depth)
            {
                var found = new JsonObject();
                at++;
                SkipSpace();
                if (Peek() == '}')
                {
                    at++;
                    return found;
                }
                while (true)
                {
                    SkipSpace();
                    if (Peek() != '"') throw Fail("expected a member name");
                    string name = String();
                    SkipSpace();
                    if (Peek() != ':') throw Fail("expected ':'");
                    at++;
                    SkipSpace();
                    found[name] = Value(depth + 1);
                    SkipSpace();
                    char c = Peek();
                    at++;
                    if (c == '}') return found;
                    if (c != ',') throw Fail("expected ',' or '}'");
                }
            }

            private JsonArray Array(int depth)
            {
                var found = new JsonArray();
                at++;
                SkipSpace();
                if (Peek() == ']')
                {
                    at++;
                    return found;
                }
                while (true)
                {
                    SkipSpace();
                    found.Add(Value(depth + 1));
                    SkipSpace();
                    char c = Peek();
                    at++;
                    if (c == ']') return found;
                    if (c != ',') throw Fail("expected ',' or ']'");
                }
            }

            private string String()
            {
                at++; // the opening quote
                var built = new StringBuilder();
                while (true)
                {
                    if (at >= text.Length) throw Fail("unterminated string");
                    char c = text[at++];
                    if (c == '"') return built.ToString();
                    if (c < ' ') throw Fail("control character in a string");
                    if (c != '\\')
                    {
                        built.Append(c);
                        continue;
                    }
                    if (at >= text.Length) throw Fail("unterminated string");
                    char e = text[at++];
                    switch (e)
                    {
                        case '"': built.Append('"'); break;
                        case '\\': built.Append('\\'); break;
                        case '/': built.Append('/'); break;
                        case 'b': built.Append('\b'); break;
                        case 'f': built.Append('\f'); break;
                        case 'n': built.Append('\n'); break;
                        case 'r': built.Append('\r'); break;
                        case 't': built.Append('\t'); break;
                        case 'u':
                            if (at + 4 > text.Length) throw Fail("short \\u escape");
                            int code;
                            if (!int.TryParse(text.Substring(at, 4), NumberStyles.AllowHexSpecifier,
                                    CultureInfo.InvariantCulture, out code))
                                throw Fail("bad \\u escape");
                            built.Append((char)code); // surrogate pairs come as two escapes
                            at += 4;
                            break;
                        default: throw Fail("bad escape '\\" + e + "'");
                    }
                }
            }

            private object Number()
            {
                int start = at;
                bool integral = true;
                if (text[at] == '-') at++;
                if (at >= text.Length || !IsDigit(text[at])) throw Fail("bad number");
                if (text[at] == '0') at++;
                else while (at < text.Length && IsDigit(text[at])) at++;
                if (at < text.Length && text[at] == '.')
                {
                    integral = false;
                    at++;
                    if (at >= text.Length || !IsDigit(text[at])) throw Fail("bad number");
                    while (at < text.Length && IsDigit(text[at])) at++;
                }
                if (at < text.Length && (text[at] == 'e' || text[at] == 'E'))
                {
                    integral = false;
                    at++;
                    if (at < text.Length && (text[at] == '+' || text[at] == '-')) at++;
                    if (at >= text.Length || !IsDigit(text[at])) throw Fail("bad number");
                    while (at < text.Length && IsDigit(text[at])) at++;
                }
                string digits = text.Substring(start, at - start);
                long whole;
                if (integral && long.TryParse(digits, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out whole))
                    return whole;
                return double.Parse(digits, NumberStyles.Float, CultureInfo.InvariantCulture);
            }

            private static bool IsDigit(char c)
            {
                return c >= '0' && c <= '9';
            }
        }

        // --- writing ---------------------------------------------------------------------

        /// <summary>Compact JSON text for a value: JsonObject or any IDictionary with string
        /// keys, JsonArray or any IEnumerable, string, a number, bool, DateTime(Offset) (as
        /// RFC 3339 UTC with milliseconds), or null.</summary>
        public static string Write(object value)
        {
            var built = new StringBuilder();
            WriteValue(built, value, 0);
            return built.ToString();
        }

        private static void WriteValue(StringBuilder o, object value, int depth)
        {
            if (depth > MaxDepth) throw new ArgumentException("JSON: nested too deep");
            if (value == null) { o.Append("null"); return; }
            var text = value as string;
            if (text != null) { WriteString(o, text); return; }
            if (value is bool) { o.Append((bool)value ? "true" : "false"); return; }
            if (value is long || value is int || value is short || value is byte || value is sbyte
                || value is ulong || value is uint || value is ushort)
            {
                o.Append(Convert.ToString(value, CultureInfo.InvariantCulture));
                return;
            }
            if (value is double || value is float || value is decimal)
            {
                double d = Convert.ToDouble(value, CultureInfo.InvariantCulture);
                if (double.IsNaN(d) || double.IsInfinity(d)) throw new ArgumentException("JSON has no NaN or Infinity");
                o.Append(d.ToString("R", CultureInfo.InvariantCulture));
                return;
            }
            if (value is DateTimeOffset) { WriteString(o, Time((DateTimeOffset)value)); return; }
            if (value is DateTime) { WriteString(o, Time(new DateTimeOffset((DateTime)value))); return; }
            var model = value as IJsonWritable;
            if (model != null) { WriteValue(o, model.ToJson(), depth); return; }
            var obj = value as JsonObject;
            if (obj != null)
            {
                o.Append('{');
                bool first = true;
                foreach (var member in obj)
                {
                    if (!first) o.Append(',');
                    first = false;
                    WriteString(o, member.Key);
                    o.Append(':');
                    WriteValue(o, member.Value, depth + 1);
                }
                o.Append('}');
                return;
            }
            var map = value as IDictionary;
            if (map != null)
            {
                o.Append('{');
                bool first = true;
                foreach (DictionaryEntry member in map)
                {
                    var name = member.Key as string;
                    if (name == null) throw new ArgumentException("JSON object names are strings");
                    if (!first) o.Append(',');
                    first = false;
                    WriteString(o, name);
                    o.Append(':');
                    WriteValue(o, member.Value, depth + 1);
                }
                o.Append('}');
                return;
            }
            var items = value as IEnumerable;
            if (items != null)
            {
                o.Append('[');
                bool first = true;
                foreach (var item in items)
                {
                    if (!first) o.Append(',');
                    first = false;
                    WriteValue(o, item, depth + 1);
                }
                o.Append(']');
                return;
            }
            throw new ArgumentException("JSON: cannot write a " + value.GetType().Name);
        }

        private static void WriteString(StringBuilder o, string text)
        {
            o.Append('"');
            foreach (char c in text)
            {
                switch (c)
                {
                    case '"': o.Append("\\\""); break;
                    case '\\': o.Append("\\\\"); break;
                    case '\n': o.Append("\\n"); break;
                    case '\r': o.Append("\\r"); break;
                    case '\t': o.Append("\\t"); break;
                    case '\b': o.Append("\\b"); break;
                    case '\f': o.Append("\\f"); break;
                    default:
                        if (c < ' ' || c == '\u2028' || c == '\u2029')
                            o.Append("\\u").Append(((int)c).ToString("x4", CultureInfo.InvariantCulture));
                        else
                            o.Append(c);
                        break;
                }
            }
            o.Append('"');
        }

        /// <summary>RFC 3339 as the contract writes it: UTC with milliseconds.</summary>
        public static string Time(DateTimeOffset value)
        {
            return value.UtcDateTime.ToString("yyyy'-'MM'-'dd'T'HH':'mm':'ss'.'fff'Z'", CultureInfo.InvariantCulture);
        }

        // --- typed access, for the generated wire types ------------------------------------

        public static JsonObject AsObject(object value)
        {
            return value as JsonObject;
        }

        public static string AsString(object value)
        {
            return value as string;
        }

        public static long AsLong(object value)
        {
            return AsLongOrNull(value) ?? 0;
        }

        public static long? AsLongOrNull(object value)
        {
            if (value is long) return (long)value;
            if (value is double)
            {
                double d = (double)value;
                if (d >= long.MinValue && d <= long.MaxValue && Math.Floor(d) == d) return (long)d;
            }
            return null;
        }

        public static double AsDouble(object value)
        {
            return AsDoubleOrNull(value) ?? 0;
        }

        public static double? AsDoubleOrNull(object value)
        {
            if (value is double) return (double)value;
            if (value is long) return (long)value;
            return null;
        }

        public static bool AsBool(object value)
        {
            return value is bool && (bool)value;
        }

        public static bool? AsBoolOrNull(object value)
        {
            if (value is bool) return (bool)value;
            return null;
        }

        /// <summary>Each item of a JSON array read with <paramref name="read"/>; null when the
        /// value is not an array.</summary>
        public static List<T> AsList<T>(object value, Func<object, T> read)
        {
            var items = value as JsonArray;
            if (items == null) return null;
            var found = new List<T>(items.Count);
            foreach (var item in items) found.Add(read(item));
            return found;
        }

        /// <summary>Each member of a JSON object read with <paramref name="read"/>; null when the
        /// value is not an object.</summary>
        public static Dictionary<string, T> AsMap<T>(object value, Func<object, T> read)
        {
            var members = value as JsonObject;
            if (members == null) return null;
            var found = new Dictionary<string, T>();
            foreach (var member in members) found[member.Key] = read(member.Value);
            return found;
        }
    }

    /// <summary>A value with a JSON form of its own (the generated wire types).</summary>
    public interface IJsonWritable
    {
        JsonObject ToJson();
    }
}
