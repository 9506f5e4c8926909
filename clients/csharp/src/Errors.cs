// The contract's errors as exceptions, as in the Python client (rankd.client.errors) and the
// TypeScript one: one base class, one subclass per error code, each carrying the HTTP status,
// the code, the message and, for 429, the Retry-After seconds.

using System;
using System.Collections.Generic;
using System.Globalization;

namespace Rankd
{
    /// <summary>An error answer from the service: <c>{"error": {"code", "message"}}</c> with its
    /// status.</summary>
    public class RankdApiException : Exception
    {
        public RankdApiException(int status, string code, string message, double? retryAfter = null)
            : base(message)
        {
            Status = status;
            Code = code;
            RetryAfter = retryAfter;
        }

        /// <summary>The HTTP status (400, 401, ..., 503).</summary>
        public int Status { get; private set; }

        /// <summary>The contract's error code (<c>board_not_found</c>, ...).</summary>
        public string Code { get; private set; }

        /// <summary>On 429 (and a 503 that says so): seconds to wait before trying again.</summary>
        public double? RetryAfter { get; private set; }

        /// <summary>True for what the contract names and this version of the service does not
        /// build yet: a 501 <c>not_implemented</c> route (<see cref="NotBuilt"/>) or a 400 field
        /// or parameter (<see cref="FieldNotBuilt"/>). Sending it again changes nothing.</summary>
        public virtual bool IsNotBuilt { get { return false; } }

        public override string ToString()
        {
            return GetType().Name + ": " + Status + " " + Code + ": " + Message;
        }
    }

    public class InvalidRequest : RankdApiException
    {
        public InvalidRequest(int status, string code, string message, double? retryAfter = null)
            : base(status, code, message, retryAfter) { }
    }

    /// <summary>400 <c>invalid_request</c> for a v1.3 field or value this version of the service
    /// does not build yet (a board's <c>league</c>): still an
    /// <see cref="InvalidRequest"/> (status 400, code <c>invalid_request</c>, as the other
    /// clients see it), told apart by the service's sentence "... is not built in this version
    /// of Rankd yet". Not retried.</summary>
    public class FieldNotBuilt : InvalidRequest
    {
        public FieldNotBuilt(int status, string code, string message, double? retryAfter = null)
            : base(status, code, message, retryAfter) { }

        public override bool IsNotBuilt { get { return true; } }
    }

    public class ScoreOutOfRange : RankdApiException
    {
        public ScoreOutOfRange(int status, string code, string message, double? retryAfter = null)
            : base(status, code, message, retryAfter) { }
    }

    /// <summary>401: no credentials where some are needed, a wrong key, or a player token that
    /// is expired, altered or signed with a secret the service does not hold.</summary>
    public class Unauthorized : RankdApiException
    {
        public Unauthorized(int status, string code, string message, double? retryAfter = null)
            : base(status, code, message, retryAfter) { }
    }

    /// <summary>403: valid credentials that are not enough: a server key on an admin route, or
    /// a player token on a key route, a batch, another player's view or run, a board without
    /// <c>client_submits</c>, or without the scope the call needs.</summary>
    public class Forbidden : RankdApiException
    {
        public Forbidden(int status, string code, string message, double? retryAfter = null)
            : base(status, code, message, retryAfter) { }
    }

    public class BoardNotFound : RankdApiException
    {
        public BoardNotFound(int status, string code, string message, double? retryAfter = null)
            : base(status, code, message, retryAfter) { }
    }

    public class PlayerNotRanked : RankdApiException
    {
        public PlayerNotRanked(int status, string code, string message, double? retryAfter = null)
            : base(status, code, message, retryAfter) { }
    }

    public class HoldNotFound : RankdApiException
    {
        public HoldNotFound(int status, string code, string message, double? retryAfter = null)
            : base(status, code, message, retryAfter) { }
    }

    public class BoardImmutableField : RankdApiException
    {
        public BoardImmutableField(int status, string code, string message, double? retryAfter = null)
            : base(status, code, message, retryAfter) { }
    }

    /// <summary>409: the run_id was sent before with other content; nothing was accepted.</summary>
    public class RunConflict : RankdApiException
    {
        public RunConflict(int status, string code, string message, double? retryAfter = null)
            : base(status, code, message, retryAfter) { }
    }

    /// <summary>409 <c>board_full</c>: the occurrence to join already has its board's
    /// <c>max_entrants</c> players; the player was not joined. Not retried.</summary>
    public class BoardFull : RankdApiException
    {
        public BoardFull(int status, string code, string message, double? retryAfter = null)
            : base(status, code, message, retryAfter) { }
    }

    /// <summary>409 <c>not_open</c>: nothing to join: no occurrence open now (nor the one named
    /// with <c>period</c> open or upcoming), or a board without a schedule. Not retried.</summary>
    public class NotOpen : RankdApiException
    {
        public NotOpen(int status, string code, string message, double? retryAfter = null)
            : base(status, code, message, retryAfter) { }
    }

