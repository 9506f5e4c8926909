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
