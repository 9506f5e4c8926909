// Just enough of UnityEngine's surface for the Unity sample in docs/clients.md to compile
// with mcs, outside Unity (tests/system/test_csharp_client.py); not Unity's behaviour.

namespace UnityEngine
{
    public class Object { }

    public class Component : Object { }

    public class Behaviour : Component
    {
        public bool enabled = true;
    }

    public class MonoBehaviour : Behaviour { }

    [System.AttributeUsage(System.AttributeTargets.Field)]
    public sealed class SerializeField : System.Attribute { }

    public static class Debug
    {
        public static void Log(object message) { System.Console.WriteLine(message); }
        public static void LogWarning(object message) { System.Console.WriteLine("warning: " + message); }
        public static void LogError(object message) { System.Console.WriteLine("error: " + message); }
    }

    public static class Random
    {
        private static readonly System.Random Source = new System.Random();

        public static int Range(int minInclusive, int maxExclusive) { return Source.Next(minInclusive, maxExclusive); }
    }

    public static class GUILayout
    {
        public static void Label(string text, params GUILayoutOption[] options) { }
        public static bool Button(string text, params GUILayoutOption[] options) { return false; }
    }

    public sealed class GUILayoutOption { }
}
