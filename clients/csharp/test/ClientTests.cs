// The C# client against a real `rankd serve` (tests/system/test_csharp_client.py starts one
// and runs this program, compiled with Mono's mcs): src/Wire.g.cs checked against the
// service's /openapi.json, every endpoint, errors as classes with status, code and message
// (the not-built ones included), the retry rules (through an HttpMessageHandler in front of
// the real one that answers 503, 429, times out or drops the connection before passing a
// request on), the live top list and a player's own event stream, and the guides' C#
// snippets (docs/clients.md, README.md), run as written with the port changed, the Unity
// sample among them (its MonoBehaviour driven by hand, over a stub of UnityEngine).
//
//   mono ClientTests.exe <base url> <path of src/Wire.g.cs> [group ...]
// Exit status 0 when every test of the groups (default: all) passed.

using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Net;
using System.Net.Http;
using System.Reflection;
using System.Text;
using System.Threading;
using System.Threading.Tasks;
using Rankd;
using Rankd.Tools;

namespace Rankd.Tests
{
    public sealed class Failure : Exception
    {
        public Failure(string message) : base(message) { }
    }

    /// <summary>In front of the real handler: counts calls, keeps each body, and may answer a
    /// call itself (Before returns an answer) or fail it (Before throws) first.</summary>
    public sealed class Front : DelegatingHandler
    {
        public Front() : base(new HttpClientHandler()) { }

        public readonly List<string> Bodies = new List<string>();
        public readonly List<string> Urls = new List<string>();
        public Func<int, HttpRequestMessage, CancellationToken, Task<HttpResponseMessage>> Before;

        public int Calls { get { lock (Bodies) return Bodies.Count; } }

        protected override async Task<HttpResponseMessage> SendAsync(HttpRequestMessage request, CancellationToken cancel)
        {
            var body = request.Content == null ? "" : await request.Content.ReadAsStringAsync();
            int call;
            lock (Bodies)
            {
                Bodies.Add(body);
                Urls.Add(request.RequestUri.ToString());
                call = Bodies.Count;
            }
            if (Before != null)
            {
                var answer = await Before(call, request, cancel);
                if (answer != null) return answer;
            }
            return await base.SendAsync(request, cancel);
        }

        public HttpClient Client()
        {
            return new HttpClient(this) { Timeout = Timeout.InfiniteTimeSpan };
        }

        public static HttpResponseMessage Error(int status, string code, string message, string retryAfter = null)
        {
            var answer = new HttpResponseMessage((HttpStatusCode)status)
            {
                Content = new StringContent("{\"error\": {\"code\": \"" + code + "\", \"message\": \"" + message + "\"}}",
                    Encoding.UTF8, "application/json"),
            };
            if (retryAfter != null) answer.Headers.TryAddWithoutValidation("Retry-After", retryAfter);
            return answer;
        }
    }

    public static class ClientTests
    {
        public const string Admin = "dev-admin-key"; // the guides' keys, so their snippets run as written
        public const string Server = "dev-server-key";

        private static string baseUrl;
        private static string wirePath;
        private static RankdClient admin;
        private static RankdClient server;
        private static int counter;
        private static readonly RetryPolicy Fast = new RetryPolicy(3, 1, 2000);

        private static string NewId(string prefix)
        {
            return prefix + "-" + Process.GetCurrentProcess().Id + "-" + DateTime.UtcNow.Ticks.ToString("x") + "-" + Interlocked.Increment(ref counter);
        }

        // --- assertions ----------------------------------------------------------------------

        private static void Check(bool condition, string what)
        {
            if (!condition) throw new Failure(what);
        }

        private static void Equal<T>(T expected, T actual, string what)
        {
            if (!EqualityComparer<T>.Default.Equals(expected, actual))
                throw new Failure(what + ": expected <" + expected + ">, got <" + actual + ">");
        }

        private static void Same(IEnumerable<string> expected, IEnumerable<string> actual, string what)
        {
            var e = string.Join(",", expected.ToArray());
            var a = actual == null ? "(null)" : string.Join(",", actual.ToArray());
            if (e != a) throw new Failure(what + ": expected [" + e + "], got [" + a + "]");
        }

        private static async Task<T> Throws<T>(Func<Task> call, string what) where T : Exception
        {
            try
            {
                await call();
            }
            catch (T expected)
            {
                return expected;
            }
            catch (Exception other)
            {
                throw new Failure(what + ": expected " + typeof(T).Name + ", got " + other.GetType().Name + ": " + other.Message);
            }
            throw new Failure(what + ": expected " + typeof(T).Name + ", nothing was thrown");
        }

        private static async Task Eventually(Func<Task<bool>> condition, string what)
        {
            var until = DateTime.UtcNow.AddSeconds(10);
            while (!await condition())
            {
                if (DateTime.UtcNow > until) throw new Failure("not within 10 s: " + what);
                await Task.Delay(50);
            }
        }

        private static async Task<T> Next<T>(EventStream<T> stream, string what) where T : class
        {
            using (var limit = new CancellationTokenSource(TimeSpan.FromSeconds(15)))
            {
                try
                {
                    var found = await stream.NextAsync(limit.Token);
                    if (found == null) throw new Failure(what + ": the stream ended");
                    return found;
                }
                catch (OperationCanceledException)
                {
                    throw new Failure(what + ": no event within 15 s");
                }
            }
        }

        // --- the wire types ----------------------------------------------------------------

        private static async Task WireMatchesOpenApi()
        {
            string text;
            using (var http = new HttpClient())
                text = await http.GetStringAsync(baseUrl + "/openapi.json");
            var generated = WireGenerator.Generate((JsonObject)Json.Parse(text));
            var committed = File.ReadAllText(wirePath, Encoding.UTF8);
            if (generated == committed) return;
            var g = generated.Split('\n');
            var c = committed.Split('\n');
            int line = 0;
            while (line < g.Length && line < c.Length && g[line] == c[line]) line++;
            throw new Failure("src/Wire.g.cs differs from the service's OpenAPI document from line " + (line + 1) + ":\n"
                + "  service:   " + (line < g.Length ? g[line] : "(end)") + "\n"
                + "  committed: " + (line < c.Length ? c[line] : "(end)") + "\n"
                + "regenerate it (README.md, \"The types\") against a current rankd serve and commit it");
        }

        private static Task WireTypesReadAndWrite()
        {
            var run = Run.FromJson(Json.Parse("{\"run_id\": \"r\", \"player_id\": \"p\", \"score\": 9007199254740991, \"segments\": {\"country\": \"FR\"}, \"new_field\": [1]}"));
            Equal(9007199254740991L, run.Score, "a 2^53-1 score reads exactly");
            Equal("FR", run.Segments["country"], "a map member");
            Equal(null, run.EndedAt, "an absent member is null");
            Check(run.Raw.Has("new_field"), "members this version does not know stay in Raw");
            Equal("{\"run_id\":\"r\",\"player_id\":\"p\",\"score\":9007199254740991,\"segments\":{\"country\":\"FR\"}}",
                Json.Write(run), "written back, null members left out");
            var standing = Standing.FromJson(Json.Parse("{\"window\": \"all-time\", \"period\": \"all-time\", \"segment\": null, \"status\": \"closed\", \"improved\": false, \"is_best\": true}"));
            Equal(null, standing.Rank, "a nullable integer");
            Equal(true, standing.IsBest, "a boolean");
            Equal(null, Board.FromJson("not an object"), "not an object: null");
            return Task.FromResult(0);
        }

