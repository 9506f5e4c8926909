// Server-Sent Events, read as they arrive: the live top list of a board
// (GET /v1/boards/{id}/events) and one player's own events (GET /v1/players/{id}/events), as
// the Python client (rankd.client.calls.EventReader) and the TypeScript one read them.
// .NET Standard 2.0 has no async streams, so a stream is an object with NextAsync().

using System;
using System.Collections.Generic;
using System.IO;
using System.Net.Http;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Rankd
{
    /// <summary>Reads a text/event-stream line by line: <see cref="Feed"/> returns the event's
    /// name and data at the blank line that ends an event; comments (the heartbeats) and other
    /// fields are skipped.</summary>
    public sealed class EventReader
    {
        private string name = "message";
        private readonly List<string> data = new List<string>();

        /// <summary>[name, data] when <paramref name="line"/> ends an event, else null.</summary>
        public string[] Feed(string line)
        {
            if (line.Length == 0)
            {
                string[] found = data.Count > 0 ? new[] { name, string.Join("\n", data.ToArray()) } : null;
                name = "message";
                data.Clear();
                return found;
            }
            if (line[0] == ':') return null;
            int colon = line.IndexOf(':');
            string field = colon < 0 ? line : line.Substring(0, colon);
            string value = colon < 0 ? "" : line.Substring(colon + 1);
            if (value.StartsWith(" ", StringComparison.Ordinal)) value = value.Substring(1);
            if (field == "event") name = value;
            else if (field == "data") data.Add(value);
            return null;
        }
    }

    /// <summary>An open event stream: <see cref="NextAsync"/> waits for the next event (null
    /// once the service ends the stream). It has no timeout: Dispose it, or cancel the token
    /// given to NextAsync, to stop.</summary>
    public sealed class EventStream<T> : IDisposable where T : class
    {
        private readonly HttpResponseMessage response;
        private readonly StreamReader reader;
        private readonly Func<string, string, T> convert;
        private readonly EventReader events = new EventReader();
        private int disposed;

        internal EventStream(HttpResponseMessage response, Stream body, Func<string, string, T> convert)
        {
            this.response = response;
            reader = new StreamReader(body, new UTF8Encoding(false));
            this.convert = convert;
        }

        /// <summary>The next event this stream yields; null when the stream has ended.
        /// Cancelling <paramref name="cancellationToken"/> closes the stream and throws
        /// OperationCanceledException.</summary>
        public async Task<T> NextAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            using (cancellationToken.Register(Dispose))
            {
                while (true)
                {
                    string line;
                    try
                    {
                        line = await reader.ReadLineAsync().ConfigureAwait(false);
                    }
                    catch (Exception)
                    {
                        if (cancellationToken.IsCancellationRequested) throw new OperationCanceledException(cancellationToken);
                        if (disposed != 0) return null;
                        throw;
                    }
                    if (line == null)
                    {
                        cancellationToken.ThrowIfCancellationRequested();
                        return null;
                    }
                    var found = events.Feed(line);
                    if (found == null) continue;
                    var item = convert(found[0], found[1]);
                    if (item != null) return item;
                }
            }
        }

        public void Dispose()
        {
            if (Interlocked.Exchange(ref disposed, 1) != 0) return;
            // the response first: it closes the connection under a read in progress, which
            // then ends (NextAsync returns null, or throws OperationCanceledException when its
            // token asked for it)
            try
            {
                response.Dispose();
            }
            finally
            {
                try
                {
                    reader.Dispose();
                }
                catch (InvalidOperationException)
                {
                    // a read still in progress; the closed connection ends it
                }
            }
        }
    }

    /// <summary>A player stream's event: <see cref="StandingEvent"/> or <see cref="PassedEvent"/>
    /// (Kind "standing" or "passed"). Not in the OpenAPI document (they are events, not JSON
    /// answers), so written here, after the contract and the service's payloads.</summary>
    public abstract class PlayerEvent
    {
        public string Kind { get; protected set; }
        public string BoardId { get; private set; }
        public string Window { get; private set; }
        public string Period { get; private set; }

        /// <summary>StandingEvent: the player's rank now; PassedEvent: the friend's rank now.</summary>
        public long Rank { get; private set; }

        /// <summary>The payload as it came.</summary>
        public JsonObject Raw { get; private set; }

        protected void Read(JsonObject o)
        {
            Raw = o;
            BoardId = Json.AsString(o["board_id"]);
            Window = Json.AsString(o["window"]);
            Period = Json.AsString(o["period"]);
            Rank = Json.AsLong(o["rank"]);
        }

        /// <summary>The event for a stream's [name, data]; null for a kind this client does not
        /// know (skipped).</summary>
        public static PlayerEvent From(string name, string data)
        {
            if (name != "standing" && name != "passed") return null;
            var o = Json.Parse(data) as JsonObject;
            if (o == null) return null;
            if (name == "standing") return new StandingEvent(o);
            return new PassedEvent(o);
        }
    }

    /// <summary>The player's rank in one board window's current period (global standings):
    /// sent on connect for each window where the player has an entry, then whenever it changes
    /// (at most one a second per board and window, the latest state always sent).</summary>
    public sealed class StandingEvent : PlayerEvent
    {
        internal StandingEvent(JsonObject o)
        {
            Kind = "standing";
            Read(o);
            PreviousRank = Json.AsLongOrNull(o["previous_rank"]);
        }

        /// <summary>The rank the stream last sent for this window; null on connect, in a new
        /// period, or when the player had no entry before.</summary>
        public long? PreviousRank { get; private set; }
    }

    /// <summary>One of the stream's listed friends, behind the player (or without an entry) at
    /// the last look, is now ahead of them.</summary>
    public sealed class PassedEvent : PlayerEvent
    {
        internal PassedEvent(JsonObject o)
        {
            Kind = "passed";
            Read(o);
            PlayerId = Json.AsString(o["player_id"]);
            YourRank = Json.AsLong(o["your_rank"]);
        }

        /// <summary>The friend.</summary>
        public string PlayerId { get; private set; }

        /// <summary>The followed player's rank now.</summary>
        public long YourRank { get; private set; }
    }

    public sealed partial class RankdClient
    {
        /// <summary>The live top list of a board: the first <paramref name="n"/> entries on
        /// connect, then each change (at most 10 a second). An error answer throws here, as any
        /// call does.</summary>
        public Task<EventStream<TopPage>> OpenEventsAsync(string boardId, int n = 10, Where where = null,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().Add(where).Add("n", n);
            return OpenStreamAsync(Operations.Events.Fill(boardId), query,
                (name, data) => name == "top" ? TopPage.FromJson(Json.Parse(data)) : null, cancellationToken);
        }

        /// <summary>One player's live events on <paramref name="boards"/> (up to 20; each board
        /// window's current period, global standings): a <see cref="StandingEvent"/> on connect
        /// for each window where the player has an entry and whenever their rank changes, a
        /// <see cref="PassedEvent"/> when one of <paramref name="friends"/> (up to 100) overtakes
        /// them. Needs a server key or that player's own token (scope "read"; another player's
        /// id is <see cref="Forbidden"/>). An error answer throws here (InvalidRequest,
        /// BoardNotFound, Unavailable when the instance serves its maximum of streams, ...).</summary>
        public Task<EventStream<PlayerEvent>> OpenPlayerEventsAsync(string playerId, IEnumerable<string> boards,
            IEnumerable<string> friends = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            var listed = friends == null ? null : Listed(friends);
            var query = new Query().Add("boards", Listed(boards)).Add("friends", string.IsNullOrEmpty(listed) ? null : listed);
            return OpenStreamAsync(Operations.PlayerEvents.Fill(playerId), query, PlayerEvent.From, cancellationToken);
        }

        private async Task<EventStream<T>> OpenStreamAsync<T>(string path, Query query, Func<string, string, T> convert,
            CancellationToken cancel) where T : class
        {
            HttpResponseMessage response = null;
            using (var limit = CancellationTokenSource.CreateLinkedTokenSource(cancel))
            {
                limit.CancelAfter(timeout); // until the headers: the stream itself has no timeout
                try
                {
                    var request = Request("GET", path, query, null, "text/event-stream");
                    response = await http.SendAsync(request, HttpCompletionOption.ResponseHeadersRead, limit.Token).ConfigureAwait(false);
                    if ((int)response.StatusCode >= 400)
                    {
                        var text = await response.Content.ReadAsStringAsync().ConfigureAwait(false);
                        Decode((int)response.StatusCode, text, RetryAfterText(response)); // throws its error
                    }
                    var body = await response.Content.ReadAsStreamAsync().ConfigureAwait(false);
                    var stream = new EventStream<T>(response, body, convert);
                    response = null;
                    return stream;
                }
                catch (OperationCanceledException)
                {
                    if (cancel.IsCancellationRequested) throw;
                    throw new TimeoutException("GET " + path + ": no answer within " + timeout.TotalSeconds + " s");
                }
                finally
                {
                    if (response != null) response.Dispose();
                }
            }
        }
    }
}
