// Server-Sent Events, as the Python client reads them (rankd.client.calls.EventReader).

/** Reads a text/event-stream line by line: `feed` returns [event, data] at the blank line
 * that ends an event; comments (the heartbeats) and other fields are skipped. */
export class EventReader {
  private event = "message";
  private data: string[] = [];

  feed(line: string): [string, string] | null {
    if (line === "") {
      const found: [string, string] | null = this.data.length
        ? [this.event, this.data.join("\n")]
        : null;
      this.event = "message";
      this.data = [];
      return found;
    }
    if (!line.startsWith(":")) {
      const colon = line.indexOf(":");
      const name = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (name === "event") this.event = value;
      else if (name === "data") this.data.push(value);
    }
    return null;
  }
}

/** The lines of a byte stream (any of \r\n, \n, \r ends a line), decoded as UTF-8. */
export async function* lines(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let buffer = "";
  let lastWasCR = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let start = 0;
      for (let i = 0; i < buffer.length; i++) {
        const c = buffer[i];
        if (c === "\n" && lastWasCR && i === start) { start = i + 1; lastWasCR = false; continue; }
        lastWasCR = false;
        if (c === "\n" || c === "\r") {
          yield buffer.slice(start, i);
          lastWasCR = c === "\r";
          start = i + 1;
        }
      }
      buffer = buffer.slice(start);
      if (done) {
        if (buffer) yield buffer;
        return;
      }
    }
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => undefined);
  }
}

// --- a player's own events (GET /v1/players/{player_id}/events) ---------------------------
// Server-Sent Events, not JSON answers, so not in the generated wire.ts: each is its payload
// as the service sends it, plus `kind` (the event's name), on which a PlayerEvent narrows.

/** The player's rank in one board window's current period (global standings): sent on
 * connect for each window where the player has an entry, then whenever it changes (at most
 * one a second per board and window, the latest state always sent). */
export interface StandingEvent {
  kind: "standing";
  board_id: string;
  window: string;
  period: string;
  rank: number;
  /** The rank the stream last sent for this window; null on connect, in a new period, or
   * when the player had no entry before. */
  previous_rank: number | null;
}

/** One of the stream's listed friends, behind the player (or without an entry) at the last
 * look, is now ahead of them. */
export interface PassedEvent {
  kind: "passed";
  board_id: string;
  window: string;
  period: string;
  /** The friend. */
  player_id: string;
  /** The friend's rank now. */
  rank: number;
  /** The followed player's rank now. */
  your_rank: number;
}

export type PlayerEvent = StandingEvent | PassedEvent;

/** A player stream's event, its payload tagged with `kind`; null for anything else (a kind
 * this client does not know is skipped). As rankd.client.calls.player_event. */
export function playerEvent(found: [string, string] | null): PlayerEvent | null {
  if (found === null || (found[0] !== "standing" && found[0] !== "passed")) return null;
  return { ...(JSON.parse(found[1]) as object), kind: found[0] } as PlayerEvent;
}