        private static Task JsonReadsAndWrites()
        {
            var parsed = (JsonObject)Json.Parse(" {\"a\": [1, -2.5e3, true, false, null, \"x\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83c\\udfc6\"], \"b\": {}, \"c\": [] } ");
            var a = (JsonArray)parsed["a"];
            Equal(1L, (long)a[0], "an integer is a long");
            Equal(-2500.0, (double)a[1], "an exponent is a double");
            Equal("x\"\\/\b\f\n\r\t\u00e9\U0001F3C6", (string)a[5], "escapes, \\u and a surrogate pair");
            Same(new[] { "a", "b", "c" }, parsed.Names, "names keep their order");
            Equal("{\"a\":[1,-2500,true,false,null,\"x\\\"\\\\/\\b\\f\\n\\r\\t\u00e9\U0001F3C6\"],\"b\":{},\"c\":[]}",
                Json.Write(parsed), "written compact, as read");
            Equal("\"\\u0001\\u2028\"", Json.Write("\u0001\u2028"), "control characters escaped");
            Equal("0.1", Json.Write(0.1), "doubles round-trip, culture-free");
            Equal("\"2026-11-03T18:22:07.123Z\"", Json.Write(new DateTimeOffset(2026, 11, 3, 19, 22, 7, 123, TimeSpan.FromHours(1))), "a time: UTC, milliseconds");
            Equal(12345678901234L, (long)Json.Parse("12345678901234"), "a large integer");
            Equal(1e300 * 10, (double)Json.Parse("1e301"), "a large double");
            foreach (var bad in new[] { "", "{", "[1,]", "{\"a\" 1}", "01", "1.", "\"\\x\"", "tru", "[1] 2", "\"a\nb\"" })
            {
                try
                {
                    Json.Parse(bad);
                    throw new Failure("not JSON, but read: " + bad);
                }
                catch (JsonFormatException) { }
            }
            return Task.FromResult(0);
        }

        // --- every endpoint ------------------------------------------------------------------

        private static async Task BoardsRunsReadsProfiles()
        {
            var boardId = NewId("cs");
            var board = await admin.PutBoardAsync(boardId, new BoardSettings
            {
                Windows = new List<string> { "all-time", "weekly" },
                Segments = new List<string> { "country" },
            });
            Equal(boardId, board.BoardId, "board id");
            Same(new[] { "all-time", "weekly" }, board.Windows, "windows");
            Equal(false, board.ClientSubmits, "client_submits");
            Equal("desc", (await admin.GetBoardAsync(boardId)).Order, "order");
            Check((await admin.ListBoardsAsync()).Any(b => b.BoardId == boardId), "listed");

            var submitted = await server.SubmitAsync(boardId, "r-1", "p1", 500, DateTimeOffset.UtcNow,
                new Dictionary<string, string> { { "country", "FR" } });
            Equal("r-1", submitted.RunId, "run id");
            var global = submitted.Standings.Where(s => s.Segment == null).ToList();
            Same(new[] { "all-time ranked 1", "weekly ranked 1" },
                global.Select(s => s.Window + " " + s.Status + " " + s.Rank), "standings");
            Equal(null, global[0].PreviousRank, "no entry before");
            Check(submitted.Standings.Any(s => s.Segment == "country:FR"), "the segment's standings");

            var results = await server.SubmitBatchAsync(boardId, new List<Run>
            {
                new Run { RunId = "r-2", PlayerId = "p2", Score = 700 },
                new Run { RunId = "r-3", PlayerId = "p3", Score = 300 },
                new Run { RunId = "r-bad", PlayerId = "p4", Score = -1 },
            });
            Equal(3, results.Count, "one result per run");
            Equal(1L, results[0].Standings[0].Rank, "the batch's first run");
            Equal("invalid_request", results[2].Error.Code, "a bad run's error");

            var profile = await server.PutPlayerAsync("p1", "kai_runs", new Dictionary<string, string> { { "country", "FR" } });
            Equal("kai_runs", profile.Name, "name");
            Equal("FR", profile.Segments["country"], "segments");
            Equal("kai_runs", (await server.GetPlayerAsync("p1")).Name, "the profile read back");

            var top = await server.TopAsync(boardId, n: 2);
            Equal(3L, top.Total, "total");
            Same(new[] { "1 p2 700", "2 p1 500" }, top.Entries.Select(e => e.Rank + " " + e.PlayerId + " " + e.Score), "top");
            Equal("kai_runs", top.Entries[1].Name, "names in entries");
            Equal("p3", (await server.TopAsync(boardId, n: 1, offset: 2)).Entries[0].PlayerId, "offset");
            var me = await server.PlayerAsync(boardId, "p1", new Where { Window = "weekly" });
            Equal(2L, me.Rank, "rank");
            Equal("weekly", me.Window, "window");
            Check(me.Percentile > 0, "percentile");
            Same(new[] { "p2", "p1", "p3" }, (await server.AroundAsync(boardId, "p1", range: 1)).Entries.Select(e => e.PlayerId), "around");
            var friends = await server.FriendsAsync(boardId, "p1", new[] { "p3", "nobody" });
            Same(new[] { "1 p1", "2 p3" }, friends.Entries.Select(e => e.Position + " " + e.PlayerId), "friends");
            Same(new[] { "nobody" }, friends.NotFound, "not_found");
            Equal(2L, (await server.RankOfAsync(boardId, 600)).Rank, "rank-of");
            Same(new[] { "p1" }, (await server.TopAsync(boardId, where: new Where { Segment = "country:FR" })).Entries.Select(e => e.PlayerId), "a segment's top");
            Equal("open", (await server.PeriodsAsync(boardId, "weekly")).Periods[0].Status, "periods");
            var segments = await server.SegmentsAsync(boardId);
            Equal("country", segments.Segments[0].Dimension, "segments");
            Equal("FR", segments.Segments[0].Values[0].Value, "segment values");
            Equal("ok", (await server.HealthzAsync()).Status, "healthz");
            Equal("ready", (await server.ReadyzAsync()).Status, "readyz");
        }

        private static string Meta(string playerId, JsonObject metadata)
        {
            return playerId + "=" + (metadata == null ? "null" : Json.Write(metadata));
        }

