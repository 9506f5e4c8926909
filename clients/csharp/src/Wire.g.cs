// Generated from the service's /openapi.json by tools/WireGenerator.cs (see README.md).
// Do not edit: test/ClientTests.cs regenerates it from a running rankd serve and fails
// when it differs.

using System.Collections.Generic;

namespace Rankd
{
    /// <summary>Ban (components.schemas).</summary>
    public sealed partial class Ban : IJsonWritable
    {
        /// <summary><c>player_id</c>, required.</summary>
        public string PlayerId { get; set; }

        /// <summary><c>banned</c>, required.</summary>
        public bool Banned { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static Ban FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new Ban { Raw = o };
            it.PlayerId = global::Rankd.Json.AsString(o["player_id"]);
            it.Banned = global::Rankd.Json.AsBool(o["banned"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (PlayerId != null) o["player_id"] = PlayerId;
            o["banned"] = Banned;
            return o;
        }
    }

    /// <summary>BanInfo (components.schemas).</summary>
    public sealed partial class BanInfo : IJsonWritable
    {
        /// <summary><c>player_id</c>, required.</summary>
        public string PlayerId { get; set; }

        /// <summary><c>banned_at</c>, required.</summary>
        public string BannedAt { get; set; }

        /// <summary><c>reason</c>, required.</summary>
        public string Reason { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static BanInfo FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new BanInfo { Raw = o };
            it.PlayerId = global::Rankd.Json.AsString(o["player_id"]);
            it.BannedAt = global::Rankd.Json.AsString(o["banned_at"]);
            it.Reason = global::Rankd.Json.AsString(o["reason"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (PlayerId != null) o["player_id"] = PlayerId;
            if (BannedAt != null) o["banned_at"] = BannedAt;
            if (Reason != null) o["reason"] = Reason;
            return o;
        }
    }

    /// <summary>BanRequest (a request body).</summary>
    public sealed partial class BanRequest : IJsonWritable
    {
        /// <summary><c>reason</c>, optional.</summary>
        public string Reason { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static BanRequest FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new BanRequest { Raw = o };
            it.Reason = global::Rankd.Json.AsString(o["reason"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (Reason != null) o["reason"] = Reason;
            return o;
        }
    }

    /// <summary>Bans (components.schemas).</summary>
    public sealed partial class BansResult : IJsonWritable
    {
        /// <summary><c>bans</c>, required.</summary>
        public List<BanInfo> Bans { get; set; }

        /// <summary><c>next</c>, required.</summary>
        public string Next { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static BansResult FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new BansResult { Raw = o };
            it.Bans = global::Rankd.Json.AsList(o["bans"], x => BanInfo.FromJson(x));
            it.Next = global::Rankd.Json.AsString(o["next"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (Bans != null) o["bans"] = Bans;
            if (Next != null) o["next"] = Next;
            return o;
        }
    }

    /// <summary>Batch (a request body).</summary>
    public sealed partial class Batch : IJsonWritable
    {
        /// <summary><c>runs</c>, required.</summary>
        public List<Run> Runs { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static Batch FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new Batch { Raw = o };
            it.Runs = global::Rankd.Json.AsList(o["runs"], x => Run.FromJson(x));
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (Runs != null) o["runs"] = Runs;
            return o;
        }
    }

    /// <summary>BatchItem (components.schemas).</summary>
    public sealed partial class BatchItem : IJsonWritable
    {
        /// <summary><c>run_id</c>, required.</summary>
        public string RunId { get; set; }

        /// <summary><c>standings</c>, optional.</summary>
        public List<Standing> Standings { get; set; }

        /// <summary><c>error</c>, optional.</summary>
        public ErrorBody Error { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static BatchItem FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new BatchItem { Raw = o };
            it.RunId = global::Rankd.Json.AsString(o["run_id"]);
            it.Standings = global::Rankd.Json.AsList(o["standings"], x => Standing.FromJson(x));
            it.Error = ErrorBody.FromJson(o["error"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (RunId != null) o["run_id"] = RunId;
            if (Standings != null) o["standings"] = Standings;
            if (Error != null) o["error"] = Error;
            return o;
        }
    }

    /// <summary>BatchResults (components.schemas).</summary>
    public sealed partial class BatchResults : IJsonWritable
    {
        /// <summary><c>results</c>, required.</summary>
        public List<BatchItem> Results { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static BatchResults FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new BatchResults { Raw = o };
            it.Results = global::Rankd.Json.AsList(o["results"], x => BatchItem.FromJson(x));
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (Results != null) o["results"] = Results;
            return o;
        }
    }

    /// <summary>Board (components.schemas).</summary>
    public sealed partial class Board : IJsonWritable
    {
        /// <summary><c>board_id</c>, required.</summary>
        public string BoardId { get; set; }

        /// <summary><c>windows</c>, required.</summary>
        public List<string> Windows { get; set; }

        /// <summary><c>order</c>, required.</summary>
        public string Order { get; set; }

        /// <summary><c>policy</c>, required.</summary>
        public string Policy { get; set; }

        /// <summary><c>window_policies</c>, required.</summary>
        public Dictionary<string, string> WindowPolicies { get; set; }

        /// <summary><c>max_score</c>, required.</summary>
        public long MaxScore { get; set; }

        /// <summary><c>max_run_score</c>, required.</summary>
        public long MaxRunScore { get; set; }

        /// <summary><c>shards</c>, required.</summary>
        public long Shards { get; set; }

        /// <summary><c>hold_top</c>, required.</summary>
        public long HoldTop { get; set; }

        /// <summary><c>grace_seconds</c>, required.</summary>
        public long GraceSeconds { get; set; }

        /// <summary><c>retention_days</c>, required.</summary>
        public Dictionary<string, long> RetentionDays { get; set; }

        /// <summary><c>segments</c>, required.</summary>
        public List<string> Segments { get; set; }

        /// <summary><c>score_format</c>, required: one of "integer", "duration_ms", "decimal_1", "decimal_2", "decimal_3".</summary>
        public string ScoreFormat { get; set; }

        /// <summary><c>client_submits</c>, required.</summary>
        public bool ClientSubmits { get; set; }

        /// <summary><c>join_required</c>, required.</summary>
        public bool JoinRequired { get; set; }

        /// <summary><c>max_entrants</c>, required.</summary>
        public long MaxEntrants { get; set; }

        /// <summary><c>max_attempts</c>, required.</summary>
        public long MaxAttempts { get; set; }

        /// <summary><c>league</c>, required.</summary>
        public LeagueSettings League { get; set; }

        /// <summary><c>hooks</c>, optional.</summary>
        public Dictionary<string, string> Hooks { get; set; }

        /// <summary><c>schedule</c>, optional.</summary>
        public Dictionary<string, string> Schedule { get; set; }

        /// <summary><c>current_period</c>, optional.</summary>
        public Occurrence CurrentPeriod { get; set; }

        /// <summary><c>next_period</c>, optional.</summary>
        public Occurrence NextPeriod { get; set; }

        /// <summary><c>resharding</c>, optional.</summary>
        public Dictionary<string, long> Resharding { get; set; }

        /// <summary><c>created_at</c>, required.</summary>
        public string CreatedAt { get; set; }

        /// <summary><c>tie_resolution_ms</c>, required.</summary>
        public Dictionary<string, long> TieResolutionMs { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static Board FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new Board { Raw = o };
            it.BoardId = global::Rankd.Json.AsString(o["board_id"]);
            it.Windows = global::Rankd.Json.AsList(o["windows"], x => global::Rankd.Json.AsString(x));
            it.Order = global::Rankd.Json.AsString(o["order"]);
            it.Policy = global::Rankd.Json.AsString(o["policy"]);
            it.WindowPolicies = global::Rankd.Json.AsMap(o["window_policies"], x => global::Rankd.Json.AsString(x));
            it.MaxScore = global::Rankd.Json.AsLong(o["max_score"]);
            it.MaxRunScore = global::Rankd.Json.AsLong(o["max_run_score"]);
            it.Shards = global::Rankd.Json.AsLong(o["shards"]);
            it.HoldTop = global::Rankd.Json.AsLong(o["hold_top"]);
            it.GraceSeconds = global::Rankd.Json.AsLong(o["grace_seconds"]);
            it.RetentionDays = global::Rankd.Json.AsMap(o["retention_days"], x => global::Rankd.Json.AsLong(x));
            it.Segments = global::Rankd.Json.AsList(o["segments"], x => global::Rankd.Json.AsString(x));
            it.ScoreFormat = global::Rankd.Json.AsString(o["score_format"]);
            it.ClientSubmits = global::Rankd.Json.AsBool(o["client_submits"]);
            it.JoinRequired = global::Rankd.Json.AsBool(o["join_required"]);
            it.MaxEntrants = global::Rankd.Json.AsLong(o["max_entrants"]);
            it.MaxAttempts = global::Rankd.Json.AsLong(o["max_attempts"]);
            it.League = LeagueSettings.FromJson(o["league"]);
            it.Hooks = global::Rankd.Json.AsMap(o["hooks"], x => global::Rankd.Json.AsString(x));
            it.Schedule = global::Rankd.Json.AsMap(o["schedule"], x => global::Rankd.Json.AsString(x));
            it.CurrentPeriod = Occurrence.FromJson(o["current_period"]);
            it.NextPeriod = Occurrence.FromJson(o["next_period"]);
            it.Resharding = global::Rankd.Json.AsMap(o["resharding"], x => global::Rankd.Json.AsLong(x));
            it.CreatedAt = global::Rankd.Json.AsString(o["created_at"]);
            it.TieResolutionMs = global::Rankd.Json.AsMap(o["tie_resolution_ms"], x => global::Rankd.Json.AsLong(x));
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (BoardId != null) o["board_id"] = BoardId;
            if (Windows != null) o["windows"] = Windows;
            if (Order != null) o["order"] = Order;
            if (Policy != null) o["policy"] = Policy;
            if (WindowPolicies != null) o["window_policies"] = WindowPolicies;
            o["max_score"] = MaxScore;
            o["max_run_score"] = MaxRunScore;
            o["shards"] = Shards;
            o["hold_top"] = HoldTop;
            o["grace_seconds"] = GraceSeconds;
            if (RetentionDays != null) o["retention_days"] = RetentionDays;
            if (Segments != null) o["segments"] = Segments;
            if (ScoreFormat != null) o["score_format"] = ScoreFormat;
            o["client_submits"] = ClientSubmits;
            o["join_required"] = JoinRequired;
            o["max_entrants"] = MaxEntrants;
            o["max_attempts"] = MaxAttempts;
            if (League != null) o["league"] = League;
            if (Hooks != null) o["hooks"] = Hooks;
            if (Schedule != null) o["schedule"] = Schedule;
            if (CurrentPeriod != null) o["current_period"] = CurrentPeriod;
            if (NextPeriod != null) o["next_period"] = NextPeriod;
            if (Resharding != null) o["resharding"] = Resharding;
            if (CreatedAt != null) o["created_at"] = CreatedAt;
            if (TieResolutionMs != null) o["tie_resolution_ms"] = TieResolutionMs;
            return o;
        }
    }

    /// <summary>BoardDeleted (components.schemas).</summary>
    public sealed partial class BoardDeleted : IJsonWritable
    {
        /// <summary><c>board_id</c>, required.</summary>
        public string BoardId { get; set; }

        /// <summary><c>deleted</c>, required: always true.</summary>
        public bool Deleted { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static BoardDeleted FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new BoardDeleted { Raw = o };
            it.BoardId = global::Rankd.Json.AsString(o["board_id"]);
            it.Deleted = global::Rankd.Json.AsBool(o["deleted"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (BoardId != null) o["board_id"] = BoardId;
            o["deleted"] = Deleted;
            return o;
        }
    }

    /// <summary>BoardSettings (a request body).</summary>
    public sealed partial class BoardSettings : IJsonWritable
    {
        /// <summary><c>windows</c>, optional: each one of "all-time", "daily", "weekly", "monthly", "hourly", "scheduled", "rolling-7d".</summary>
        public List<string> Windows { get; set; }

        /// <summary><c>order</c>, optional: one of "desc", "asc".</summary>
        public string Order { get; set; }

        /// <summary><c>policy</c>, optional: one of "best", "sum", "latest".</summary>
        public string Policy { get; set; }

        /// <summary><c>window_policies</c>, optional.</summary>
        public Dictionary<string, string> WindowPolicies { get; set; }

        /// <summary><c>max_score</c>, optional.</summary>
        public long? MaxScore { get; set; }

        /// <summary><c>max_run_score</c>, optional.</summary>
        public long? MaxRunScore { get; set; }

        /// <summary><c>shards</c>, optional.</summary>
        public long? Shards { get; set; }

        /// <summary><c>hold_top</c>, optional.</summary>
        public long? HoldTop { get; set; }

        /// <summary><c>grace_seconds</c>, optional.</summary>
        public long? GraceSeconds { get; set; }

        /// <summary><c>retention_days</c>, optional.</summary>
        public Dictionary<string, long> RetentionDays { get; set; }

        /// <summary><c>segments</c>, optional.</summary>
        public List<string> Segments { get; set; }

        /// <summary><c>score_format</c>, optional: one of "integer", "duration_ms", "decimal_1", "decimal_2", "decimal_3".</summary>
        public string ScoreFormat { get; set; }

        /// <summary><c>client_submits</c>, optional.</summary>
        public bool? ClientSubmits { get; set; }

        /// <summary><c>schedule</c>, optional.</summary>
        public Dictionary<string, string> Schedule { get; set; }

        /// <summary><c>join_required</c>, optional.</summary>
        public bool? JoinRequired { get; set; }

        /// <summary><c>max_entrants</c>, optional.</summary>
        public long? MaxEntrants { get; set; }

        /// <summary><c>max_attempts</c>, optional.</summary>
        public long? MaxAttempts { get; set; }

        /// <summary><c>hooks</c>, optional.</summary>
        public Dictionary<string, string> Hooks { get; set; }

        /// <summary><c>league</c>, optional.</summary>
        public JsonObject League { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static BoardSettings FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new BoardSettings { Raw = o };
            it.Windows = global::Rankd.Json.AsList(o["windows"], x => global::Rankd.Json.AsString(x));
            it.Order = global::Rankd.Json.AsString(o["order"]);
            it.Policy = global::Rankd.Json.AsString(o["policy"]);
            it.WindowPolicies = global::Rankd.Json.AsMap(o["window_policies"], x => global::Rankd.Json.AsString(x));
            it.MaxScore = global::Rankd.Json.AsLongOrNull(o["max_score"]);
            it.MaxRunScore = global::Rankd.Json.AsLongOrNull(o["max_run_score"]);
            it.Shards = global::Rankd.Json.AsLongOrNull(o["shards"]);
            it.HoldTop = global::Rankd.Json.AsLongOrNull(o["hold_top"]);
            it.GraceSeconds = global::Rankd.Json.AsLongOrNull(o["grace_seconds"]);
            it.RetentionDays = global::Rankd.Json.AsMap(o["retention_days"], x => global::Rankd.Json.AsLong(x));
            it.Segments = global::Rankd.Json.AsList(o["segments"], x => global::Rankd.Json.AsString(x));
            it.ScoreFormat = global::Rankd.Json.AsString(o["score_format"]);
            it.ClientSubmits = global::Rankd.Json.AsBoolOrNull(o["client_submits"]);
            it.Schedule = global::Rankd.Json.AsMap(o["schedule"], x => global::Rankd.Json.AsString(x));
            it.JoinRequired = global::Rankd.Json.AsBoolOrNull(o["join_required"]);
            it.MaxEntrants = global::Rankd.Json.AsLongOrNull(o["max_entrants"]);
            it.MaxAttempts = global::Rankd.Json.AsLongOrNull(o["max_attempts"]);
            it.Hooks = global::Rankd.Json.AsMap(o["hooks"], x => global::Rankd.Json.AsString(x));
            it.League = global::Rankd.Json.AsObject(o["league"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (Windows != null) o["windows"] = Windows;
            if (Order != null) o["order"] = Order;
            if (Policy != null) o["policy"] = Policy;
            if (WindowPolicies != null) o["window_policies"] = WindowPolicies;
            if (MaxScore != null) o["max_score"] = MaxScore;
            if (MaxRunScore != null) o["max_run_score"] = MaxRunScore;
            if (Shards != null) o["shards"] = Shards;
            if (HoldTop != null) o["hold_top"] = HoldTop;
            if (GraceSeconds != null) o["grace_seconds"] = GraceSeconds;
            if (RetentionDays != null) o["retention_days"] = RetentionDays;
            if (Segments != null) o["segments"] = Segments;
            if (ScoreFormat != null) o["score_format"] = ScoreFormat;
            if (ClientSubmits != null) o["client_submits"] = ClientSubmits;
            if (Schedule != null) o["schedule"] = Schedule;
            if (JoinRequired != null) o["join_required"] = JoinRequired;
            if (MaxEntrants != null) o["max_entrants"] = MaxEntrants;
            if (MaxAttempts != null) o["max_attempts"] = MaxAttempts;
            if (Hooks != null) o["hooks"] = Hooks;
            if (League != null) o["league"] = League;
            return o;
        }
    }

    /// <summary>BoardStanding (components.schemas).</summary>
    public sealed partial class BoardStanding : IJsonWritable
    {
        /// <summary><c>board_id</c>, required.</summary>
        public string BoardId { get; set; }

        /// <summary><c>window</c>, required.</summary>
        public string Window { get; set; }

        /// <summary><c>period</c>, required.</summary>
        public string Period { get; set; }

        /// <summary><c>rank</c>, required.</summary>
        public long Rank { get; set; }

        /// <summary><c>score</c>, required.</summary>
        public long Score { get; set; }

        /// <summary><c>achieved_at</c>, required.</summary>
        public string AchievedAt { get; set; }

        /// <summary><c>total</c>, required.</summary>
        public long Total { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static BoardStanding FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new BoardStanding { Raw = o };
            it.BoardId = global::Rankd.Json.AsString(o["board_id"]);
            it.Window = global::Rankd.Json.AsString(o["window"]);
            it.Period = global::Rankd.Json.AsString(o["period"]);
            it.Rank = global::Rankd.Json.AsLong(o["rank"]);
            it.Score = global::Rankd.Json.AsLong(o["score"]);
            it.AchievedAt = global::Rankd.Json.AsString(o["achieved_at"]);
            it.Total = global::Rankd.Json.AsLong(o["total"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (BoardId != null) o["board_id"] = BoardId;
            if (Window != null) o["window"] = Window;
            if (Period != null) o["period"] = Period;
            o["rank"] = Rank;
            o["score"] = Score;
            if (AchievedAt != null) o["achieved_at"] = AchievedAt;
            o["total"] = Total;
            return o;
        }
    }

    /// <summary>Boards (components.schemas).</summary>
    public sealed partial class BoardsResult : IJsonWritable
    {
        /// <summary><c>boards</c>, required.</summary>
        public List<Board> Boards { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static BoardsResult FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new BoardsResult { Raw = o };
            it.Boards = global::Rankd.Json.AsList(o["boards"], x => Board.FromJson(x));
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (Boards != null) o["boards"] = Boards;
            return o;
        }
    }

    /// <summary>Cohort (components.schemas).</summary>
    public sealed partial class CohortResult : IJsonWritable
    {
        /// <summary><c>board_id</c>, required.</summary>
        public string BoardId { get; set; }

        /// <summary><c>window</c>, required.</summary>
        public string Window { get; set; }

        /// <summary><c>period</c>, required.</summary>
        public string Period { get; set; }

        /// <summary><c>tier</c>, required.</summary>
        public string Tier { get; set; }

        /// <summary><c>cohort</c>, required.</summary>
        public string Cohort { get; set; }

        /// <summary><c>ends_at</c>, required.</summary>
        public string EndsAt { get; set; }

        /// <summary><c>entries</c>, required.</summary>
        public List<LeagueEntry> Entries { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static CohortResult FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new CohortResult { Raw = o };
            it.BoardId = global::Rankd.Json.AsString(o["board_id"]);
            it.Window = global::Rankd.Json.AsString(o["window"]);
            it.Period = global::Rankd.Json.AsString(o["period"]);
            it.Tier = global::Rankd.Json.AsString(o["tier"]);
            it.Cohort = global::Rankd.Json.AsString(o["cohort"]);
            it.EndsAt = global::Rankd.Json.AsString(o["ends_at"]);
            it.Entries = global::Rankd.Json.AsList(o["entries"], x => LeagueEntry.FromJson(x));
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (BoardId != null) o["board_id"] = BoardId;
            if (Window != null) o["window"] = Window;
            if (Period != null) o["period"] = Period;
            if (Tier != null) o["tier"] = Tier;
            if (Cohort != null) o["cohort"] = Cohort;
            if (EndsAt != null) o["ends_at"] = EndsAt;
            if (Entries != null) o["entries"] = Entries;
            return o;
        }
    }

    /// <summary>ConsumerLag (components.schemas).</summary>
    public sealed partial class ConsumerLag : IJsonWritable
    {
        /// <summary><c>pending</c>, required.</summary>
        public long Pending { get; set; }

        /// <summary><c>ack_pending</c>, required.</summary>
        public long AckPending { get; set; }

        /// <summary><c>oldest_unacked_seconds</c>, required.</summary>
        public double OldestUnackedSeconds { get; set; }

        /// <summary><c>parked</c>, required.</summary>
        public long Parked { get; set; }

        /// <summary><c>parked_since</c>, required.</summary>
        public string ParkedSince { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static ConsumerLag FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new ConsumerLag { Raw = o };
            it.Pending = global::Rankd.Json.AsLong(o["pending"]);
            it.AckPending = global::Rankd.Json.AsLong(o["ack_pending"]);
            it.OldestUnackedSeconds = global::Rankd.Json.AsDouble(o["oldest_unacked_seconds"]);
            it.Parked = global::Rankd.Json.AsLong(o["parked"]);
            it.ParkedSince = global::Rankd.Json.AsString(o["parked_since"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            o["pending"] = Pending;
            o["ack_pending"] = AckPending;
            o["oldest_unacked_seconds"] = OldestUnackedSeconds;
            o["parked"] = Parked;
            if (ParkedSince != null) o["parked_since"] = ParkedSince;
            return o;
        }
    }

    /// <summary>Deliveries (components.schemas).</summary>
    public sealed partial class DeliveriesResult : IJsonWritable
    {
        /// <summary><c>board_id</c>, required.</summary>
        public string BoardId { get; set; }

        /// <summary><c>deliveries</c>, required.</summary>
        public List<Delivery> Deliveries { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static DeliveriesResult FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new DeliveriesResult { Raw = o };
            it.BoardId = global::Rankd.Json.AsString(o["board_id"]);
            it.Deliveries = global::Rankd.Json.AsList(o["deliveries"], x => Delivery.FromJson(x));
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (BoardId != null) o["board_id"] = BoardId;
            if (Deliveries != null) o["deliveries"] = Deliveries;
            return o;
        }
    }

    /// <summary>Delivery (components.schemas).</summary>
    public sealed partial class Delivery : IJsonWritable
    {
        /// <summary><c>delivery_id</c>, required.</summary>
        public string DeliveryId { get; set; }

        /// <summary><c>event</c>, required: always "period_closed".</summary>
        public string Event { get; set; }

        /// <summary><c>url</c>, required.</summary>
        public string Url { get; set; }

        /// <summary><c>status</c>, required: one of "pending", "delivered", "failed".</summary>
        public string Status { get; set; }

        /// <summary><c>attempts</c>, required.</summary>
        public long Attempts { get; set; }

        /// <summary><c>created_at</c>, required.</summary>
        public string CreatedAt { get; set; }

        /// <summary><c>next_attempt_at</c>, required.</summary>
        public string NextAttemptAt { get; set; }

        /// <summary><c>last_status</c>, required.</summary>
        public long? LastStatus { get; set; }

        /// <summary><c>last_error</c>, required.</summary>
        public string LastError { get; set; }

        /// <summary><c>done_at</c>, required.</summary>
        public string DoneAt { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static Delivery FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new Delivery { Raw = o };
            it.DeliveryId = global::Rankd.Json.AsString(o["delivery_id"]);
            it.Event = global::Rankd.Json.AsString(o["event"]);
            it.Url = global::Rankd.Json.AsString(o["url"]);
            it.Status = global::Rankd.Json.AsString(o["status"]);
            it.Attempts = global::Rankd.Json.AsLong(o["attempts"]);
            it.CreatedAt = global::Rankd.Json.AsString(o["created_at"]);
            it.NextAttemptAt = global::Rankd.Json.AsString(o["next_attempt_at"]);
            it.LastStatus = global::Rankd.Json.AsLongOrNull(o["last_status"]);
            it.LastError = global::Rankd.Json.AsString(o["last_error"]);
            it.DoneAt = global::Rankd.Json.AsString(o["done_at"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (DeliveryId != null) o["delivery_id"] = DeliveryId;
            if (Event != null) o["event"] = Event;
            if (Url != null) o["url"] = Url;
            if (Status != null) o["status"] = Status;
            o["attempts"] = Attempts;
            if (CreatedAt != null) o["created_at"] = CreatedAt;
            if (NextAttemptAt != null) o["next_attempt_at"] = NextAttemptAt;
            if (LastStatus != null) o["last_status"] = LastStatus;
            if (LastError != null) o["last_error"] = LastError;
            if (DoneAt != null) o["done_at"] = DoneAt;
            return o;
        }
    }

    /// <summary>Entry (components.schemas).</summary>
    public sealed partial class Entry : IJsonWritable
    {
        /// <summary><c>rank</c>, required.</summary>
        public long Rank { get; set; }

        /// <summary><c>player_id</c>, required.</summary>
        public string PlayerId { get; set; }

        /// <summary><c>score</c>, required.</summary>
        public long Score { get; set; }

        /// <summary><c>achieved_at</c>, required.</summary>
        public string AchievedAt { get; set; }

        /// <summary><c>name</c>, required.</summary>
        public string Name { get; set; }

        /// <summary><c>metadata</c>, optional.</summary>
        public JsonObject Metadata { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static Entry FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new Entry { Raw = o };
            it.Rank = global::Rankd.Json.AsLong(o["rank"]);
            it.PlayerId = global::Rankd.Json.AsString(o["player_id"]);
            it.Score = global::Rankd.Json.AsLong(o["score"]);
            it.AchievedAt = global::Rankd.Json.AsString(o["achieved_at"]);
            it.Name = global::Rankd.Json.AsString(o["name"]);
            it.Metadata = global::Rankd.Json.AsObject(o["metadata"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            o["rank"] = Rank;
            if (PlayerId != null) o["player_id"] = PlayerId;
            o["score"] = Score;
            if (AchievedAt != null) o["achieved_at"] = AchievedAt;
            if (Name != null) o["name"] = Name;
            if (Metadata != null) o["metadata"] = Metadata;
            return o;
        }
    }

    /// <summary>EntryRemoved (components.schemas).</summary>
    public sealed partial class EntryRemoved : IJsonWritable
    {
        /// <summary><c>board_id</c>, required.</summary>
        public string BoardId { get; set; }

        /// <summary><c>player_id</c>, required.</summary>
        public string PlayerId { get; set; }

        /// <summary><c>window</c>, required.</summary>
        public string Window { get; set; }

        /// <summary><c>period</c>, required.</summary>
        public string Period { get; set; }

        /// <summary><c>removed</c>, required: always true.</summary>
        public bool Removed { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static EntryRemoved FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new EntryRemoved { Raw = o };
            it.BoardId = global::Rankd.Json.AsString(o["board_id"]);
            it.PlayerId = global::Rankd.Json.AsString(o["player_id"]);
            it.Window = global::Rankd.Json.AsString(o["window"]);
            it.Period = global::Rankd.Json.AsString(o["period"]);
            it.Removed = global::Rankd.Json.AsBool(o["removed"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (BoardId != null) o["board_id"] = BoardId;
            if (PlayerId != null) o["player_id"] = PlayerId;
            if (Window != null) o["window"] = Window;
            if (Period != null) o["period"] = Period;
            o["removed"] = Removed;
            return o;
        }
    }

    /// <summary>ErrorBody (components.schemas).</summary>
    public sealed partial class ErrorBody : IJsonWritable
    {
        /// <summary><c>code</c>, required.</summary>
        public string Code { get; set; }

        /// <summary><c>message</c>, required.</summary>
        public string Message { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static ErrorBody FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new ErrorBody { Raw = o };
            it.Code = global::Rankd.Json.AsString(o["code"]);
            it.Message = global::Rankd.Json.AsString(o["message"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (Code != null) o["code"] = Code;
            if (Message != null) o["message"] = Message;
            return o;
        }
    }

    /// <summary>ErrorResponse (components.schemas).</summary>
    public sealed partial class ErrorResponse : IJsonWritable
    {
        /// <summary><c>error</c>, required.</summary>
        public ErrorBody Error { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static ErrorResponse FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new ErrorResponse { Raw = o };
            it.Error = ErrorBody.FromJson(o["error"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (Error != null) o["error"] = Error;
            return o;
        }
    }

    /// <summary>FriendEntry (components.schemas).</summary>
    public sealed partial class FriendEntry : IJsonWritable
    {
        /// <summary><c>rank</c>, required.</summary>
        public long Rank { get; set; }

        /// <summary><c>player_id</c>, required.</summary>
        public string PlayerId { get; set; }

        /// <summary><c>score</c>, required.</summary>
        public long Score { get; set; }

        /// <summary><c>achieved_at</c>, required.</summary>
        public string AchievedAt { get; set; }

        /// <summary><c>name</c>, required.</summary>
        public string Name { get; set; }

        /// <summary><c>metadata</c>, optional.</summary>
        public JsonObject Metadata { get; set; }

        /// <summary><c>position</c>, required.</summary>
        public long Position { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static FriendEntry FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new FriendEntry { Raw = o };
            it.Rank = global::Rankd.Json.AsLong(o["rank"]);
            it.PlayerId = global::Rankd.Json.AsString(o["player_id"]);
            it.Score = global::Rankd.Json.AsLong(o["score"]);
            it.AchievedAt = global::Rankd.Json.AsString(o["achieved_at"]);
            it.Name = global::Rankd.Json.AsString(o["name"]);
            it.Metadata = global::Rankd.Json.AsObject(o["metadata"]);
            it.Position = global::Rankd.Json.AsLong(o["position"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            o["rank"] = Rank;
            if (PlayerId != null) o["player_id"] = PlayerId;
            o["score"] = Score;
            if (AchievedAt != null) o["achieved_at"] = AchievedAt;
            if (Name != null) o["name"] = Name;
            if (Metadata != null) o["metadata"] = Metadata;
            o["position"] = Position;
            return o;
        }
    }

    /// <summary>Friends (components.schemas).</summary>
    public sealed partial class Friends : IJsonWritable
    {
        /// <summary><c>board_id</c>, required.</summary>
        public string BoardId { get; set; }

        /// <summary><c>window</c>, required.</summary>
        public string Window { get; set; }

        /// <summary><c>period</c>, required.</summary>
        public string Period { get; set; }

        /// <summary><c>entries</c>, required.</summary>
        public List<FriendEntry> Entries { get; set; }

        /// <summary><c>not_found</c>, required.</summary>
        public List<string> NotFound { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static Friends FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new Friends { Raw = o };
            it.BoardId = global::Rankd.Json.AsString(o["board_id"]);
            it.Window = global::Rankd.Json.AsString(o["window"]);
            it.Period = global::Rankd.Json.AsString(o["period"]);
            it.Entries = global::Rankd.Json.AsList(o["entries"], x => FriendEntry.FromJson(x));
            it.NotFound = global::Rankd.Json.AsList(o["not_found"], x => global::Rankd.Json.AsString(x));
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (BoardId != null) o["board_id"] = BoardId;
            if (Window != null) o["window"] = Window;
            if (Period != null) o["period"] = Period;
            if (Entries != null) o["entries"] = Entries;
            if (NotFound != null) o["not_found"] = NotFound;
            return o;
        }
    }

    /// <summary>Health (components.schemas).</summary>
    public sealed partial class Health : IJsonWritable
    {
        /// <summary><c>status</c>, required: always "ok".</summary>
        public string Status { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static Health FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new Health { Raw = o };
            it.Status = global::Rankd.Json.AsString(o["status"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (Status != null) o["status"] = Status;
            return o;
        }
    }

    /// <summary>Hold (components.schemas).</summary>
    public sealed partial class Hold : IJsonWritable
    {
        /// <summary><c>run_id</c>, required.</summary>
        public string RunId { get; set; }

        /// <summary><c>player_id</c>, required.</summary>
        public string PlayerId { get; set; }

        /// <summary><c>score</c>, required.</summary>
        public long Score { get; set; }

        /// <summary><c>window</c>, required.</summary>
        public string Window { get; set; }

        /// <summary><c>period</c>, required.</summary>
        public string Period { get; set; }

        /// <summary><c>ended_at</c>, required.</summary>
        public string EndedAt { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static Hold FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new Hold { Raw = o };
            it.RunId = global::Rankd.Json.AsString(o["run_id"]);
            it.PlayerId = global::Rankd.Json.AsString(o["player_id"]);
            it.Score = global::Rankd.Json.AsLong(o["score"]);
            it.Window = global::Rankd.Json.AsString(o["window"]);
            it.Period = global::Rankd.Json.AsString(o["period"]);
            it.EndedAt = global::Rankd.Json.AsString(o["ended_at"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (RunId != null) o["run_id"] = RunId;
            if (PlayerId != null) o["player_id"] = PlayerId;
            o["score"] = Score;
            if (Window != null) o["window"] = Window;
            if (Period != null) o["period"] = Period;
            if (EndedAt != null) o["ended_at"] = EndedAt;
            return o;
        }
    }

    /// <summary>HoldDecision (components.schemas).</summary>
    public sealed partial class HoldDecision : IJsonWritable
    {
        /// <summary><c>board_id</c>, required.</summary>
        public string BoardId { get; set; }

        /// <summary><c>run_id</c>, required.</summary>
        public string RunId { get; set; }

        /// <summary><c>decision</c>, required: one of "approved", "rejected".</summary>
        public string Decision { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static HoldDecision FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new HoldDecision { Raw = o };
            it.BoardId = global::Rankd.Json.AsString(o["board_id"]);
            it.RunId = global::Rankd.Json.AsString(o["run_id"]);
            it.Decision = global::Rankd.Json.AsString(o["decision"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (BoardId != null) o["board_id"] = BoardId;
            if (RunId != null) o["run_id"] = RunId;
            if (Decision != null) o["decision"] = Decision;
            return o;
        }
    }

    /// <summary>Holds (components.schemas).</summary>
    public sealed partial class HoldsResult : IJsonWritable
    {
        /// <summary><c>board_id</c>, required.</summary>
        public string BoardId { get; set; }

        /// <summary><c>holds</c>, required.</summary>
        public List<Hold> Holds { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static HoldsResult FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new HoldsResult { Raw = o };
            it.BoardId = global::Rankd.Json.AsString(o["board_id"]);
            it.Holds = global::Rankd.Json.AsList(o["holds"], x => Hold.FromJson(x));
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (BoardId != null) o["board_id"] = BoardId;
            if (Holds != null) o["holds"] = Holds;
            return o;
        }
    }

    /// <summary>Joined (components.schemas).</summary>
    public sealed partial class JoinedResult : IJsonWritable
    {
        /// <summary><c>player_id</c>, required.</summary>
        public string PlayerId { get; set; }

        /// <summary><c>period</c>, required.</summary>
        public string Period { get; set; }

        /// <summary><c>joined</c>, required.</summary>
        public bool Joined { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static JoinedResult FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new JoinedResult { Raw = o };
            it.PlayerId = global::Rankd.Json.AsString(o["player_id"]);
            it.Period = global::Rankd.Json.AsString(o["period"]);
            it.Joined = global::Rankd.Json.AsBool(o["joined"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (PlayerId != null) o["player_id"] = PlayerId;
            if (Period != null) o["period"] = Period;
            o["joined"] = Joined;
            return o;
        }
    }

    /// <summary>LeagueEntry (components.schemas).</summary>
    public sealed partial class LeagueEntry : IJsonWritable
    {
        /// <summary><c>rank</c>, required.</summary>
        public long Rank { get; set; }

        /// <summary><c>player_id</c>, required.</summary>
        public string PlayerId { get; set; }

        /// <summary><c>score</c>, required.</summary>
        public long Score { get; set; }

        /// <summary><c>achieved_at</c>, required.</summary>
        public string AchievedAt { get; set; }

        /// <summary><c>name</c>, required.</summary>
        public string Name { get; set; }

        /// <summary><c>metadata</c>, optional.</summary>
        public JsonObject Metadata { get; set; }

        /// <summary><c>zone</c>, required: one of "promote", "stay", "relegate".</summary>
        public string Zone { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static LeagueEntry FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new LeagueEntry { Raw = o };
            it.Rank = global::Rankd.Json.AsLong(o["rank"]);
            it.PlayerId = global::Rankd.Json.AsString(o["player_id"]);
            it.Score = global::Rankd.Json.AsLong(o["score"]);
            it.AchievedAt = global::Rankd.Json.AsString(o["achieved_at"]);
            it.Name = global::Rankd.Json.AsString(o["name"]);
            it.Metadata = global::Rankd.Json.AsObject(o["metadata"]);
            it.Zone = global::Rankd.Json.AsString(o["zone"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            o["rank"] = Rank;
            if (PlayerId != null) o["player_id"] = PlayerId;
            o["score"] = Score;
            if (AchievedAt != null) o["achieved_at"] = AchievedAt;
            if (Name != null) o["name"] = Name;
            if (Metadata != null) o["metadata"] = Metadata;
            if (Zone != null) o["zone"] = Zone;
            return o;
        }
    }

    /// <summary>LeagueHistory (components.schemas).</summary>
    public sealed partial class LeagueHistory : IJsonWritable
    {
        /// <summary><c>board_id</c>, required.</summary>
        public string BoardId { get; set; }

        /// <summary><c>player_id</c>, required.</summary>
        public string PlayerId { get; set; }

        /// <summary><c>tier</c>, required.</summary>
        public string Tier { get; set; }

        /// <summary><c>history</c>, required.</summary>
        public List<LeaguePeriod> History { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static LeagueHistory FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new LeagueHistory { Raw = o };
            it.BoardId = global::Rankd.Json.AsString(o["board_id"]);
            it.PlayerId = global::Rankd.Json.AsString(o["player_id"]);
            it.Tier = global::Rankd.Json.AsString(o["tier"]);
            it.History = global::Rankd.Json.AsList(o["history"], x => LeaguePeriod.FromJson(x));
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (BoardId != null) o["board_id"] = BoardId;
            if (PlayerId != null) o["player_id"] = PlayerId;
            if (Tier != null) o["tier"] = Tier;
            if (History != null) o["history"] = History;
            return o;
        }
    }

    /// <summary>LeaguePeriod (components.schemas).</summary>
    public sealed partial class LeaguePeriod : IJsonWritable
    {
        /// <summary><c>period</c>, required.</summary>
        public string Period { get; set; }

        /// <summary><c>tier</c>, required.</summary>
        public string Tier { get; set; }

        /// <summary><c>cohort</c>, required.</summary>
        public string Cohort { get; set; }

        /// <summary><c>rank</c>, required.</summary>
        public long? Rank { get; set; }

        /// <summary><c>moved</c>, required: one of "up", "down", "stay".</summary>
        public string Moved { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static LeaguePeriod FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new LeaguePeriod { Raw = o };
            it.Period = global::Rankd.Json.AsString(o["period"]);
            it.Tier = global::Rankd.Json.AsString(o["tier"]);
            it.Cohort = global::Rankd.Json.AsString(o["cohort"]);
            it.Rank = global::Rankd.Json.AsLongOrNull(o["rank"]);
            it.Moved = global::Rankd.Json.AsString(o["moved"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (Period != null) o["period"] = Period;
            if (Tier != null) o["tier"] = Tier;
            if (Cohort != null) o["cohort"] = Cohort;
            if (Rank != null) o["rank"] = Rank;
            if (Moved != null) o["moved"] = Moved;
            return o;
        }
    }

    /// <summary>LeagueSettings (components.schemas).</summary>
    public sealed partial class LeagueSettings : IJsonWritable
    {
        /// <summary><c>window</c>, required: one of "hourly", "daily", "weekly", "monthly".</summary>
        public string Window { get; set; }

        /// <summary><c>tiers</c>, required.</summary>
        public List<string> Tiers { get; set; }

        /// <summary><c>cohort_size</c>, optional.</summary>
        public long? CohortSize { get; set; }

        /// <summary><c>promote</c>, optional.</summary>
        public long? Promote { get; set; }

        /// <summary><c>relegate</c>, optional.</summary>
        public long? Relegate { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static LeagueSettings FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new LeagueSettings { Raw = o };
            it.Window = global::Rankd.Json.AsString(o["window"]);
            it.Tiers = global::Rankd.Json.AsList(o["tiers"], x => global::Rankd.Json.AsString(x));
            it.CohortSize = global::Rankd.Json.AsLongOrNull(o["cohort_size"]);
            it.Promote = global::Rankd.Json.AsLongOrNull(o["promote"]);
            it.Relegate = global::Rankd.Json.AsLongOrNull(o["relegate"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (Window != null) o["window"] = Window;
            if (Tiers != null) o["tiers"] = Tiers;
            if (CohortSize != null) o["cohort_size"] = CohortSize;
            if (Promote != null) o["promote"] = Promote;
            if (Relegate != null) o["relegate"] = Relegate;
            return o;
        }
    }

    /// <summary>Occurrence (components.schemas).</summary>
    public sealed partial class Occurrence : IJsonWritable
    {
        /// <summary><c>period</c>, required.</summary>
        public string Period { get; set; }

        /// <summary><c>starts_at</c>, required.</summary>
        public string StartsAt { get; set; }

        /// <summary><c>ends_at</c>, required.</summary>
        public string EndsAt { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static Occurrence FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new Occurrence { Raw = o };
            it.Period = global::Rankd.Json.AsString(o["period"]);
            it.StartsAt = global::Rankd.Json.AsString(o["starts_at"]);
            it.EndsAt = global::Rankd.Json.AsString(o["ends_at"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (Period != null) o["period"] = Period;
            if (StartsAt != null) o["starts_at"] = StartsAt;
            if (EndsAt != null) o["ends_at"] = EndsAt;
            return o;
        }
    }

    /// <summary>Page (components.schemas).</summary>
    public sealed partial class Page : IJsonWritable
    {
        /// <summary><c>board_id</c>, required.</summary>
        public string BoardId { get; set; }

        /// <summary><c>window</c>, required.</summary>
        public string Window { get; set; }

        /// <summary><c>period</c>, required.</summary>
        public string Period { get; set; }

        /// <summary><c>total</c>, required.</summary>
        public long Total { get; set; }

        /// <summary><c>entries</c>, required.</summary>
        public List<Entry> Entries { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static Page FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new Page { Raw = o };
            it.BoardId = global::Rankd.Json.AsString(o["board_id"]);
            it.Window = global::Rankd.Json.AsString(o["window"]);
            it.Period = global::Rankd.Json.AsString(o["period"]);
            it.Total = global::Rankd.Json.AsLong(o["total"]);
            it.Entries = global::Rankd.Json.AsList(o["entries"], x => Entry.FromJson(x));
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (BoardId != null) o["board_id"] = BoardId;
            if (Window != null) o["window"] = Window;
            if (Period != null) o["period"] = Period;
            o["total"] = Total;
            if (Entries != null) o["entries"] = Entries;
            return o;
        }
    }

    /// <summary>PeriodClosed (components.schemas).</summary>
    public sealed partial class PeriodClosed : IJsonWritable
    {
        /// <summary><c>board_id</c>, required.</summary>
        public string BoardId { get; set; }

        /// <summary><c>window</c>, required.</summary>
        public string Window { get; set; }

        /// <summary><c>period</c>, required.</summary>
        public string Period { get; set; }

        /// <summary><c>status</c>, required: always "closed".</summary>
        public string Status { get; set; }

        /// <summary><c>closed_at</c>, required.</summary>
        public string ClosedAt { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static PeriodClosed FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new PeriodClosed { Raw = o };
            it.BoardId = global::Rankd.Json.AsString(o["board_id"]);
            it.Window = global::Rankd.Json.AsString(o["window"]);
            it.Period = global::Rankd.Json.AsString(o["period"]);
            it.Status = global::Rankd.Json.AsString(o["status"]);
            it.ClosedAt = global::Rankd.Json.AsString(o["closed_at"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (BoardId != null) o["board_id"] = BoardId;
            if (Window != null) o["window"] = Window;
            if (Period != null) o["period"] = Period;
            if (Status != null) o["status"] = Status;
            if (ClosedAt != null) o["closed_at"] = ClosedAt;
            return o;
        }
    }

    /// <summary>PeriodInfo (components.schemas).</summary>
    public sealed partial class PeriodInfo : IJsonWritable
    {
        /// <summary><c>period</c>, required.</summary>
        public string Period { get; set; }

        /// <summary><c>status</c>, required: one of "open", "closed", "archived", "upcoming".</summary>
        public string Status { get; set; }

        /// <summary><c>starts_at</c>, required.</summary>
        public string StartsAt { get; set; }

        /// <summary><c>ends_at</c>, required.</summary>
        public string EndsAt { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static PeriodInfo FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new PeriodInfo { Raw = o };
            it.Period = global::Rankd.Json.AsString(o["period"]);
            it.Status = global::Rankd.Json.AsString(o["status"]);
            it.StartsAt = global::Rankd.Json.AsString(o["starts_at"]);
            it.EndsAt = global::Rankd.Json.AsString(o["ends_at"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (Period != null) o["period"] = Period;
            if (Status != null) o["status"] = Status;
            if (StartsAt != null) o["starts_at"] = StartsAt;
            if (EndsAt != null) o["ends_at"] = EndsAt;
            return o;
        }
    }

    /// <summary>Periods (components.schemas).</summary>
    public sealed partial class PeriodsResult : IJsonWritable
    {
        /// <summary><c>board_id</c>, required.</summary>
        public string BoardId { get; set; }

        /// <summary><c>window</c>, required.</summary>
        public string Window { get; set; }

        /// <summary><c>periods</c>, required.</summary>
        public List<PeriodInfo> Periods { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static PeriodsResult FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new PeriodsResult { Raw = o };
            it.BoardId = global::Rankd.Json.AsString(o["board_id"]);
            it.Window = global::Rankd.Json.AsString(o["window"]);
            it.Periods = global::Rankd.Json.AsList(o["periods"], x => PeriodInfo.FromJson(x));
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (BoardId != null) o["board_id"] = BoardId;
            if (Window != null) o["window"] = Window;
            if (Periods != null) o["periods"] = Periods;
            return o;
        }
    }

    /// <summary>PlayerErased (components.schemas).</summary>
    public sealed partial class PlayerErased : IJsonWritable
    {
        /// <summary><c>player_id</c>, required.</summary>
        public string PlayerId { get; set; }

        /// <summary><c>erased</c>, required: always true.</summary>
        public bool Erased { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static PlayerErased FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new PlayerErased { Raw = o };
            it.PlayerId = global::Rankd.Json.AsString(o["player_id"]);
            it.Erased = global::Rankd.Json.AsBool(o["erased"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (PlayerId != null) o["player_id"] = PlayerId;
            o["erased"] = Erased;
            return o;
        }
    }

    /// <summary>PlayerRank (components.schemas).</summary>
    public sealed partial class PlayerRank : IJsonWritable
    {
        /// <summary><c>rank</c>, required.</summary>
        public long Rank { get; set; }

        /// <summary><c>player_id</c>, required.</summary>
        public string PlayerId { get; set; }

        /// <summary><c>score</c>, required.</summary>
        public long Score { get; set; }

        /// <summary><c>achieved_at</c>, required.</summary>
        public string AchievedAt { get; set; }

        /// <summary><c>name</c>, required.</summary>
        public string Name { get; set; }

        /// <summary><c>metadata</c>, optional.</summary>
        public JsonObject Metadata { get; set; }

        /// <summary><c>board_id</c>, required.</summary>
        public string BoardId { get; set; }

        /// <summary><c>window</c>, required.</summary>
        public string Window { get; set; }

        /// <summary><c>period</c>, required.</summary>
        public string Period { get; set; }

        /// <summary><c>total</c>, required.</summary>
        public long Total { get; set; }

        /// <summary><c>percentile</c>, required.</summary>
        public double Percentile { get; set; }

        /// <summary><c>approximate</c>, optional.</summary>
        public bool? Approximate { get; set; }

        /// <summary><c>error_bound</c>, optional.</summary>
        public long? ErrorBound { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static PlayerRank FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new PlayerRank { Raw = o };
            it.Rank = global::Rankd.Json.AsLong(o["rank"]);
            it.PlayerId = global::Rankd.Json.AsString(o["player_id"]);
            it.Score = global::Rankd.Json.AsLong(o["score"]);
            it.AchievedAt = global::Rankd.Json.AsString(o["achieved_at"]);
            it.Name = global::Rankd.Json.AsString(o["name"]);
            it.Metadata = global::Rankd.Json.AsObject(o["metadata"]);
            it.BoardId = global::Rankd.Json.AsString(o["board_id"]);
            it.Window = global::Rankd.Json.AsString(o["window"]);
            it.Period = global::Rankd.Json.AsString(o["period"]);
            it.Total = global::Rankd.Json.AsLong(o["total"]);
            it.Percentile = global::Rankd.Json.AsDouble(o["percentile"]);
            it.Approximate = global::Rankd.Json.AsBoolOrNull(o["approximate"]);
            it.ErrorBound = global::Rankd.Json.AsLongOrNull(o["error_bound"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            o["rank"] = Rank;
            if (PlayerId != null) o["player_id"] = PlayerId;
            o["score"] = Score;
            if (AchievedAt != null) o["achieved_at"] = AchievedAt;
            if (Name != null) o["name"] = Name;
            if (Metadata != null) o["metadata"] = Metadata;
            if (BoardId != null) o["board_id"] = BoardId;
            if (Window != null) o["window"] = Window;
            if (Period != null) o["period"] = Period;
            o["total"] = Total;
            o["percentile"] = Percentile;
            if (Approximate != null) o["approximate"] = Approximate;
            if (ErrorBound != null) o["error_bound"] = ErrorBound;
            return o;
        }
    }

    /// <summary>PlayerStandings (components.schemas).</summary>
    public sealed partial class PlayerStandings : IJsonWritable
    {
        /// <summary><c>player_id</c>, required.</summary>
        public string PlayerId { get; set; }

        /// <summary><c>standings</c>, required.</summary>
        public List<BoardStanding> Standings { get; set; }

        /// <summary><c>unknown_boards</c>, required.</summary>
        public List<string> UnknownBoards { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static PlayerStandings FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new PlayerStandings { Raw = o };
            it.PlayerId = global::Rankd.Json.AsString(o["player_id"]);
            it.Standings = global::Rankd.Json.AsList(o["standings"], x => BoardStanding.FromJson(x));
            it.UnknownBoards = global::Rankd.Json.AsList(o["unknown_boards"], x => global::Rankd.Json.AsString(x));
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (PlayerId != null) o["player_id"] = PlayerId;
            if (Standings != null) o["standings"] = Standings;
            if (UnknownBoards != null) o["unknown_boards"] = UnknownBoards;
            return o;
        }
    }

    /// <summary>PlayerTokenIssued (components.schemas).</summary>
    public sealed partial class PlayerTokenIssued : IJsonWritable
    {
        /// <summary><c>token</c>, required.</summary>
        public string Token { get; set; }

        /// <summary><c>expires_at</c>, required.</summary>
        public string ExpiresAt { get; set; }

        /// <summary><c>scope</c>, required.</summary>
        public List<string> Scope { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static PlayerTokenIssued FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new PlayerTokenIssued { Raw = o };
            it.Token = global::Rankd.Json.AsString(o["token"]);
            it.ExpiresAt = global::Rankd.Json.AsString(o["expires_at"]);
            it.Scope = global::Rankd.Json.AsList(o["scope"], x => global::Rankd.Json.AsString(x));
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (Token != null) o["token"] = Token;
            if (ExpiresAt != null) o["expires_at"] = ExpiresAt;
            if (Scope != null) o["scope"] = Scope;
            return o;
        }
    }

    /// <summary>Profile (components.schemas).</summary>
    public sealed partial class Profile : IJsonWritable
    {
        /// <summary><c>player_id</c>, required.</summary>
        public string PlayerId { get; set; }

        /// <summary><c>name</c>, required.</summary>
        public string Name { get; set; }

        /// <summary><c>segments</c>, required.</summary>
        public Dictionary<string, string> Segments { get; set; }

        /// <summary><c>banned</c>, optional.</summary>
        public bool? Banned { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static Profile FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new Profile { Raw = o };
            it.PlayerId = global::Rankd.Json.AsString(o["player_id"]);
            it.Name = global::Rankd.Json.AsString(o["name"]);
            it.Segments = global::Rankd.Json.AsMap(o["segments"], x => global::Rankd.Json.AsString(x));
            it.Banned = global::Rankd.Json.AsBoolOrNull(o["banned"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (PlayerId != null) o["player_id"] = PlayerId;
            if (Name != null) o["name"] = Name;
            if (Segments != null) o["segments"] = Segments;
            if (Banned != null) o["banned"] = Banned;
            return o;
        }
    }

    /// <summary>ProfileUpdate (a request body).</summary>
    public sealed partial class ProfileUpdate : IJsonWritable
    {
        /// <summary><c>name</c>, optional.</summary>
        public string Name { get; set; }

        /// <summary><c>segments</c>, optional.</summary>
        public Dictionary<string, string> Segments { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static ProfileUpdate FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new ProfileUpdate { Raw = o };
            it.Name = global::Rankd.Json.AsString(o["name"]);
            it.Segments = global::Rankd.Json.AsMap(o["segments"], x => global::Rankd.Json.AsString(x));
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (Name != null) o["name"] = Name;
            if (Segments != null) o["segments"] = Segments;
            return o;
        }
    }

    /// <summary>RankOf (components.schemas).</summary>
    public sealed partial class RankOf : IJsonWritable
    {
        /// <summary><c>board_id</c>, required.</summary>
        public string BoardId { get; set; }

        /// <summary><c>window</c>, required.</summary>
        public string Window { get; set; }

        /// <summary><c>period</c>, required.</summary>
        public string Period { get; set; }

        /// <summary><c>score</c>, required.</summary>
        public long Score { get; set; }

        /// <summary><c>rank</c>, required.</summary>
        public long Rank { get; set; }

        /// <summary><c>total</c>, required.</summary>
        public long Total { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static RankOf FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new RankOf { Raw = o };
            it.BoardId = global::Rankd.Json.AsString(o["board_id"]);
            it.Window = global::Rankd.Json.AsString(o["window"]);
            it.Period = global::Rankd.Json.AsString(o["period"]);
            it.Score = global::Rankd.Json.AsLong(o["score"]);
            it.Rank = global::Rankd.Json.AsLong(o["rank"]);
            it.Total = global::Rankd.Json.AsLong(o["total"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (BoardId != null) o["board_id"] = BoardId;
            if (Window != null) o["window"] = Window;
            if (Period != null) o["period"] = Period;
            o["score"] = Score;
            o["rank"] = Rank;
            o["total"] = Total;
            return o;
        }
    }

    /// <summary>Ready (components.schemas).</summary>
    public sealed partial class Ready : IJsonWritable
    {
        /// <summary><c>status</c>, required: one of "ready", "degraded", "unavailable".</summary>
        public string Status { get; set; }

        /// <summary><c>checks</c>, required.</summary>
        public Dictionary<string, string> Checks { get; set; }

        /// <summary><c>consumer</c>, required.</summary>
        public ConsumerLag Consumer { get; set; }

        /// <summary><c>reasons</c>, optional.</summary>
        public List<string> Reasons { get; set; }

        /// <summary><c>recovering</c>, optional.</summary>
        public Dictionary<string, string> Recovering { get; set; }

        /// <summary><c>error</c>, optional.</summary>
        public ErrorBody Error { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static Ready FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new Ready { Raw = o };
            it.Status = global::Rankd.Json.AsString(o["status"]);
            it.Checks = global::Rankd.Json.AsMap(o["checks"], x => global::Rankd.Json.AsString(x));
            it.Consumer = ConsumerLag.FromJson(o["consumer"]);
            it.Reasons = global::Rankd.Json.AsList(o["reasons"], x => global::Rankd.Json.AsString(x));
            it.Recovering = global::Rankd.Json.AsMap(o["recovering"], x => global::Rankd.Json.AsString(x));
            it.Error = ErrorBody.FromJson(o["error"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (Status != null) o["status"] = Status;
            if (Checks != null) o["checks"] = Checks;
            if (Consumer != null) o["consumer"] = Consumer;
            if (Reasons != null) o["reasons"] = Reasons;
            if (Recovering != null) o["recovering"] = Recovering;
            if (Error != null) o["error"] = Error;
            return o;
        }
    }

    /// <summary>Run (a request body).</summary>
    public sealed partial class Run : IJsonWritable
    {
        /// <summary><c>run_id</c>, required.</summary>
        public string RunId { get; set; }

        /// <summary><c>player_id</c>, required.</summary>
        public string PlayerId { get; set; }

        /// <summary><c>score</c>, required.</summary>
        public long Score { get; set; }

        /// <summary><c>ended_at</c>, optional.</summary>
        public string EndedAt { get; set; }

        /// <summary><c>segments</c>, optional.</summary>
        public Dictionary<string, string> Segments { get; set; }

        /// <summary><c>metadata</c>, optional.</summary>
        public JsonObject Metadata { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static Run FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new Run { Raw = o };
            it.RunId = global::Rankd.Json.AsString(o["run_id"]);
            it.PlayerId = global::Rankd.Json.AsString(o["player_id"]);
            it.Score = global::Rankd.Json.AsLong(o["score"]);
            it.EndedAt = global::Rankd.Json.AsString(o["ended_at"]);
            it.Segments = global::Rankd.Json.AsMap(o["segments"], x => global::Rankd.Json.AsString(x));
            it.Metadata = global::Rankd.Json.AsObject(o["metadata"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (RunId != null) o["run_id"] = RunId;
            if (PlayerId != null) o["player_id"] = PlayerId;
            o["score"] = Score;
            if (EndedAt != null) o["ended_at"] = EndedAt;
            if (Segments != null) o["segments"] = Segments;
            if (Metadata != null) o["metadata"] = Metadata;
            return o;
        }
    }

    /// <summary>SegmentValue (components.schemas).</summary>
    public sealed partial class SegmentValue : IJsonWritable
    {
        /// <summary><c>value</c>, required.</summary>
        public string Value { get; set; }

        /// <summary><c>total</c>, required.</summary>
        public long Total { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static SegmentValue FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new SegmentValue { Raw = o };
            it.Value = global::Rankd.Json.AsString(o["value"]);
            it.Total = global::Rankd.Json.AsLong(o["total"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (Value != null) o["value"] = Value;
            o["total"] = Total;
            return o;
        }
    }

    /// <summary>SegmentValues (components.schemas).</summary>
    public sealed partial class SegmentValues : IJsonWritable
    {
        /// <summary><c>dimension</c>, required.</summary>
        public string Dimension { get; set; }

        /// <summary><c>values</c>, required.</summary>
        public List<SegmentValue> Values { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static SegmentValues FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new SegmentValues { Raw = o };
            it.Dimension = global::Rankd.Json.AsString(o["dimension"]);
            it.Values = global::Rankd.Json.AsList(o["values"], x => SegmentValue.FromJson(x));
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (Dimension != null) o["dimension"] = Dimension;
            if (Values != null) o["values"] = Values;
            return o;
        }
    }

    /// <summary>Segments (components.schemas).</summary>
    public sealed partial class SegmentsResult : IJsonWritable
    {
        /// <summary><c>board_id</c>, required.</summary>
        public string BoardId { get; set; }

        /// <summary><c>window</c>, required.</summary>
        public string Window { get; set; }

        /// <summary><c>period</c>, required.</summary>
        public string Period { get; set; }

        /// <summary><c>segments</c>, required.</summary>
        public List<SegmentValues> Segments { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static SegmentsResult FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new SegmentsResult { Raw = o };
            it.BoardId = global::Rankd.Json.AsString(o["board_id"]);
            it.Window = global::Rankd.Json.AsString(o["window"]);
            it.Period = global::Rankd.Json.AsString(o["period"]);
            it.Segments = global::Rankd.Json.AsList(o["segments"], x => SegmentValues.FromJson(x));
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (BoardId != null) o["board_id"] = BoardId;
            if (Window != null) o["window"] = Window;
            if (Period != null) o["period"] = Period;
            if (Segments != null) o["segments"] = Segments;
            return o;
        }
    }

    /// <summary>Standing (components.schemas).</summary>
    public sealed partial class Standing : IJsonWritable
    {
        /// <summary><c>window</c>, required.</summary>
        public string Window { get; set; }

        /// <summary><c>period</c>, required.</summary>
        public string Period { get; set; }

        /// <summary><c>segment</c>, required.</summary>
        public string Segment { get; set; }

        /// <summary><c>status</c>, required: one of "ranked", "held", "closed", "not_open", "not_joined", "full", "attempts_exhausted".</summary>
        public string Status { get; set; }

        /// <summary><c>rank</c>, optional.</summary>
        public long? Rank { get; set; }

        /// <summary><c>previous_rank</c>, optional.</summary>
        public long? PreviousRank { get; set; }

        /// <summary><c>score</c>, optional.</summary>
        public long? Score { get; set; }

        /// <summary><c>achieved_at</c>, optional.</summary>
        public string AchievedAt { get; set; }

        /// <summary><c>improved</c>, required.</summary>
        public bool Improved { get; set; }

        /// <summary><c>is_best</c>, required.</summary>
        public bool IsBest { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static Standing FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new Standing { Raw = o };
            it.Window = global::Rankd.Json.AsString(o["window"]);
            it.Period = global::Rankd.Json.AsString(o["period"]);
            it.Segment = global::Rankd.Json.AsString(o["segment"]);
            it.Status = global::Rankd.Json.AsString(o["status"]);
            it.Rank = global::Rankd.Json.AsLongOrNull(o["rank"]);
            it.PreviousRank = global::Rankd.Json.AsLongOrNull(o["previous_rank"]);
            it.Score = global::Rankd.Json.AsLongOrNull(o["score"]);
            it.AchievedAt = global::Rankd.Json.AsString(o["achieved_at"]);
            it.Improved = global::Rankd.Json.AsBool(o["improved"]);
            it.IsBest = global::Rankd.Json.AsBool(o["is_best"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (Window != null) o["window"] = Window;
            if (Period != null) o["period"] = Period;
            if (Segment != null) o["segment"] = Segment;
            if (Status != null) o["status"] = Status;
            if (Rank != null) o["rank"] = Rank;
            if (PreviousRank != null) o["previous_rank"] = PreviousRank;
            if (Score != null) o["score"] = Score;
            if (AchievedAt != null) o["achieved_at"] = AchievedAt;
            o["improved"] = Improved;
            o["is_best"] = IsBest;
            return o;
        }
    }

    /// <summary>SubmitResult (components.schemas).</summary>
    public sealed partial class SubmitResult : IJsonWritable
    {
        /// <summary><c>run_id</c>, required.</summary>
        public string RunId { get; set; }

        /// <summary><c>player_id</c>, required.</summary>
        public string PlayerId { get; set; }

        /// <summary><c>score</c>, required.</summary>
        public long Score { get; set; }

        /// <summary><c>standings</c>, required.</summary>
        public List<Standing> Standings { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static SubmitResult FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new SubmitResult { Raw = o };
            it.RunId = global::Rankd.Json.AsString(o["run_id"]);
            it.PlayerId = global::Rankd.Json.AsString(o["player_id"]);
            it.Score = global::Rankd.Json.AsLong(o["score"]);
            it.Standings = global::Rankd.Json.AsList(o["standings"], x => Standing.FromJson(x));
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (RunId != null) o["run_id"] = RunId;
            if (PlayerId != null) o["player_id"] = PlayerId;
            o["score"] = Score;
            if (Standings != null) o["standings"] = Standings;
            return o;
        }
    }

    /// <summary>TokenRequest (a request body).</summary>
    public sealed partial class TokenRequest : IJsonWritable
    {
        /// <summary><c>ttl_s</c>, optional.</summary>
        public long? TtlS { get; set; }

        /// <summary><c>scope</c>, optional: each one of "read", "submit", "join".</summary>
        public List<string> Scope { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static TokenRequest FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new TokenRequest { Raw = o };
            it.TtlS = global::Rankd.Json.AsLongOrNull(o["ttl_s"]);
            it.Scope = global::Rankd.Json.AsList(o["scope"], x => global::Rankd.Json.AsString(x));
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (TtlS != null) o["ttl_s"] = TtlS;
            if (Scope != null) o["scope"] = Scope;
            return o;
        }
    }

    /// <summary>TopPage (components.schemas).</summary>
    public sealed partial class TopPage : IJsonWritable
    {
        /// <summary><c>board_id</c>, required.</summary>
        public string BoardId { get; set; }

        /// <summary><c>window</c>, required.</summary>
        public string Window { get; set; }

        /// <summary><c>period</c>, required.</summary>
        public string Period { get; set; }

        /// <summary><c>total</c>, required.</summary>
        public long Total { get; set; }

        /// <summary><c>entries</c>, required.</summary>
        public List<Entry> Entries { get; set; }

        /// <summary><c>next_cursor</c>, required.</summary>
        public string NextCursor { get; set; }

        /// <summary>The object as it came (members this version does not know included);
        /// null when built here.</summary>
        public JsonObject Raw { get; private set; }

        public static TopPage FromJson(object value)
        {
            var o = value as JsonObject;
            if (o == null) return null;
            var it = new TopPage { Raw = o };
            it.BoardId = global::Rankd.Json.AsString(o["board_id"]);
            it.Window = global::Rankd.Json.AsString(o["window"]);
            it.Period = global::Rankd.Json.AsString(o["period"]);
            it.Total = global::Rankd.Json.AsLong(o["total"]);
            it.Entries = global::Rankd.Json.AsList(o["entries"], x => Entry.FromJson(x));
            it.NextCursor = global::Rankd.Json.AsString(o["next_cursor"]);
            return it;
        }

        /// <summary>The members that are set (null ones left out).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            if (BoardId != null) o["board_id"] = BoardId;
            if (Window != null) o["window"] = Window;
            if (Period != null) o["period"] = Period;
            o["total"] = Total;
            if (Entries != null) o["entries"] = Entries;
            if (NextCursor != null) o["next_cursor"] = NextCursor;
            return o;
        }
    }

    /// <summary>Each operation (by operationId): its method and path, and in a comment its
    /// JSON body and 2xx answer.</summary>
    public static class Operations
    {
        // no body -> HoldDecision
        public static readonly Operation Approve = new Operation("approve", "POST", "/v1/boards/{board_id}/holds/{run_id}/approve");
        // no body -> Page
        public static readonly Operation Around = new Operation("around", "GET", "/v1/boards/{board_id}/players/{player_id}/around");
        // BanRequest -> Ban
        public static readonly Operation Ban = new Operation("ban", "POST", "/v1/players/{player_id}/ban");
        // no body -> BansResult
        public static readonly Operation Bans = new Operation("bans", "GET", "/v1/bans");
        // no body -> PeriodClosed
        public static readonly Operation ClosePeriod = new Operation("close_period", "POST", "/v1/boards/{board_id}/periods/{period}/close");
        // no body -> CohortResult
        public static readonly Operation Cohort = new Operation("cohort", "GET", "/v1/boards/{board_id}/cohorts/{cohort}");
        // no body -> BoardDeleted
        public static readonly Operation DeleteBoard = new Operation("delete_board", "DELETE", "/v1/boards/{board_id}");
        // no body -> EntryRemoved
        public static readonly Operation DeleteEntry = new Operation("delete_entry", "DELETE", "/v1/boards/{board_id}/entries/{player_id}");
        // no body -> PlayerErased
        public static readonly Operation ErasePlayer = new Operation("erase_player", "DELETE", "/v1/players/{player_id}");
        // no body -> string
        public static readonly Operation Events = new Operation("events", "GET", "/v1/boards/{board_id}/events");
        // no body -> Friends
        public static readonly Operation Friends = new Operation("friends", "GET", "/v1/boards/{board_id}/players/{player_id}/friends");
        // no body -> Board
        public static readonly Operation GetBoard = new Operation("get_board", "GET", "/v1/boards/{board_id}");
        // no body -> Profile
        public static readonly Operation GetProfile = new Operation("get_profile", "GET", "/v1/players/{player_id}");
        // no body -> Health
        public static readonly Operation Healthz = new Operation("healthz", "GET", "/healthz");
        // no body -> HoldsResult
        public static readonly Operation Holds = new Operation("holds", "GET", "/v1/boards/{board_id}/holds");
        // no body -> JoinedResult
        public static readonly Operation Join = new Operation("join", "POST", "/v1/boards/{board_id}/players/{player_id}/join");
        // no body -> CohortResult
        public static readonly Operation League = new Operation("league", "GET", "/v1/boards/{board_id}/players/{player_id}/league");
        // no body -> LeagueHistory
        public static readonly Operation Leagues = new Operation("leagues", "GET", "/v1/players/{player_id}/leagues");
        // no body -> BoardsResult
        public static readonly Operation ListBoards = new Operation("list_boards", "GET", "/v1/boards");
        // no body -> DeliveriesResult
        public static readonly Operation ListDeliveries = new Operation("list_deliveries", "GET", "/v1/boards/{board_id}/deliveries");
        // no body -> string
        public static readonly Operation MetricsText = new Operation("metrics_text", "GET", "/metrics");
        // TokenRequest -> PlayerTokenIssued
        public static readonly Operation MintToken = new Operation("mint_token", "POST", "/v1/players/{player_id}/tokens");
        // no body -> PeriodsResult
        public static readonly Operation Periods = new Operation("periods", "GET", "/v1/boards/{board_id}/periods");
        // no body -> PlayerRank
        public static readonly Operation Player = new Operation("player", "GET", "/v1/boards/{board_id}/players/{player_id}");
        // no body -> string
        public static readonly Operation PlayerEvents = new Operation("player_events", "GET", "/v1/players/{player_id}/events");
        // BoardSettings -> Board
        public static readonly Operation PutBoard = new Operation("put_board", "PUT", "/v1/boards/{board_id}");
        // ProfileUpdate -> Profile
        public static readonly Operation PutProfile = new Operation("put_profile", "PUT", "/v1/players/{player_id}");
        // no body -> RankOf
        public static readonly Operation RankOf = new Operation("rank_of", "GET", "/v1/boards/{board_id}/rank-of");
        // no body -> Ready
        public static readonly Operation Readyz = new Operation("readyz", "GET", "/readyz");
        // no body -> HoldDecision
        public static readonly Operation Reject = new Operation("reject", "POST", "/v1/boards/{board_id}/holds/{run_id}/reject");
        // no body -> SegmentsResult
        public static readonly Operation Segments = new Operation("segments", "GET", "/v1/boards/{board_id}/segments");
        // no body -> PlayerStandings
        public static readonly Operation Standings = new Operation("standings", "GET", "/v1/players/{player_id}/standings");
        // Batch -> BatchResults
        public static readonly Operation SubmitBatch = new Operation("submit_batch", "POST", "/v1/boards/{board_id}/runs:batch");
        // Run -> SubmitResult
        public static readonly Operation SubmitRun = new Operation("submit_run", "POST", "/v1/boards/{board_id}/runs");
        // no body -> TopPage
        public static readonly Operation Top = new Operation("top", "GET", "/v1/boards/{board_id}/top");
        // no body -> Ban
        public static readonly Operation Unban = new Operation("unban", "DELETE", "/v1/players/{player_id}/ban");
    }
}