    public class BodyTooLarge : RankdApiException
    {
        public BodyTooLarge(int status, string code, string message, double? retryAfter = null)
            : base(status, code, message, retryAfter) { }
    }

    public class UnsupportedMediaType : RankdApiException
    {
        public UnsupportedMediaType(int status, string code, string message, double? retryAfter = null)
            : base(status, code, message, retryAfter) { }
    }

    /// <summary>429: over the key's (or the player's) rate; <see cref="RankdApiException.RetryAfter"/>
    /// says how long to wait.</summary>
    public class RateLimited : RankdApiException
    {
        public RateLimited(int status, string code, string message, double? retryAfter = null)
            : base(status, code, message, retryAfter) { }
    }

    /// <summary>501 <c>not_enabled</c>: a feature the service was not configured for (player
    /// tokens without RANKD_PLAYER_TOKEN_SECRET); not retried.</summary>
    public class NotEnabled : RankdApiException
    {
        public NotEnabled(int status, string code, string message, double? retryAfter = null)
            : base(status, code, message, retryAfter) { }
    }

    /// <summary>501 <c>not_implemented</c>: a route the contract names that this version of the
    /// service does not build yet (the league routes); not retried.</summary>
    public class NotBuilt : RankdApiException
    {
        public NotBuilt(int status, string code, string message, double? retryAfter = null)
            : base(status, code, message, retryAfter) { }

        public override bool IsNotBuilt { get { return true; } }
    }

    /// <summary>503: nothing was accepted; retrying is safe (submits are idempotent by
    /// run_id, and are retried by the client).</summary>
    public class Unavailable : RankdApiException
    {
        public Unavailable(int status, string code, string message, double? retryAfter = null)
            : base(status, code, message, retryAfter) { }
    }

    public static class Errors
    {
        private delegate RankdApiException Make(int status, string code, string message, double? retryAfter);

        private static readonly Dictionary<string, Make> ByCode = new Dictionary<string, Make>
        {
            { "invalid_request", (s, c, m, r) => new InvalidRequest(s, c, m, r) },
            { "score_out_of_range", (s, c, m, r) => new ScoreOutOfRange(s, c, m, r) },
            { "unauthorized", (s, c, m, r) => new Unauthorized(s, c, m, r) },
            { "forbidden", (s, c, m, r) => new Forbidden(s, c, m, r) },
            { "board_not_found", (s, c, m, r) => new BoardNotFound(s, c, m, r) },
            { "player_not_ranked", (s, c, m, r) => new PlayerNotRanked(s, c, m, r) },
            { "hold_not_found", (s, c, m, r) => new HoldNotFound(s, c, m, r) },
            { "board_immutable_field", (s, c, m, r) => new BoardImmutableField(s, c, m, r) },
            { "run_conflict", (s, c, m, r) => new RunConflict(s, c, m, r) },
            { "board_full", (s, c, m, r) => new BoardFull(s, c, m, r) },
            { "not_open", (s, c, m, r) => new NotOpen(s, c, m, r) },
            { "body_too_large", (s, c, m, r) => new BodyTooLarge(s, c, m, r) },
            { "unsupported_media_type", (s, c, m, r) => new UnsupportedMediaType(s, c, m, r) },
            { "rate_limited", (s, c, m, r) => new RateLimited(s, c, m, r) },
            { "not_enabled", (s, c, m, r) => new NotEnabled(s, c, m, r) },
            { "not_implemented", (s, c, m, r) => new NotBuilt(s, c, m, r) },
            { "unavailable", (s, c, m, r) => new Unavailable(s, c, m, r) },
        };

        // the service's sentence for a v1.3 field or parameter it refuses (rankd/unbuilt.py)
        private const string NotBuiltSentence = "is not built in this version of Rankd yet";

        /// <summary>The exception for an error answer (<paramref name="body"/> as Json.Parse
        /// read it, or null if it was not JSON); <paramref name="retryAfter"/> is the
        /// Retry-After header's text.</summary>
        public static RankdApiException For(int status, object body, string retryAfter = null)
        {
            var answer = body as JsonObject;
            var error = answer == null ? null : answer["error"] as JsonObject;
            string code, message;
            if (error != null && error["code"] is string)
            {
                code = (string)error["code"];
                message = error["message"] == null ? "" : Convert.ToString(error["message"], CultureInfo.InvariantCulture);
            }
            else
            {
                // not the contract's shape (a proxy in between, say)
                code = status == 503 ? "unavailable" : "http_" + status;
                message = "HTTP " + status + " without the error body";
            }
            double? seconds = null;
            double parsed;
            if (!string.IsNullOrEmpty(retryAfter)
                && double.TryParse(retryAfter.Trim(), NumberStyles.Float, CultureInfo.InvariantCulture, out parsed))
                seconds = parsed;
            if (status == 400 && code == "invalid_request" && message.Contains(NotBuiltSentence))
                return new FieldNotBuilt(status, code, message, seconds);
            Make make;
            if (ByCode.TryGetValue(code, out make)) return make(status, code, message, seconds);
            return new RankdApiException(status, code, message, seconds);
        }
    }
}