        private static async Task EntryMetadata()
        {
            var boardId = NewId("cs-meta");
            await admin.PutBoardAsync(boardId);
            var ann = NewId("md-ann");
            var bob = NewId("md-bob");
            var cat = NewId("md-cat");
            var car = new JsonObject
            {
                { "car", "red-7" },
                { "laps", new JsonArray { 61.2, 60.9 } },
                { "nested", new JsonObject { { "ok", true }, { "none", null } } },
            };
            var front = new Front();
            var watching = new RankdClient(baseUrl, Server, new RankdClientOptions { Http = front.Client() });
            var sent = await watching.SubmitAsync(boardId, "m-1", ann, 50, metadata: car);
            Equal(1L, sent.Standings[0].Rank, "a run with metadata");
            Check(front.Bodies[0].EndsWith(",\"metadata\":" + Json.Write(car) + "}"), "the metadata sent: " + front.Bodies[0]);
            await watching.SubmitAsync(boardId, "m-2", bob, 40); // none
            Check(!front.Bodies[1].Contains("metadata"), "none sent without: " + front.Bodies[1]);
            var batch = await watching.SubmitBatchAsync(boardId, new List<Run>
            {
                new Run { RunId = "m-3", PlayerId = cat, Score = 30, Metadata = new JsonObject { { "car", "blue" } } },
                new Run { RunId = "m-4", PlayerId = cat, Score = 99, Metadata = new JsonObject { { "k", new string('x', 1100) } } },
            });
            Equal(null, batch[0].Error, "a batch's run with metadata");
            Equal("invalid_request", batch[1].Error.Code, "a batch's run with too much metadata");

            var include = new Where { Include = "metadata" };
            var expected = new[] { Meta(ann, car), Meta(bob, null), Meta(cat, new JsonObject { { "car", "blue" } }) };
            var calls = front.Calls;
            Same(expected, (await watching.TopAsync(boardId, where: include)).Entries.Select(e => Meta(e.PlayerId, e.Metadata)), "top");
            Check(front.Urls[calls].Contains("include=metadata"), "include sent: " + front.Urls[calls]);
            Same(expected, (await watching.AroundAsync(boardId, bob, 1, include)).Entries.Select(e => Meta(e.PlayerId, e.Metadata)), "around");
            Same(expected, (await watching.FriendsAsync(boardId, ann, new[] { bob, cat }, include)).Entries.Select(e => Meta(e.PlayerId, e.Metadata)), "friends");
            var me = await watching.PlayerAsync(boardId, ann, include);
            Equal(Meta(ann, car), Meta(me.PlayerId, me.Metadata), "player");
            var none = await watching.PlayerAsync(boardId, bob, include);
            Check(none.Metadata == null && none.Raw.Has("metadata"), "a run without metadata: null");
            var first = await watching.TopAsync(boardId, n: 1, where: include);
            var rest = await watching.TopAsync(boardId, n: 2, cursor: first.NextCursor, where: include);
            Same(expected.Skip(1), rest.Entries.Select(e => Meta(e.PlayerId, e.Metadata)), "the page after a cursor");

            // not asked: no metadata member at all, and no include= sent
            calls = front.Calls;
            var plain = new List<JsonObject>();
            plain.AddRange((await watching.TopAsync(boardId)).Entries.Select(e => e.Raw));
            plain.AddRange((await watching.AroundAsync(boardId, bob)).Entries.Select(e => e.Raw));
            plain.AddRange((await watching.FriendsAsync(boardId, ann, new[] { bob, cat })).Entries.Select(e => e.Raw));
            plain.Add((await watching.PlayerAsync(boardId, ann)).Raw);
            Equal(10, plain.Count, "entries read");
            Check(plain.All(o => !o.Has("metadata")), "no metadata member without include");
            Check(front.Urls.Skip(calls).All(u => !u.Contains("include")), "no include= sent");
            await Throws<InvalidRequest>(() => watching.TopAsync(boardId, where: new Where { Include = "names" }), "include= another value");

            // too much: InvalidRequest (not retried), nothing stored; the bounds themselves are taken
            var dan = NewId("md-dan");
            var tooMany = new JsonObject();
            for (int i = 0; i < 17; i++) tooMany["k" + i] = i;
            calls = front.Calls;
            foreach (var bad in new[] { tooMany, new JsonObject { { "blob", new string('x', 1100) } } })
            {
                var refused = await Throws<InvalidRequest>(() => watching.SubmitAsync(boardId, "m-bad", dan, 5, metadata: bad), "bad metadata");
                Equal(400, refused.Status, "400");
                Check(refused.Message.Contains("metadata") && !refused.IsNotBuilt, "the message names it: " + refused.Message);
            }
            Equal(calls + 2, front.Calls, "a 400 is not retried");
            await Throws<PlayerNotRanked>(() => server.PlayerAsync(boardId, dan), "nothing stored");
            var most = new JsonObject();
            for (int i = 0; i < 16; i++) most["k" + i.ToString("00")] = "v";
            await watching.SubmitAsync(boardId, "m-most", dan, 5, metadata: most);
            Equal(Meta(dan, most), Meta(dan, (await server.PlayerAsync(boardId, dan, include)).Metadata), "16 keys");
        }

        private static async Task SubmitManySendsBatches()
        {
            var boardId = NewId("cs-many");
            await admin.PutBoardAsync(boardId);
            var front = new Front();
            var counting = new RankdClient(baseUrl, Server, new RankdClientOptions { Http = front.Client() });
            var runs = Enumerable.Range(0, 2500).Select(i => new Run { RunId = "m-" + i, PlayerId = "mp" + i, Score = i });
            var results = await counting.SubmitManyAsync(boardId, runs);
            Equal(2500, results.Count, "a result per run");
            Same(new[] { "1000", "1000", "500" },
                front.Bodies.Select(b => ((JsonArray)((JsonObject)Json.Parse(b))["runs"]).Count.ToString()), "batch sizes");
            Equal(2500L, (await server.TopAsync(boardId, n: 1)).Total, "all counted");
            await Throws<ArgumentOutOfRangeException>(() => counting.SubmitBatchAsync(boardId, runs.Take(1001).ToList()), "1001 runs");
            Equal(3, front.Calls, "an oversized batch is refused before sending");
        }

        private static async Task Moderation()
        {
            var boardId = NewId("cs-mod");
            await admin.PutBoardAsync(boardId, new BoardSettings { HoldTop = 1 });
            await server.SubmitAsync(boardId, "h-1", "cheat", 999);
            var holds = await admin.HoldsAsync(boardId);
            Same(new[] { "h-1" }, holds.Select(h => h.RunId), "held");
            Equal(0L, (await server.TopAsync(boardId)).Total, "a held run is not public");
            Equal("approved", (await admin.ApproveAsync(boardId, "h-1")).Decision, "approve");
            Equal(1L, (await server.TopAsync(boardId)).Total, "approved: public");
            await server.SubmitAsync(boardId, "h-2", "cheat2", 5000);
            Equal("rejected", (await admin.RejectAsync(boardId, "h-2")).Decision, "reject");
            await Throws<HoldNotFound>(() => admin.ApproveAsync(boardId, "h-2"), "a decided hold");

            var ban = await admin.BanAsync("cheat");
            Check(ban.Banned, "banned");
            await Eventually(async () => (await server.TopAsync(boardId)).Total == 0, "a banned player leaves the top");
            Check((await admin.BansAsync(limit: 1000)).Bans.Any(b => b.PlayerId == "cheat" && b.Reason == null), "listed in bans, no reason");
            Equal(true, (await admin.GetPlayerAsync("cheat")).Banned, "an admin sees the ban");
            Check(!(await admin.UnbanAsync("cheat")).Banned, "unbanned");
            await Eventually(async () => (await server.TopAsync(boardId)).Total == 1, "back after the unban");
            Check((await admin.ErasePlayerAsync("cheat")).Erased, "erased");
            await Eventually(async () => (await server.TopAsync(boardId)).Total == 0, "erased from the top");
            Check((await admin.DeleteBoardAsync(boardId)).Deleted, "deleted");
            await Throws<BoardNotFound>(() => server.TopAsync(boardId), "a deleted board");
        }

        private static async Task RemovingAnEntry()
        {
            var boardId = NewId("cs-fix");
            await admin.PutBoardAsync(boardId, new BoardSettings { Windows = new List<string> { "weekly", "all-time" } });
            await server.SubmitAsync(boardId, "fx-1", "fx-cheat", 999999);
            await server.SubmitAsync(boardId, "fx-2", "fx-fair", 500);
            Func<string, Task<IEnumerable<string>>> top = async window =>
                (await server.TopAsync(boardId, where: new Where { Window = window })).Entries.Select(e => e.PlayerId);
            Same(new[] { "fx-cheat", "fx-fair" }, await top("weekly"), "both in this week's top");

            var front = new Front();
            var watching = new RankdClient(baseUrl, Admin, new RankdClientOptions { Http = front.Client() });
            var removed = await watching.DeleteEntryAsync(boardId, "fx-cheat");
            Equal(boardId, removed.BoardId, "board_id");
            Equal("fx-cheat", removed.PlayerId, "player_id");
            Equal("weekly", removed.Window, "no window named: the board's first");
            Equal((await server.PeriodsAsync(boardId, "weekly")).Periods[0].Period, removed.Period, "no period named: the current one");
            Check(removed.Removed, "removed");
            Check(!front.Urls[0].Contains("?"), "nothing named, nothing sent: " + front.Urls[0]);
            Same(new[] { "fx-fair" }, await top("weekly"), "gone from that week's top");
            Same(new[] { "fx-cheat", "fx-fair" }, await top("all-time"), "the player's other window keeps theirs");

            var again = await Throws<PlayerNotRanked>(() => watching.DeleteEntryAsync(boardId, "fx-cheat", "weekly", removed.Period), "a second removal");
            Equal(404, again.Status, "404");
            Equal("player_not_ranked", again.Code, "player_not_ranked");
            Check(front.Urls[1].EndsWith("/entries/fx-cheat?window=weekly&period=" + removed.Period), "window and period sent: " + front.Urls[1]);
            var noWindow = await Throws<InvalidRequest>(() => admin.DeleteEntryAsync(boardId, "fx-fair", "daily"), "a window the board does not have");
            Equal(400, noWindow.Status, "400");
            Check(!noWindow.IsNotBuilt, "built");
            await Throws<InvalidRequest>(() => admin.DeleteEntryAsync(boardId, "fx-fair", "weekly", "not-a-week"), "a bad period id");
            await Throws<Forbidden>(() => server.DeleteEntryAsync(boardId, "fx-fair", "weekly"), "a server key");
            await Throws<BoardNotFound>(() => admin.DeleteEntryAsync("cs-no-such-board", "fx-fair"), "no such board");
            Same(new[] { "fx-fair" }, await top("weekly"), "the refused removals changed nothing");

            var allTime = await admin.DeleteEntryAsync(boardId, "fx-fair", "all-time", "all-time");
            Equal("all-time", allTime.Window, "the window named");
            Equal("all-time", allTime.Period, "the period named");
            Same(new[] { "fx-cheat" }, await top("all-time"), "gone from the all-time top");
            Same(new[] { "fx-fair" }, await top("weekly"), "still in this week's");
        }

