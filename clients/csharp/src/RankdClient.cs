// RankdClient: the HTTP API from Unity (2021+) or any .NET (Standard 2.0 and up), over
// System.Net.Http with one shared HttpClient. It behaves as the Python client (rankd.client)
// and the TypeScript one do: errors are RankdApiException subclasses; only submits are
// retried (a run_id is counted once, so a resent run changes nothing twice), on 503, a lost
// connection or a timeout, and on 429 when its Retry-After is short; reads and admin calls
// are the caller's to retry. No other error answer is retried (a 403 or any other 4xx, a 501
// not_enabled or not_implemented): sending again changes nothing.
//
// `key` is any bearer credential: an admin or server key, or a player token (MintTokenAsync's
// Token), which a game client holds: its reads are that player's own view, and it submits
// that player's runs on boards with client_submits.

using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Net;
using System.Net.Http;
using System.Net.Http.Headers;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Rankd
{
    /// <summary>One endpoint: its method and its path, with <c>{name}</c> placeholders.</summary>
    public sealed class Operation
    {
        public Operation(string id, string method, string path)
        {
            Id = id;
            Method = method;
            Path = path;
        }

        public string Id { get; private set; }
        public string Method { get; private set; }
        public string Path { get; private set; }

        /// <summary>The path with its placeholders filled in order, each value escaped.</summary>
        public string Fill(params string[] values)
        {
            var built = new StringBuilder();
            int at = 0, used = 0;
            while (at < Path.Length)
            {
                int open = Path.IndexOf('{', at);
                if (open < 0)
                {
                    built.Append(Path, at, Path.Length - at);
                    break;
                }
                int close = Path.IndexOf('}', open);
                built.Append(Path, at, open - at);
                if (used >= values.Length) throw new ArgumentException(Path + ": too few values");
                if (values[used] == null) throw new ArgumentNullException(Path.Substring(open + 1, close - open - 1));
                built.Append(Uri.EscapeDataString(values[used++]));
                at = close + 1;
            }
            if (used != values.Length) throw new ArgumentException(Path + ": too many values");
            return built.ToString();
        }
    }

    /// <summary>Bounded exponential backoff for submits: at most <c>attempts</c> calls, waiting
    /// about <c>firstDelayMs</c>, then twice as long each time, never more than
    /// <c>maxDelayMs</c> (each wait jittered between half and all of it, so many clients do
    /// not retry in step).</summary>
    public sealed class RetryPolicy
    {
        private static readonly Random Jitter = new Random();

        public RetryPolicy(int attempts = 5, int firstDelayMs = 100, int maxDelayMs = 2000)
        {
            if (attempts < 1 || firstDelayMs < 0 || maxDelayMs < firstDelayMs)
                throw new ArgumentOutOfRangeException("attempts", "attempts >= 1 and 0 <= firstDelayMs <= maxDelayMs");
            Attempts = attempts;
            FirstDelayMs = firstDelayMs;
            MaxDelayMs = maxDelayMs;
        }

        public int Attempts { get; private set; }
        public int FirstDelayMs { get; private set; }
        public int MaxDelayMs { get; private set; }

        /// <summary>How long to wait before retry number <paramref name="retry"/> (0 for the
        /// first), at least <paramref name="retryAfterS"/> when the answer said so.</summary>
        public TimeSpan Delay(int retry, double? retryAfterS = null)
        {
            double ceiling = Math.Min(MaxDelayMs, FirstDelayMs * Math.Pow(2, retry));
            double jitter;
            lock (Jitter) jitter = Jitter.NextDouble();
            double wait = ceiling / 2 + jitter * (ceiling / 2);
            if (retryAfterS.HasValue) wait = Math.Max(wait, retryAfterS.Value * 1000);
            return TimeSpan.FromMilliseconds(wait);
        }

        /// <summary>Whether a call that failed on attempt <paramref name="attempt"/> (0-based) is
        /// sent again: only a submit, only while attempts are left, only on 503, a short 429, a
        /// lost connection or a timeout.</summary>
        public bool ShouldRetry(bool idempotentSubmit, int attempt, Exception failure)
        {
            if (!idempotentSubmit || attempt + 1 >= Attempts) return false;
            var limited = failure as RateLimited;
            if (limited != null)
                // only a short wait: a longer one is the caller's decision
                return !limited.RetryAfter.HasValue || limited.RetryAfter.Value * 1000 <= MaxDelayMs;
            return failure is Unavailable || RankdClient.IsTransportError(failure);
        }
    }

    /// <summary>What every read may name: the window (default: the board's first), the period
    /// (default: the window's current one), the segment (<c>country:FR</c>; default: the global
    /// standings), and <c>Viewer</c>, a player's own view (needs a server key; a player token
    /// reads its own anyway); top, player, around and friends also take <c>Include</c>.</summary>
    public sealed class Where
    {
        public string Window { get; set; }
        public string Period { get; set; }
        public string Segment { get; set; }
        public string Viewer { get; set; }

        /// <summary><c>include=</c> (v1.3) on top, player, around and friends: <c>"metadata"</c>
        /// (the only value the service takes; another is <see cref="InvalidRequest"/>): each
        /// entry (a player read: the answer itself) also carries <c>Metadata</c>, the metadata
        /// of the run holding it (null: that run had none). Null: no <c>metadata</c> member at
        /// all.</summary>
        public string Include { get; set; }
    }

    public sealed class RankdClientOptions
    {
        public RankdClientOptions()
        {
            Timeout = TimeSpan.FromSeconds(10);
            Retry = new RetryPolicy();
        }

        /// <summary>Per request (the event streams: until their headers arrive). Default 10 s.</summary>
        public TimeSpan Timeout { get; set; }

        public RetryPolicy Retry { get; set; }

        /// <summary>Another HttpClient (a proxy's, a test's); default one shared by every
        /// RankdClient of the process. It is never disposed here; its own Timeout should be
        /// infinite (the event streams have none).</summary>
        public HttpClient Http { get; set; }
    }

    public sealed partial class RankdClient
    {
        /// <summary>Runs per runs:batch call.</summary>
        public const int MaxBatch = 1000;

        private static readonly object SharedLock = new object();
        private static HttpClient shared;

        private readonly string key;
        private readonly HttpClient http;
        private readonly TimeSpan timeout;

        /// <param name="baseUrl">The service, e.g. <c>https://rankd.example.com</c>.</param>
        /// <param name="key">The bearer credential every call sends: an admin or server key, or a
        /// player token (<see cref="MintTokenAsync"/>'s Token, for a game client: reads are that
        /// player's own view; submits need the <c>submit</c> scope and a board with
        /// <c>client_submits</c>; key routes answer 403 <see cref="Forbidden"/>). Null: public
        /// reads only.</param>
        public RankdClient(string baseUrl = "http://127.0.0.1:8000", string key = null, RankdClientOptions options = null)
        {
            if (baseUrl == null) throw new ArgumentNullException("baseUrl");
            options = options ?? new RankdClientOptions();
            BaseUrl = baseUrl.TrimEnd('/');
            this.key = string.IsNullOrEmpty(key) ? null : key;
            http = options.Http ?? SharedHttp;
            timeout = options.Timeout;
            Retry = options.Retry ?? new RetryPolicy();
        }

        public string BaseUrl { get; private set; }

        public RetryPolicy Retry { get; private set; }

        /// <summary>The HttpClient every RankdClient shares unless given another: one
        /// connection pool for the process, as HttpClient is meant to be used.</summary>
        public static HttpClient SharedHttp
        {
            get
            {
                lock (SharedLock)
                {
                    if (shared == null)
                        shared = new HttpClient { Timeout = System.Threading.Timeout.InfiniteTimeSpan };
                    return shared;
                }
            }
        }

        /// <summary>A request that never got an HTTP answer: refused or dropped connection, or
        /// timed out.</summary>
        public static bool IsTransportError(Exception failure)
        {
            if (failure is RankdApiException) return false;
            return failure is HttpRequestException || failure is TimeoutException
                || failure is IOException || failure is WebException;
        }

        // --- the request loop ---------------------------------------------------------------

        private sealed class Query
        {
            private readonly List<KeyValuePair<string, string>> items = new List<KeyValuePair<string, string>>();

            public Query Add(string name, string value)
            {
                if (value != null) items.Add(new KeyValuePair<string, string>(name, value));
                return this;
            }

            public Query Add(string name, long? value)
            {
                return value.HasValue ? Add(name, value.Value.ToString(CultureInfo.InvariantCulture)) : this;
            }

            public Query Add(Where where)
            {
                if (where == null) return this;
                return Add("window", where.Window).Add("period", where.Period).Add("segment", where.Segment)
                    .Add("viewer", where.Viewer).Add("include", where.Include);
            }

            public string Text()
            {
                if (items.Count == 0) return "";
                var built = new StringBuilder("?");
                for (int i = 0; i < items.Count; i++)
                {
                    if (i > 0) built.Append('&');
                    built.Append(Uri.EscapeDataString(items[i].Key)).Append('=').Append(Uri.EscapeDataString(items[i].Value));
                }
                return built.ToString();
            }
        }

        private static string Listed(IEnumerable<string> ids)
        {
            return ids == null ? null : string.Join(",", new List<string>(ids).ToArray());
        }

        private HttpRequestMessage Request(string method, string path, Query query, string payload, string accept)
        {
            var request = new HttpRequestMessage(new HttpMethod(method), BaseUrl + path + (query == null ? "" : query.Text()));
            if (key != null) request.Headers.Authorization = new AuthenticationHeaderValue("Bearer", key);
            request.Headers.Accept.Add(new MediaTypeWithQualityHeaderValue(accept));
            if (payload != null) request.Content = new StringContent(payload, new UTF8Encoding(false), "application/json");
            return request;
        }

        private async Task<object> OnceAsync(string method, string path, Query query, string payload, CancellationToken cancel)
        {
            using (var limit = CancellationTokenSource.CreateLinkedTokenSource(cancel))
            {
                limit.CancelAfter(timeout);
                try
                {
                    using (var request = Request(method, path, query, payload, "application/json"))
                    using (var response = await http.SendAsync(request, HttpCompletionOption.ResponseContentRead, limit.Token).ConfigureAwait(false))
                    {
                        var text = await response.Content.ReadAsStringAsync().ConfigureAwait(false);
                        return Decode((int)response.StatusCode, text, RetryAfterText(response));
                    }
                }
                catch (OperationCanceledException)
                {
                    if (cancel.IsCancellationRequested) throw;
                    throw new TimeoutException(method + " " + path + ": no answer within " + timeout.TotalSeconds + " s");
                }
            }
        }

        private async Task<object> SendAsync(string method, string path, Query query, object body, bool idempotentSubmit, CancellationToken cancel)
        {
            // written once: every retry sends the same bytes, the same run_id
            string payload = body == null ? null : Json.Write(body);
            for (int attempt = 0; ; attempt++)
            {
                Exception failure;
                try
                {
                    return await OnceAsync(method, path, query, payload, cancel).ConfigureAwait(false);
                }
                catch (Exception e)
                {
                    if (cancel.IsCancellationRequested || !Retry.ShouldRetry(idempotentSubmit, attempt, e)) throw;
                    failure = e;
                }
                var api = failure as RankdApiException;
                await Task.Delay(Retry.Delay(attempt, api == null ? null : api.RetryAfter), cancel).ConfigureAwait(false);
            }
        }

        private Task<object> SendAsync(Operation op, string[] ids, Query query, object body, CancellationToken cancel, bool idempotentSubmit = false)
        {
            return SendAsync(op.Method, op.Fill(ids), query, body, idempotentSubmit, cancel);
        }

        private static string RetryAfterText(HttpResponseMessage response)
        {
            IEnumerable<string> values;
            if (response.Headers.TryGetValues("Retry-After", out values))
                foreach (var value in values) return value;
            return null;
        }

        /// <summary>The JSON of a 2xx answer; an error answer throws its RankdApiException
        /// subclass.</summary>
        public static object Decode(int status, string text, string retryAfter)
        {
            if (status >= 400)
            {
                object body = null;
                try
                {
                    body = Json.Parse(text ?? "");
                }
                catch (JsonFormatException)
                {
                    body = null;
                }
                throw Errors.For(status, body, retryAfter);
            }
            return Json.Parse(text);
        }

        private static string[] Ids(params string[] ids)
        {
            return ids;
        }

        // --- boards (admin key to write) ----------------------------------------------------

        /// <summary>Create or update a board (admin key); fields left null keep their value
        /// (or take their default on a new board). <c>Hooks</c>: <c>period_closed</c> mapped to
        /// an http(s) URL has each frozen period POSTed there (the service needs
        /// RANKD_WEBHOOK_SECRET, else <see cref="InvalidRequest"/>), mapped to null removes it;
        /// only an admin key's reads show a board's <c>Hooks</c>. <paramref name="more"/>: members sent as
        /// they are, on top (a field <see cref="BoardSettings"/> does not name; a field a later
        /// contract names that this version does not build would answer
        /// <see cref="FieldNotBuilt"/>).</summary>
        public async Task<Board> PutBoardAsync(string boardId, BoardSettings settings = null, JsonObject more = null,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var body = (settings ?? new BoardSettings()).ToJson();
            if (more != null) foreach (var member in more) body[member.Key] = member.Value;
            return Board.FromJson(await SendAsync(Operations.PutBoard, Ids(boardId), null, body, cancellationToken).ConfigureAwait(false));
        }

        public async Task<List<Board>> ListBoardsAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            return BoardsResult.FromJson(await SendAsync(Operations.ListBoards, Ids(), null, null, cancellationToken).ConfigureAwait(false)).Boards;
        }

        public async Task<Board> GetBoardAsync(string boardId, CancellationToken cancellationToken = default(CancellationToken))
        {
            return Board.FromJson(await SendAsync(Operations.GetBoard, Ids(boardId), null, null, cancellationToken).ConfigureAwait(false));
        }

        /// <summary>Delete a board with its standings, archive and holds (admin key); the id can
        /// be used again.</summary>
        public async Task<BoardDeleted> DeleteBoardAsync(string boardId, CancellationToken cancellationToken = default(CancellationToken))
        {
            return BoardDeleted.FromJson(await SendAsync(Operations.DeleteBoard, Ids(boardId), null, null, cancellationToken).ConfigureAwait(false));
        }

        /// <summary>The segment values with public entries in a period, most entries first.</summary>
        public async Task<SegmentsResult> SegmentsAsync(string boardId, string window = null, string period = null,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().Add("window", window).Add("period", period);
            return SegmentsResult.FromJson(await SendAsync(Operations.Segments, Ids(boardId), query, null, cancellationToken).ConfigureAwait(false));
        }

        // --- runs (server key; a player token its own runs, on client_submits boards) -------

        /// <summary>Submit one run (server key, or a player token with the <c>submit</c> scope on
        /// a board with <c>client_submits</c>); retried on 503, a lost connection or a timeout
        /// with the same run_id (resending it is harmless). <paramref name="metadata"/> (v1.3): a
        /// JSON object (at most 16 keys, 1,024 bytes encoded; else <see cref="InvalidRequest"/>)
        /// kept with the entry the run holds; the reads return it as the entries'
        /// <c>Metadata</c> with <c>new Where { Include = "metadata" }</c>.</summary>
        public async Task<SubmitResult> SubmitAsync(string boardId, string runId, string playerId, long score,
            DateTimeOffset? endedAt = null, IDictionary<string, string> segments = null, JsonObject metadata = null,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var run = new Run { RunId = runId, PlayerId = playerId, Score = score };
            if (endedAt.HasValue) run.EndedAt = Json.Time(endedAt.Value);
            if (segments != null) run.Segments = new Dictionary<string, string>(segments);
            run.Metadata = metadata;
            var answer = await SendAsync(Operations.SubmitRun, Ids(boardId), null, run.ToJson(), cancellationToken, true).ConfigureAwait(false);
            return SubmitResult.FromJson(answer);
        }

        /// <summary>Up to 1000 runs in one call (server key): one result per run, in order; one
        /// bad run carries its error and does not fail the others.</summary>
        public async Task<List<BatchItem>> SubmitBatchAsync(string boardId, IList<Run> runs,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            if (runs == null) throw new ArgumentNullException("runs");
            if (runs.Count > MaxBatch)
                throw new ArgumentOutOfRangeException("runs", runs.Count + " runs: at most " + MaxBatch + " per batch (see SubmitManyAsync)");
            var body = new Batch { Runs = new List<Run>(runs) }.ToJson();
            var answer = await SendAsync(Operations.SubmitBatch, Ids(boardId), null, body, cancellationToken, true).ConfigureAwait(false);
            return BatchResults.FromJson(answer).Results;
        }

        /// <summary>Any number of runs, as runs:batch calls of <paramref name="batchSize"/>;
        /// results in order.</summary>
        public async Task<List<BatchItem>> SubmitManyAsync(string boardId, IEnumerable<Run> runs, int batchSize = MaxBatch,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            if (batchSize < 1 || batchSize > MaxBatch)
                throw new ArgumentOutOfRangeException("batchSize", "batch size must be 1.." + MaxBatch);
            var results = new List<BatchItem>();
            var chunk = new List<Run>();
            foreach (var run in runs)
            {
                chunk.Add(run);
                if (chunk.Count == batchSize)
                {
                    results.AddRange(await SubmitBatchAsync(boardId, chunk, cancellationToken).ConfigureAwait(false));
                    chunk = new List<Run>();
                }
            }
            if (chunk.Count > 0) results.AddRange(await SubmitBatchAsync(boardId, chunk, cancellationToken).ConfigureAwait(false));
            return results;
        }

        // --- tournaments (server key; a player token with the join scope, its own player) ----

        /// <summary>Join a scheduled board's occurrence: the one open now, or with
        /// <paramref name="period"/> an upcoming (or open) one by its id (<c>20261205T1800Z</c>);
        /// joining again is harmless. On a board with <c>join_required</c> only joined players'
        /// runs count there. <see cref="BoardFull"/> (409) when the occurrence has its
        /// <c>max_entrants</c> players, <see cref="NotOpen"/> (409) when there is none to join
        /// (none open, the named one over or not an occurrence, or no schedule); neither is
        /// retried. With a player token: that player only, and the token needs the "join" scope
        /// (else <see cref="Forbidden"/>).</summary>
        public async Task<JoinedResult> JoinAsync(string boardId, string playerId, string period = null,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().Add("period", period);
            return JoinedResult.FromJson(await SendAsync(Operations.Join, Ids(boardId, playerId), query, null, cancellationToken).ConfigureAwait(false));
        }

        // --- reads (public; viewer needs a server key; a player token reads its own view) ----

        /// <summary><paramref name="n"/> entries (1..1000) from <paramref name="offset"/>, or
        /// after <paramref name="cursor"/> (a page's NextCursor: exact under concurrent writes,
        /// at any depth); NextCursor is null on the last page.</summary>
        public async Task<TopPage> TopAsync(string boardId, int n = 10, int offset = 0, string cursor = null, Where where = null,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().Add(where).Add("n", n);
            if (cursor != null) query.Add("cursor", cursor);
            else query.Add("offset", offset);
            return TopPage.FromJson(await SendAsync(Operations.Top, Ids(boardId), query, null, cancellationToken).ConfigureAwait(false));
        }

        /// <summary>A player's entry, rank, total and percentile; <see cref="PlayerNotRanked"/>
        /// (404) without an entry. <paramref name="accuracy"/>: <c>approx</c> on a sharded
        /// board for an estimate with an error bound.</summary>
        public async Task<PlayerRank> PlayerAsync(string boardId, string playerId, Where where = null, string accuracy = null,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().Add(where).Add("accuracy", accuracy);
            return PlayerRank.FromJson(await SendAsync(Operations.Player, Ids(boardId, playerId), query, null, cancellationToken).ConfigureAwait(false));
        }

        /// <summary>The player and up to <paramref name="range"/> (0..100) entries above and below.</summary>
        public async Task<Page> AroundAsync(string boardId, string playerId, int range = 5, Where where = null,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().Add(where).Add("range", range);
            return Page.FromJson(await SendAsync(Operations.Around, Ids(boardId, playerId), query, null, cancellationToken).ConfigureAwait(false));
        }

        /// <summary>The player and those of <paramref name="ids"/> (up to 1000) with entries, best
        /// first; NotFound names the others.</summary>
        public async Task<Friends> FriendsAsync(string boardId, string playerId, IEnumerable<string> ids, Where where = null,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().Add(where).Add("ids", Listed(ids));
            return Friends.FromJson(await SendAsync(Operations.Friends, Ids(boardId, playerId), query, null, cancellationToken).ConfigureAwait(false));
        }

        /// <summary>One player's standing on each of <paramref name="boards"/> (up to 100) in the
        /// current period of <paramref name="window"/> (default: each board's first). Boards
        /// where the player has no entry, or that lack the window, are left out; ids of boards
        /// that do not exist are in UnknownBoards.</summary>
        public async Task<PlayerStandings> StandingsAsync(string playerId, IEnumerable<string> boards, string window = null,
            string viewer = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().Add("boards", Listed(boards)).Add("window", window).Add("viewer", viewer);
            return PlayerStandings.FromJson(await SendAsync(Operations.Standings, Ids(playerId), query, null, cancellationToken).ConfigureAwait(false));
        }

        /// <summary>The rank a run with <paramref name="score"/> would take now.</summary>
        public async Task<RankOf> RankOfAsync(string boardId, long score, Where where = null,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().Add(where).Add("score", score);
            return RankOf.FromJson(await SendAsync(Operations.RankOf, Ids(boardId), query, null, cancellationToken).ConfigureAwait(false));
        }

        public async Task<PeriodsResult> PeriodsAsync(string boardId, string window = null, string segment = null,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().Add("window", window).Add("segment", segment);
            return PeriodsResult.FromJson(await SendAsync(Operations.Periods, Ids(boardId), query, null, cancellationToken).ConfigureAwait(false));
        }

        // --- players (server key) and moderation (admin key) ----------------------------------

        /// <summary>A player's name and segments (server key); null fields keep their value.</summary>
        public async Task<Profile> PutPlayerAsync(string playerId, string name = null, IDictionary<string, string> segments = null,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var body = new ProfileUpdate { Name = name, Segments = segments == null ? null : new Dictionary<string, string>(segments) }.ToJson();
            return Profile.FromJson(await SendAsync(Operations.PutProfile, Ids(playerId), null, body, cancellationToken).ConfigureAwait(false));
        }

        public async Task<Profile> GetPlayerAsync(string playerId, CancellationToken cancellationToken = default(CancellationToken))
        {
            return Profile.FromJson(await SendAsync(Operations.GetProfile, Ids(playerId), null, null, cancellationToken).ConfigureAwait(false));
        }

        /// <summary>A player token for a game client (server key): <paramref name="scope"/> of
        /// "read", "submit", "join" (service default: read only), valid <paramref name="ttlS"/>
        /// seconds, 60..604800 (service default: 3600). Give its Token to the game, as its
        /// RankdClient's key. <see cref="NotEnabled"/> (501) when the service has no
        /// RANKD_PLAYER_TOKEN_SECRET.</summary>
        public async Task<PlayerTokenIssued> MintTokenAsync(string playerId, IEnumerable<string> scope = null, int? ttlS = null,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var body = new TokenRequest { Scope = scope == null ? null : new List<string>(scope), TtlS = ttlS }.ToJson();
            return PlayerTokenIssued.FromJson(await SendAsync(Operations.MintToken, Ids(playerId), null, body, cancellationToken).ConfigureAwait(false));
        }

        /// <summary>Shadow-ban a player (admin key): gone from every public read within a second.
        /// <paramref name="reason"/> (1..500 printable characters) is recorded for moderators and
        /// listed by <see cref="BansAsync"/>; null sends no body, a ban without a reason. Banning
        /// again replaces the reason.</summary>
        public async Task<Ban> BanAsync(string playerId, string reason = null,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var body = reason == null ? null : new BanRequest { Reason = reason }.ToJson();
            return Ban.FromJson(await SendAsync(Operations.Ban, Ids(playerId), null, body, cancellationToken).ConfigureAwait(false));
        }

        /// <summary>A ban without a reason (the signature before reasons, kept for its callers).</summary>
        public Task<Ban> BanAsync(string playerId, CancellationToken cancellationToken)
        {
            return BanAsync(playerId, null, cancellationToken);
        }

        public async Task<Ban> UnbanAsync(string playerId, CancellationToken cancellationToken = default(CancellationToken))
        {
            return Ban.FromJson(await SendAsync(Operations.Unban, Ids(playerId), null, null, cancellationToken).ConfigureAwait(false));
        }

        /// <summary>Players banned now, newest first (admin key), each with its Reason (null when
        /// none was given); pass Next as <paramref name="after"/> for the next page.</summary>
        public async Task<BansResult> BansAsync(int limit = 100, string after = null,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().Add("limit", limit).Add("after", after);
            return BansResult.FromJson(await SendAsync(Operations.Bans, Ids(), query, null, cancellationToken).ConfigureAwait(false));
        }

        /// <summary>Erase a player everywhere, for a privacy request (admin key).</summary>
        public async Task<PlayerErased> ErasePlayerAsync(string playerId, CancellationToken cancellationToken = default(CancellationToken))
        {
            return PlayerErased.FromJson(await SendAsync(Operations.ErasePlayer, Ids(playerId), null, null, cancellationToken).ConfigureAwait(false));
        }

        /// <summary>Runs held for review on a board (admin key).</summary>
        public async Task<List<Hold>> HoldsAsync(string boardId, CancellationToken cancellationToken = default(CancellationToken))
        {
            return HoldsResult.FromJson(await SendAsync(Operations.Holds, Ids(boardId), null, null, cancellationToken).ConfigureAwait(false)).Holds;
        }

        public async Task<HoldDecision> ApproveAsync(string boardId, string runId, CancellationToken cancellationToken = default(CancellationToken))
        {
            return HoldDecision.FromJson(await SendAsync(Operations.Approve, Ids(boardId, runId), null, null, cancellationToken).ConfigureAwait(false));
        }

        public async Task<HoldDecision> RejectAsync(string boardId, string runId, CancellationToken cancellationToken = default(CancellationToken))
        {
            return HoldDecision.FromJson(await SendAsync(Operations.Reject, Ids(boardId, runId), null, null, cancellationToken).ConfigureAwait(false));
        }

        /// <summary>The board's webhook deliveries (admin key), newest first: one per period
        /// frozen while it had <c>hooks.period_closed</c>, with its <c>Status</c> ("pending",
        /// retried with backoff; "delivered"; "failed"), <c>Attempts</c> and the receiver's
        /// <c>LastStatus</c>. <paramref name="limit"/>: 1..1000.</summary>
        public async Task<List<Delivery>> DeliveriesAsync(string boardId, int limit = 100,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().Add("limit", limit);
            return DeliveriesResult.FromJson(await SendAsync(Operations.ListDeliveries, Ids(boardId), query, null, cancellationToken).ConfigureAwait(false)).Deliveries;
        }

        /// <summary>Remove one player's entry from one period, a correction (admin key): their runs
        /// that ended by now no longer count there (not after a replay or a rebuild either); a run
        /// that ends later counts again, as a new entry. The player's other windows, periods and
        /// boards keep theirs. <paramref name="window"/>: the board's first window when null;
        /// <paramref name="period"/>: that window's current period when null. The answer names
        /// the window and period removed from. <see cref="PlayerNotRanked"/> (404) when there is
        /// no such entry; <see cref="InvalidRequest"/> for a window the board does not have or a
        /// bad period id; <see cref="Unavailable"/> (503, not retried: the caller's to retry)
        /// while the service's log consumer is behind.</summary>
        public async Task<EntryRemoved> DeleteEntryAsync(string boardId, string playerId, string window = null, string period = null,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().Add("window", window).Add("period", period);
            return EntryRemoved.FromJson(await SendAsync(Operations.DeleteEntry, Ids(boardId, playerId), query, null, cancellationToken).ConfigureAwait(false));
        }

        /// <summary>Close an open period now, as if it had ended (admin key): runs received from
        /// the answer's <c>ClosedAt</c> on answer <c>status</c> "closed" in that window and change
        /// nothing there (they still count in the board's other windows), <see cref="PeriodsAsync"/>
        /// lists it closed, and the season job freezes it into the archive. The call answers once
        /// every instance of the service has the close (a few seconds). <paramref name="window"/>:
        /// the board's first window when null. Closing again a period an admin closed is harmless
        /// and answers the same <c>ClosedAt</c>. <see cref="InvalidRequest"/> for the all-time
        /// window (it never closes), a window the board does not have, a bad period id, a period
        /// that has not started yet or one closed already; <see cref="BoardNotFound"/> for no such
        /// board.</summary>
        public async Task<PeriodClosed> ClosePeriodAsync(string boardId, string period, string window = null,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().Add("window", window);
            return PeriodClosed.FromJson(await SendAsync(Operations.ClosePeriod, Ids(boardId, period), query, null, cancellationToken).ConfigureAwait(false));
        }

        // --- operations -------------------------------------------------------------------------

        public async Task<Health> HealthzAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            return Health.FromJson(await SendAsync(Operations.Healthz, Ids(), null, null, cancellationToken).ConfigureAwait(false));
        }

        /// <summary>200 answers (ready or degraded); a 503 throws <see cref="Unavailable"/>.</summary>
        public async Task<Ready> ReadyzAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            return Ready.FromJson(await SendAsync(Operations.Readyz, Ids(), null, null, cancellationToken).ConfigureAwait(false));
        }

        // --- leagues (v1.3) ----------------------------------------------------------------

        /// <summary>The player's league cohort in the league window's <paramref name="period"/>
        /// (null: the current one), ranked within it (an entry's Rank is its rank in the
        /// cohort), each entry with its Zone: <c>promote</c>, <c>stay</c> or <c>relegate</c>.
        /// <see cref="PlayerNotRanked"/> before the player's first counted run of the period.
        /// <paramref name="viewer"/> (a server key) or a player token: that player's own view;
        /// <paramref name="include"/> <c>"metadata"</c> as on the other reads.</summary>
        public async Task<CohortResult> LeagueAsync(string boardId, string playerId, string period = null,
            string viewer = null, string include = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().Add("period", period).Add("viewer", viewer).Add("include", include);
            return CohortResult.FromJson(await SendAsync(Operations.League, Ids(boardId, playerId), query, null, cancellationToken).ConfigureAwait(false));
        }

        /// <summary>One league cohort by its id (<c>"silver-3"</c>), ranked within it.</summary>
        public async Task<CohortResult> CohortAsync(string boardId, string cohort, string period = null,
            string viewer = null, string include = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().Add("period", period).Add("viewer", viewer).Add("include", include);
            return CohortResult.FromJson(await SendAsync(Operations.Cohort, Ids(boardId, cohort), query, null, cancellationToken).ConfigureAwait(false));
        }

        /// <summary>The player's tier on a league board now, and what each frozen period did
        /// to it (newest first).</summary>
        public async Task<LeagueHistory> LeaguesAsync(string playerId, string board,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().Add("board", board);
            return LeagueHistory.FromJson(await SendAsync(Operations.Leagues, Ids(playerId), query, null, cancellationToken).ConfigureAwait(false));
        }
    }
}