        private static async Task ClosingAPeriod()
        {
            var boardId = NewId("cs-close");
            await admin.PutBoardAsync(boardId, new BoardSettings { Windows = new List<string> { "weekly", "all-time" } });
            await server.SubmitAsync(boardId, "cl-1", "cl-early", 700);
            Func<Task<Dictionary<string, string>>> statuses = async () =>
                (await server.PeriodsAsync(boardId, "weekly")).Periods.ToDictionary(p => p.Period, p => p.Status);
            var week = (await statuses()).Single(p => p.Value == "open").Key;

            // refused: nothing closes
            var allTime = await Throws<InvalidRequest>(() => admin.ClosePeriodAsync(boardId, "all-time", "all-time"), "the all-time window");
            Equal(400, allTime.Status, "400");
            Equal("invalid_request", allTime.Code, "invalid_request");
            Check(!allTime.IsNotBuilt, "built: " + allTime.Message);
            await Throws<InvalidRequest>(() => admin.ClosePeriodAsync(boardId, week, "daily"), "a window the board does not have");
            await Throws<InvalidRequest>(() => admin.ClosePeriodAsync(boardId, "not-a-week", "weekly"), "a bad period id");
            await Throws<Forbidden>(() => server.ClosePeriodAsync(boardId, week), "a server key");
            await Throws<BoardNotFound>(() => admin.ClosePeriodAsync("cs-no-such-board", week), "no such board");
            Equal("open", (await statuses())[week], "the refused closes changed nothing");

            var front = new Front();
            var watching = new RankdClient(baseUrl, Admin, new RankdClientOptions { Http = front.Client() });
            var closed = await watching.ClosePeriodAsync(boardId, week);
            Equal(boardId, closed.BoardId, "board_id");
            Equal("weekly", closed.Window, "no window named: the board's first");
            Equal(week, closed.Period, "period");
            Equal("closed", closed.Status, "status");
            Check(DateTimeOffset.Parse(closed.ClosedAt) <= DateTimeOffset.UtcNow, "closed_at has come: " + closed.ClosedAt);
            Check(front.Urls[0].EndsWith("/periods/" + week + "/close"), "nothing named, nothing sent: " + front.Urls[0]);

            // in force: a run now answers closed in that window, and counts in the others
            var late = await server.SubmitAsync(boardId, "cl-2", "cl-late", 900);
            var standing = late.Standings.ToDictionary(st => st.Window, st => st.Status);
            Equal("closed", standing["weekly"], "a run after the close, weekly");
            Equal("ranked", standing["all-time"], "a run after the close, all-time");
            Same(new[] { "cl-early" }, (await server.TopAsync(boardId, where: new Where { Window = "weekly", Period = week })).Entries.Select(e => e.PlayerId), "the week as it was closed");
            Equal("closed", (await statuses())[week], "listed closed");

            // again: harmless, the same time
            var again = await watching.ClosePeriodAsync(boardId, week, "weekly");
            Equal(closed.ClosedAt, again.ClosedAt, "closing again: the same closed_at");
            Check(front.Urls[1].EndsWith("/periods/" + week + "/close?window=weekly"), "the window sent: " + front.Urls[1]);
        }

        private static async Task Leagues()
        {
            var boardId = NewId("cs-league");
            var league = new JsonObject
            {
                { "window", "weekly" },
                { "tiers", new JsonArray { "bronze", "silver" } },
                { "cohort_size", 5 },
                { "promote", 1 },
                { "relegate", 1 },
            };
            var board = await admin.PutBoardAsync(boardId, new BoardSettings { Windows = new List<string> { "weekly" }, League = league });
            Equal("weekly", board.League.Window, "league.window");
            Equal(5L, board.League.CohortSize, "league.cohort_size");
            var players = Enumerable.Range(0, 7).Select(i => NewId("cs-lg-" + i)).ToList();
            for (int i = 0; i < players.Count; i++) await server.SubmitAsync(boardId, "r" + i, players[i], 10 * i);
            var mine = await server.LeagueAsync(boardId, players[6]);
            Equal("bronze", mine.Tier, "tier");
            Equal("bronze-2", mine.Cohort, "the second cohort: the sixth and seventh placed");
            Equal(players[6] + "," + players[5], string.Join(",", mine.Entries.Select(e => e.PlayerId)), "ranked in the cohort");
            Equal("promote,stay", string.Join(",", mine.Entries.Select(e => e.Zone)), "zones");
            var first = await server.CohortAsync(boardId, "bronze-1");
            Equal("1,2,3,4,5", string.Join(",", first.Entries.Select(e => e.Rank)), "ranks inside the cohort");
            var history = await server.LeaguesAsync(players[0], boardId);
            Equal("bronze", history.Tier, "a new player's tier: the first");
            Equal(0, history.History.Count, "no frozen period yet");
            await Throws<PlayerNotRanked>(() => server.LeagueAsync(boardId, NewId("cs-lg-none")), "no run this period");
            await Throws<InvalidRequest>(() => server.CohortAsync(boardId, "gold-1"), "no such tier");
        }

        private static async Task JoiningAnOccurrence()
        {
            var boardId = NewId("cs-join");
            // a daily occurrence that began a minute ago and lasts two hours
            var now = DateTimeOffset.UtcNow;
            var start = new DateTimeOffset(now.Year, now.Month, now.Day, now.Hour, now.Minute, 0, TimeSpan.Zero).AddMinutes(-1);
            var board = await admin.PutBoardAsync(boardId, new BoardSettings
            {
                Windows = new List<string> { "all-time" },
                Schedule = new Dictionary<string, string>
                {
                    { "starts_at", start.ToString("yyyy-MM-dd'T'HH:mm':00Z'", System.Globalization.CultureInfo.InvariantCulture) },
                    { "every", "P1D" },
                    { "duration", "PT2H" },
                },
                JoinRequired = true,
                MaxEntrants = 2,
            });
            Check(board.JoinRequired, "join_required");
            Equal(2L, board.MaxEntrants, "max_entrants");
            Equal(0L, board.MaxAttempts, "max_attempts");
            Check(board.CurrentPeriod != null && board.NextPeriod != null, "an occurrence open now, and the next one");
            var current = board.CurrentPeriod.Period;
            var upcoming = board.NextPeriod.Period;
            var ann = NewId("join-ann");
            var bob = NewId("join-bob");
            var cat = NewId("join-cat");

            var front = new Front();
            var counted = new RankdClient(baseUrl, Server, new RankdClientOptions { Http = front.Client(), Retry = Fast });
            var joined = await counted.JoinAsync(boardId, ann);
            Equal(ann, joined.PlayerId, "player_id");
            Equal(current, joined.Period, "the occurrence open now");
            Check(joined.Joined, "joined");
            Check(front.Urls[0].EndsWith("/v1/boards/" + boardId + "/players/" + ann + "/join"), "no period, none sent: " + front.Urls[0]);
            Equal(current, (await counted.JoinAsync(boardId, ann)).Period, "again: harmless, no second place");

            // a player token with the join scope joins its own player: the second place
            var game = new RankdClient(baseUrl, (await server.MintTokenAsync(bob, new[] { "join" })).Token);
            await Throws<Forbidden>(() => game.JoinAsync(boardId, cat), "another player");
            Equal(bob, (await game.JoinAsync(boardId, bob)).PlayerId, "a token joins its own player");
            var reader = new RankdClient(baseUrl, (await server.MintTokenAsync(cat)).Token);
            var noScope = await Throws<Forbidden>(() => reader.JoinAsync(boardId, cat), "a read-only token");
            Check(noScope.Message.Contains("join"), "the message names the scope: " + noScope.Message);

            var full = await Throws<BoardFull>(() => counted.JoinAsync(boardId, cat), "a third player");
            Equal(409, full.Status, "409");
            Equal("board_full", full.Code, "board_full");
            Check(full is RankdApiException && !full.IsNotBuilt, "built: " + full.Message);
            Equal(3, front.Calls, "a 409 is not retried");
            // each occurrence afresh: the next one, named, has its places
            var later = await counted.JoinAsync(boardId, cat, upcoming);
            Equal(upcoming, later.Period, "the next occurrence");
            Check(front.Urls[3].EndsWith("/join?period=" + upcoming), "the period sent: " + front.Urls[3]);

            var plain = NewId("cs-join-plain");
            await admin.PutBoardAsync(plain); // no schedule: nothing to join
            var closed = await Throws<NotOpen>(() => counted.JoinAsync(plain, ann), "a board without a schedule");
            Equal(409, closed.Status, "409");
            Equal("not_open", closed.Code, "not_open");
            await Throws<NotOpen>(() => counted.JoinAsync(boardId, ann, "20200101T0000Z"), "not an occurrence");
            Equal(6, front.Calls, "no 409 was retried");
            await Throws<BoardNotFound>(() => counted.JoinAsync("cs-no-such-board", ann), "no such board");

            // only the joined players' runs count in the occurrence; the others' status says why
            var inside = await server.SubmitAsync(boardId, "j-1", ann, 40);
            var outside = await server.SubmitAsync(boardId, "j-2", cat, 90);
            var statuses = outside.Standings.ToDictionary(st => st.Window, st => st.Status);
            Equal("not_joined", statuses["scheduled"], "a player who did not join, scheduled");
            Equal("ranked", statuses["all-time"], "a player who did not join, all-time");
            var ranked = inside.Standings.Single(st => st.Window == "scheduled");
            Equal("ranked", ranked.Status, "a joined player's run");
            Equal(current, ranked.Period, "in the occurrence open now");
            Equal(1L, ranked.Rank, "ranked first");
            Same(new[] { ann }, (await server.TopAsync(boardId, where: new Where { Window = "scheduled" })).Entries.Select(e => e.PlayerId), "the occurrence's top");
        }

        private static async Task HooksAndDeliveries()
        {
            var boardId = NewId("cs-hooks");
            var url = "https://game.example/rankd/hooks";
            var hooked = await admin.PutBoardAsync(boardId, new BoardSettings
            {
                Windows = new List<string> { "daily", "all-time" },
                Hooks = new Dictionary<string, string> { { "period_closed", url } },
            });
            Same(new[] { "period_closed=" + url }, hooked.Hooks.Select(h => h.Key + "=" + h.Value), "the answer shows the hook");
            Equal(url, (await admin.GetBoardAsync(boardId)).Hooks["period_closed"], "an admin reads it back");
            Equal(url, (await admin.ListBoardsAsync()).Single(b => b.BoardId == boardId).Hooks["period_closed"], "an admin lists it");
            // a receiver's URL is the game's business: a server key's reads, or none, leave it out
            foreach (var reader in new[] { server, new RankdClient(baseUrl) })
            {
                var one = await reader.GetBoardAsync(boardId);
                Check(one.Hooks == null && !one.Raw.Has("hooks"), "no hooks without an admin key");
                var listed = (await reader.ListBoardsAsync()).Single(b => b.BoardId == boardId);
                Check(listed.Hooks == null && !listed.Raw.Has("hooks"), "none listed without an admin key");
            }
            var bad = await Throws<InvalidRequest>(() => admin.PutBoardAsync(boardId, new BoardSettings
            {
                Hooks = new Dictionary<string, string> { { "period_closed", "ftp://game.example/x" } },
            }), "not an http(s) URL");
            Check(bad.Message.Contains("hooks.period_closed"), bad.Message);
            await Throws<Forbidden>(() => server.PutBoardAsync(boardId, new BoardSettings { Hooks = hooked.Hooks }), "a server key");

            // no period of it has frozen (the service's season job is off here): none yet
            var front = new Front();
            var watching = new RankdClient(baseUrl, Admin, new RankdClientOptions { Http = front.Client() });
            Equal(0, (await watching.DeliveriesAsync(boardId)).Count, "no deliveries");
            Equal(0, (await watching.DeliveriesAsync(boardId, 1000)).Count, "no deliveries, 1000 asked");
            Check(front.Urls[0].EndsWith("/v1/boards/" + boardId + "/deliveries?limit=100"), "the default limit sent: " + front.Urls[0]);
            Check(front.Urls[1].EndsWith("/v1/boards/" + boardId + "/deliveries?limit=1000"), "the limit sent: " + front.Urls[1]);
            await Throws<InvalidRequest>(() => admin.DeliveriesAsync(boardId, 0), "limit 0");
            await Throws<Forbidden>(() => server.DeliveriesAsync(boardId), "a server key");
            await Throws<BoardNotFound>(() => admin.DeliveriesAsync("cs-no-such-board"), "no such board");

            // null removes it (sent as null); the other settings stay
            var removed = await watching.PutBoardAsync(boardId, new BoardSettings
            {
                Hooks = new Dictionary<string, string> { { "period_closed", null } },
            });
            Equal("{\"hooks\":{\"period_closed\":null}}", front.Bodies[front.Bodies.Count - 1], "the body sent");
            Equal(0, removed.Hooks.Count, "no hooks left");
            Same(new[] { "daily", "all-time" }, removed.Windows, "the windows kept");
            Equal(0, (await admin.GetBoardAsync(boardId)).Hooks.Count, "an admin reads none back");
            Check((await admin.DeleteBoardAsync(boardId)).Deleted, "deleted");
        }

        private static async Task BanReasons()
        {
            var player = NewId("cs-why");
            var reason = "speed hack: 3 runs under the track record <b>\u00fc</b>";
            var front = new Front();
            var watching = new RankdClient(baseUrl, Admin, new RankdClientOptions { Http = front.Client() });
            Func<Task<BanInfo>> listed = async () =>
                (await admin.BansAsync(limit: 1000)).Bans.FirstOrDefault(b => b.PlayerId == player);

            Check((await watching.BanAsync(player, reason)).Banned, "banned with a reason");
            var withReason = await listed();
            Check(withReason != null, "listed in bans");
            Equal(reason, withReason.Reason, "the reason, as sent");
            Check(!string.IsNullOrEmpty(withReason.BannedAt), "banned_at");

            Check((await watching.BanAsync(player)).Banned, "banned again, no reason");
            Equal(null, (await listed()).Reason, "no reason: null, the earlier one replaced");
            Check((await watching.BanAsync(player, CancellationToken.None)).Banned, "the signature without a reason");
            Equal(null, (await listed()).Reason, "still none");
            Same(new[] { "{\"reason\":" + Json.Write(reason) + "}", "", "" }, front.Bodies, "a body only with a reason");

            // 1..500 printable characters; a refused reason changes nothing
            foreach (var bad in new[] { "", " ", new string('x', 501), "two\nlines" })
                await Throws<InvalidRequest>(() => admin.BanAsync(player, bad), "reason " + Json.Write(bad));
            Equal(null, (await listed()).Reason, "unchanged by the refused ones");
            await admin.BanAsync(player, new string('x', 500));
            Equal(new string('x', 500), (await listed()).Reason, "500 characters");
            Check(!(await admin.UnbanAsync(player)).Banned, "unbanned");
            Equal(null, await listed(), "gone from bans");
        }

        // --- player tokens, standings, cursors ------------------------------------------------

        private static async Task TokenClient()
        {
            var serversOnly = NewId("cs-tok");
            var open = NewId("cs-tok-open");
            await admin.PutBoardAsync(serversOnly);
            Check((await admin.PutBoardAsync(open, new BoardSettings { ClientSubmits = true, MaxRunScore = 1000 })).ClientSubmits, "client_submits");
            var player = NewId("tok-p");
            var other = NewId("tok-o");
            await server.SubmitAsync(serversOnly, "r-1", player, 50);
            await server.SubmitAsync(serversOnly, "r-2", other, 10);
            await admin.BanAsync(player);
            await Eventually(async () => (await server.TopAsync(serversOnly)).Entries.Count == 1, "banned");

            var issued = await server.MintTokenAsync(player, new[] { "submit", "read" }, 600);
            Same(new[] { "read", "submit" }, issued.Scope, "scope, in the service's order");
            var left = DateTimeOffset.Parse(issued.ExpiresAt) - DateTimeOffset.UtcNow;
            Check(left.TotalSeconds > 590 && left.TotalSeconds <= 600, "expires in 600 s: " + left);

            var front = new Front();
            var game = new RankdClient(baseUrl, issued.Token, new RankdClientOptions { Http = front.Client(), Retry = Fast });
            // shadow-banned: the player still sees themselves (their own view)
            Same(new[] { player, other }, (await game.TopAsync(serversOnly)).Entries.Select(e => e.PlayerId), "own view");
            Equal(1L, (await game.PlayerAsync(serversOnly, player)).Rank, "own entry");
            await Throws<PlayerNotRanked>(() => server.PlayerAsync(serversOnly, player), "the public view");
            await Throws<Forbidden>(() => game.TopAsync(serversOnly, where: new Where { Viewer = other }), "another's view");

            var accepted = await game.SubmitAsync(open, "c-1", player, 40);
            Equal(1L, accepted.Standings[0].Rank, "its own run");
            int calls = front.Calls;
            var refused = await Throws<Forbidden>(() => game.SubmitAsync(serversOnly, "c-2", player, 60), "no client_submits");
            Equal(403, refused.Status, "status");
            Check(refused.Message.Contains("client_submits"), "the message says why");
            Equal(calls + 1, front.Calls, "a 403 is not retried");
            await Throws<Forbidden>(() => game.SubmitAsync(open, "c-3", other, 60), "another player's run");
            await Throws<Forbidden>(() => game.PutBoardAsync(open, new BoardSettings { GraceSeconds = 1 }), "a key route");
            await Throws<Forbidden>(() => game.MintTokenAsync(player), "minting");

            var standings = await game.StandingsAsync(player, new[] { serversOnly, open, "cs-no-such-board" });
            Same(new[] { open, serversOnly }.OrderBy(b => b, StringComparer.Ordinal),
                standings.Standings.Select(s => s.BoardId).OrderBy(b => b, StringComparer.Ordinal), "standings with the token");
            Same(new[] { "cs-no-such-board" }, standings.UnknownBoards, "unknown boards");
            Equal(0, (await server.StandingsAsync(player, new[] { serversOnly })).Standings.Count, "banned: not in the public standings");
            Equal(1, (await server.StandingsAsync(player, new[] { serversOnly }, viewer: player)).Standings.Count, "viewer=");
            await Throws<Unauthorized>(() => new RankdClient(baseUrl, "not-a-key").TopAsync(open), "a wrong key");
            await Throws<InvalidRequest>(() => server.MintTokenAsync(player, ttlS: 10), "a ttl below 60 s");
        }

        private static async Task CursorPaging()
        {
            var boardId = NewId("cs-cursor");
            await admin.PutBoardAsync(boardId);
            await server.SubmitBatchAsync(boardId, Enumerable.Range(0, 25).Select(i => new Run { RunId = "c" + i, PlayerId = "cp" + i, Score = i }).ToList());
            var ranks = new List<string>();
            string cursor = null;
            int pages = 0;
            do
            {
                var page = await server.TopAsync(boardId, n: 10, cursor: cursor);
                ranks.AddRange(page.Entries.Select(e => e.Rank.ToString()));
                cursor = page.NextCursor;
                pages++;
            } while (cursor != null && pages < 10);
            Equal(3, pages, "pages of 10");
            Same(Enumerable.Range(1, 25).Select(i => i.ToString()), ranks, "every rank once, in order");
        }

        // --- errors ---------------------------------------------------------------------------

        private static async Task ErrorsAreClasses()
        {
            var boardId = NewId("cs-err");
            await admin.PutBoardAsync(boardId);
            var front = new Front();
            var counted = new RankdClient(baseUrl, Server, new RankdClientOptions { Http = front.Client(), Retry = Fast });

            var missing = await Throws<BoardNotFound>(() => counted.TopAsync("cs-no-such-board"), "404");
            Equal(404, missing.Status, "404 status");
            Equal("board_not_found", missing.Code, "404 code");
            Check(missing.Message.Length > 0, "a message");
            var bad = await Throws<InvalidRequest>(() => counted.SubmitAsync(boardId, "e-1", "p", -5), "400");
            Equal(400, bad.Status, "400 status");
            Check(bad.Message.Contains("score"), "the message names the field: " + bad.Message);
            Check(!bad.IsNotBuilt, "a plain 400 is not 'not built'");
            var anonymous = await Throws<Unauthorized>(() => new RankdClient(baseUrl).SubmitAsync(boardId, "e-2", "p", 5), "401");
            Equal(401, anonymous.Status, "401 status");
            var forbidden = await Throws<Forbidden>(() => counted.PutBoardAsync(boardId), "403: a server key on an admin route");
            Equal("forbidden", forbidden.Code, "403 code");
            await Throws<PlayerNotRanked>(() => counted.PlayerAsync(boardId, "nobody"), "404 player_not_ranked");
            await Throws<ScoreOutOfRange>(() => counted.SubmitAsync(boardId, "e-3", "p", 10000000000L), "score_out_of_range");
            await counted.SubmitAsync(boardId, "e-4", "p", 5);
            await Throws<RunConflict>(() => counted.SubmitAsync(boardId, "e-4", "p", 6), "409 run_conflict");
            Equal(7, front.Calls, "no error answer was retried, not even a submit's");

            // a league read of a board that is not a league: a plain 400, not retried
            var notLeague = await Throws<InvalidRequest>(() => counted.LeagueAsync(boardId, "p"), "league of a plain board");
            Check(!notLeague.IsNotBuilt && notLeague.Message.Contains("league"), "built: " + notLeague.Message);
            Equal(8, front.Calls, "a 400 is not retried");
            // joining is built: a board with no schedule has nothing to join (409 not_open)
            var closed = await Throws<NotOpen>(() => counted.JoinAsync(boardId, "p"), "join a board with no schedule");
            Equal(409, closed.Status, "409");
            Equal("not_open", closed.Code, "not_open");
            Check(!closed.IsNotBuilt, "built: " + closed.Message);
            Equal(9, front.Calls, "a 409 is not retried");
            // what a later contract may name and a service not build: told apart, never retried
            var field = Errors.For(400, Json.Parse("{\"error\": {\"code\": \"invalid_request\", \"message\": \"the board field 'x' is not built in this version of Rankd yet\"}}"));
            Check(field is FieldNotBuilt && field is InvalidRequest && field.IsNotBuilt, "an InvalidRequest that is not built");
            var late = Errors.For(501, Json.Parse("{\"error\": {\"code\": \"not_implemented\", \"message\": \"later\"}}"));
            Check(late is NotBuilt && late.IsNotBuilt, "501 not_implemented");
            // built in v1.3: a run's metadata; too much of it is a plain InvalidRequest
            var metadata = await Throws<InvalidRequest>(() => counted.SubmitAsync(boardId, "e-5", "p", 5, metadata: new JsonObject { { "blob", new string('x', 1100) } }), "1,100 bytes of metadata");
            Check(!(metadata is FieldNotBuilt) && !metadata.IsNotBuilt, "built: " + metadata.Message);
            Equal(10, front.Calls, "a refused run is not retried");

            // answers in the contract's shape, and not
            Check(Errors.For(501, Json.Parse("{\"error\": {\"code\": \"not_enabled\", \"message\": \"no secret\"}}")) is NotEnabled, "not_enabled");
            var proxy = Errors.For(502, "not json");
            Equal("http_502", proxy.Code, "not the contract's shape");
            Check(proxy.GetType() == typeof(RankdApiException), "the base class");
            Check(Errors.For(503, null) is Unavailable, "a bare 503 is unavailable");
            var limited = Errors.For(429, Json.Parse("{\"error\": {\"code\": \"rate_limited\", \"message\": \"slow\"}}"), "2");
            Check(limited is RateLimited && limited.RetryAfter == 2.0, "Retry-After");
            Check(Errors.For(418, Json.Parse("{\"error\": {\"code\": \"teapot\", \"message\": \"m\"}}")).GetType() == typeof(RankdApiException), "an unknown code");
        }

        // --- retries --------------------------------------------------------------------------

        private static RankdClient Through(Front front, TimeSpan? timeout = null, RetryPolicy retry = null)
        {
            var options = new RankdClientOptions { Http = front.Client(), Retry = retry ?? Fast };
            if (timeout.HasValue) options.Timeout = timeout.Value;
            return new RankdClient(baseUrl, Server, options);
        }

        private static async Task RetriedWithTheSameRunId()
        {
            var boardId = NewId("cs-retry");
            await admin.PutBoardAsync(boardId);

            // 503 twice, then the real service: one run counted, the same bytes each time
            var front = new Front();
            front.Before = (call, request, cancel) => Task.FromResult(call <= 2 ? Front.Error(503, "unavailable", "log down") : null);
            var result = await Through(front).SubmitAsync(boardId, "same-1", "rp1", 100);
            Equal(3, front.Calls, "two 503s, then through");
            Equal(1, front.Bodies.Distinct().Count(), "the same body each time");
            Check(front.Bodies[0].Contains("\"run_id\":\"same-1\""), "the run_id: " + front.Bodies[0]);
            Equal(1L, result.Standings[0].Rank, "ranked");

            // a timeout, then through
            front = new Front();
            front.Before = async (call, request, cancel) =>
            {
                if (call == 1) await Task.Delay(TimeSpan.FromSeconds(30), cancel); // the client gives up first
                return null;
            };
            var watch = Stopwatch.StartNew();
            await Through(front, TimeSpan.FromMilliseconds(300)).SubmitAsync(boardId, "same-2", "rp2", 50);
            Equal(2, front.Calls, "timed out, then through");
            Check(watch.Elapsed < TimeSpan.FromSeconds(10), "the timeout cut the first call");
            Equal(front.Bodies[0], front.Bodies[1], "the same run_id after a timeout");

            // a lost connection, then through; a resend of an accepted run changes nothing
            front = new Front();
            front.Before = (call, request, cancel) =>
            {
                if (call == 1) throw new HttpRequestException("connection reset (in the test's front)");
                return Task.FromResult<HttpResponseMessage>(null);
            };
            var again = await Through(front).SubmitAsync(boardId, "same-1", "rp1", 100);
            Equal(2, front.Calls, "lost, then through");
            Equal(false, again.Standings[0].Improved, "a resent run changes nothing");
            Equal(2L, (await server.TopAsync(boardId)).Total, "each run counted once");

            // a batch too
            front = new Front();
            front.Before = (call, request, cancel) => Task.FromResult(call == 1 ? Front.Error(503, "unavailable", "down") : null);
            var batch = await Through(front).SubmitBatchAsync(boardId, new List<Run> { new Run { RunId = "same-3", PlayerId = "rp3", Score = 1 } });
            Equal(2, front.Calls, "a batch is retried");
            Equal(null, batch[0].Error, "accepted");

            // attempts are bounded: the last 503 is thrown
            front = new Front();
            front.Before = (call, request, cancel) => Task.FromResult(Front.Error(503, "unavailable", "down"));
            await Throws<Unavailable>(() => Through(front).SubmitAsync(boardId, "same-4", "rp4", 1), "every attempt 503");
            Equal(3, front.Calls, "3 attempts");

            // reads and admin calls are the caller's to retry
            front = new Front();
            front.Before = (call, request, cancel) => Task.FromResult(Front.Error(503, "unavailable", "down"));
            await Throws<Unavailable>(() => Through(front).TopAsync(boardId), "a read");
            await Throws<Unavailable>(() => Through(front).PutPlayerAsync("rp1", "x"), "a profile write");
            Equal(2, front.Calls, "reads and writes other than runs: once each");

            // 429: a short Retry-After is waited for, a long one is the caller's
            front = new Front();
            front.Before = (call, request, cancel) => Task.FromResult(call == 1 ? Front.Error(429, "rate_limited", "slow down", "0") : null);
            await Through(front).SubmitAsync(boardId, "same-5", "rp5", 1);
            Equal(2, front.Calls, "a short Retry-After: retried");
            front = new Front();
            front.Before = (call, request, cancel) => Task.FromResult(Front.Error(429, "rate_limited", "slow down", "30"));
            var slow = await Throws<RateLimited>(() => Through(front).SubmitAsync(boardId, "same-6", "rp6", 1), "a long Retry-After");
            Equal(30.0, slow.RetryAfter, "retry after");
            Equal(1, front.Calls, "a long Retry-After is not waited for");

            // the backoff grows and stays bounded
            var policy = new RetryPolicy(5, 100, 400);
            for (int i = 0; i < 6; i++)
            {
                var wait = policy.Delay(i).TotalMilliseconds;
                var ceiling = Math.Min(400, 100 * Math.Pow(2, i));
                Check(wait >= ceiling / 2 && wait <= ceiling, "delay " + i + ": " + wait);
            }
            Equal(3000.0, policy.Delay(0, 3).TotalMilliseconds, "at least Retry-After");
        }

        // --- live -------------------------------------------------------------------------------

        private static async Task LiveTopList()
        {
            var boardId = NewId("cs-live");
            await admin.PutBoardAsync(boardId);
            await server.SubmitAsync(boardId, "r-1", "p1", 10);
            using (var stream = await server.OpenEventsAsync(boardId, n: 5))
            {
                var first = await Next(stream, "the top on connect");
                Same(new[] { "p1" }, first.Entries.Select(e => e.PlayerId), "on connect");
                await server.SubmitAsync(boardId, "r-2", "p2", 20);
                var latest = first;
                while (latest.Entries.Count != 2) latest = await Next(stream, "after a submit");
                Same(new[] { "1 p2", "2 p1" }, latest.Entries.Select(e => e.Rank + " " + e.PlayerId), "after a submit");
                using (var stop = new CancellationTokenSource(200))
                {
                    try
                    {
                        await stream.NextAsync(stop.Token);
                        throw new Failure("no change, yet an event");
                    }
                    catch (OperationCanceledException) { }
                }
            }
            await Throws<BoardNotFound>(() => server.OpenEventsAsync("cs-no-such-board"), "an unknown board");
        }

        private static async Task PlayerEventStream()
        {
            var boardId = NewId("cs-pe");
            await admin.PutBoardAsync(boardId);
            var me = NewId("pe-me");
            var pal = NewId("pe-pal");
            var rival = NewId("pe-rival");
            await server.SubmitAsync(boardId, "r-1", me, 50);
            await server.SubmitAsync(boardId, "r-2", pal, 10);
            var period = (await server.PlayerAsync(boardId, me)).Period;
            Func<PlayerEvent, string> text = e =>
            {
                var s = e as StandingEvent;
                if (s != null) return "standing " + s.BoardId + " " + s.Window + " " + s.Period + " #" + s.Rank + " was " + (s.PreviousRank.HasValue ? s.PreviousRank.ToString() : "-");
                var p = (PassedEvent)e;
                return "passed " + p.BoardId + " " + p.Window + " " + p.Period + " " + p.PlayerId + " #" + p.Rank + " you #" + p.YourRank;
            };
            Func<long, string, string> standing = (rank, was) => "standing " + boardId + " all-time " + period + " #" + rank + " was " + was;

            using (var stream = await server.OpenPlayerEventsAsync(me, new[] { boardId }, new[] { pal, NewId("pe-stranger") }))
            {
                Equal(standing(1, "-"), text(await Next(stream, "on connect")), "on connect");
                await server.SubmitAsync(boardId, "r-3", rival, 70); // not a listed friend: no passed event
                Equal(standing(2, "1"), text(await Next(stream, "passed by a stranger")), "passed by a stranger");
                await server.SubmitAsync(boardId, "r-4", pal, 90); // a listed friend overtakes
                var two = new[] { text(await Next(stream, "passed by a friend")), text(await Next(stream, "passed by a friend")) };
                Same(new[] { standing(3, "2"), "passed " + boardId + " all-time " + period + " " + pal + " #1 you #3" }, two, "passed by a friend");
            }
            await Throws<BoardNotFound>(() => server.OpenPlayerEventsAsync(me, new[] { boardId, "cs-no-such-board" }), "an unknown board");
            await Throws<InvalidRequest>(() => server.OpenPlayerEventsAsync(me, new string[0]), "no boards");
            await Throws<Unauthorized>(() => new RankdClient(baseUrl).OpenPlayerEventsAsync(me, new[] { boardId }), "no key");

            // a token client follows its own player, and no one else
            var game = new RankdClient(baseUrl, (await server.MintTokenAsync(me)).Token);
            using (var own = await game.OpenPlayerEventsAsync(me, new[] { boardId }))
            {
                Equal(standing(3, "-"), text(await Next(own, "the token's own stream")), "the token's own stream");
            }
            var refused = await Throws<Forbidden>(() => game.OpenPlayerEventsAsync(pal, new[] { boardId }), "another player's stream");
            Equal(403, refused.Status, "403");
        }

        // --- the guides' snippets ------------------------------------------------------------------

        private static async Task GuideSnippets()
        {
            var snippets = Type.GetType("Rankd.Tests.DocSnippets");
            if (snippets == null) throw new Failure("compiled without the guides' snippets (tests/system/test_csharp_client.py adds them)");
            var methods = snippets.GetMethods(BindingFlags.Public | BindingFlags.Static).Where(m => m.Name.StartsWith("Block")).OrderBy(m => m.MetadataToken).ToList();
            Check(methods.Count > 0, "snippets found");
            foreach (var method in methods)
            {
                var where = ((DescriptionAttribute)method.GetCustomAttributes(typeof(DescriptionAttribute), false)[0]).Text;
                Console.WriteLine("    >>> " + where);
                try
                {
                    await (Task)method.Invoke(null, null);
                }
                catch (Exception e)
                {
                    var inner = e is TargetInvocationException ? e.InnerException : e;
                    throw new Failure("the snippet at " + where + " failed: " + inner);
                }
            }
        }

        private static async Task UnitySampleRuns()
        {
            var panelType = Type.GetType("LeaderboardPanel");
            if (panelType == null) throw new Failure("compiled without the Unity sample (tests/system/test_csharp_client.py adds it)");
            var boardId = NewId("cs-unity");
            await admin.PutBoardAsync(boardId, new BoardSettings { ClientSubmits = true });
            var player = NewId("unity-p");
            await server.PutPlayerAsync(player, "unity_runs");
            var token = (await server.MintTokenAsync(player, new[] { "read", "submit" })).Token;
            var panel = Activator.CreateInstance(panelType);
            Func<string, FieldInfo> field = name => panelType.GetField(name, BindingFlags.Instance | BindingFlags.NonPublic);
            field("serviceUrl").SetValue(panel, baseUrl);
            field("boardId").SetValue(panel, boardId);
            field("playerId").SetValue(panel, player);
            field("playerToken").SetValue(panel, token);
            // as Unity would: Start (async void) submits a run and fills the panel's lines
            panelType.GetMethod("Start", BindingFlags.Instance | BindingFlags.NonPublic).Invoke(panel, null);
            var lines = (List<string>)field("lines").GetValue(panel);
            await Eventually(() => Task.FromResult(lines.Count > 0), "the panel shows the top");
            Same(new[] { "1. unity_runs" }, lines.Select(l => l.Substring(0, l.IndexOf("  ", StringComparison.Ordinal))), "the top 10");
            Equal(1L, (await server.TopAsync(boardId)).Total, "the run, submitted with the player's token");
        }

        // --- the runner -------------------------------------------------------------------------------

        private static readonly List<KeyValuePair<string, Func<Task>>> Tests = new List<KeyValuePair<string, Func<Task>>>
        {
            Test("wire: src/Wire.g.cs is what the service's /openapi.json generates", WireMatchesOpenApi),
            Test("wire: the types read and write JSON", WireTypesReadAndWrite),
            Test("json: reads and writes RFC 8259", JsonReadsAndWrites),
            Test("endpoints: boards, runs, reads and profiles", BoardsRunsReadsProfiles),
            Test("endpoints: SubmitManyAsync sends batches of at most 1000", SubmitManySendsBatches),
            Test("endpoints: entry metadata, submitted with runs and read back with Include", EntryMetadata),
            Test("endpoints: holds, bans, erasure, deleting a board", Moderation),
            Test("endpoints: a ban's reason, sent only when given, listed by BansAsync", BanReasons),
            Test("endpoints: DeleteEntryAsync removes one entry from one period", RemovingAnEntry),
            Test("endpoints: ClosePeriodAsync closes an open period now", ClosingAPeriod),
            Test("endpoints: hooks, an admin's to set, read and remove; DeliveriesAsync", HooksAndDeliveries),
            Test("endpoints: JoinAsync joins an occurrence; BoardFull, NotOpen, not_joined", JoiningAnOccurrence),
            Test("endpoints: LeagueAsync, CohortAsync, LeaguesAsync; zones", Leagues),
            Test("tokens: a token client reads its own view and submits its own runs", TokenClient),
            Test("tokens: top pages follow cursors", CursorPaging),
            Test("errors: classes with status, code and message; not built; never retried", ErrorsAreClasses),
            Test("retries: a submit is retried with the same run_id, nothing else is", RetriedWithTheSameRunId),
            Test("events: the top list on connect and after each change", LiveTopList),
            Test("events: a player's own stream: rank changes, a friend passing, a token", PlayerEventStream),
            Test("snippets: the guides' C# runs as written", GuideSnippets),
            Test("snippets: the Unity sample submits and shows the top 10", UnitySampleRuns),
        };

        private static KeyValuePair<string, Func<Task>> Test(string name, Func<Task> run)
        {
            return new KeyValuePair<string, Func<Task>>(name, run);
        }

        public static int Main(string[] args)
        {
            if (args.Length < 2)
            {
                Console.Error.WriteLine("usage: ClientTests.exe <base url> <src/Wire.g.cs> [group ...]");
                return 2;
            }
            baseUrl = args[0].TrimEnd('/');
            wirePath = args[1];
            var groups = args.Skip(2).ToList();
            admin = new RankdClient(baseUrl, Admin);
            server = new RankdClient(baseUrl, Server);
            int passed = 0, failed = 0;
            foreach (var test in Tests)
            {
                var group = test.Key.Substring(0, test.Key.IndexOf(':'));
                if (groups.Count > 0 && !groups.Contains(group)) continue;
                var watch = Stopwatch.StartNew();
                try
                {
                    test.Value().GetAwaiter().GetResult();
                    passed++;
                    Console.WriteLine("ok   " + test.Key + " (" + watch.ElapsedMilliseconds + " ms)");
                }
                catch (Exception e)
                {
                    failed++;
                    Console.WriteLine("FAIL " + test.Key + " (" + watch.ElapsedMilliseconds + " ms)");
                    Console.WriteLine("     " + (e is Failure ? e.Message : e.ToString()).Replace("\n", "\n     "));
                }
            }
            Console.WriteLine(passed + " passed, " + failed + " failed");
            return failed == 0 && passed > 0 ? 0 : 1;
        }
    }

    /// <summary>Where a guide's snippet comes from (file:line), on each DocSnippets method.</summary>
    [AttributeUsage(AttributeTargets.Method)]
    public sealed class DescriptionAttribute : Attribute
    {
        public DescriptionAttribute(string text)
        {
            Text = text;
        }

        public string Text { get; private set; }
    }
}
