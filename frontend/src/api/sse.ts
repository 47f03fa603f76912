// Server-Sent Events over a fetch() body (EventSource cannot POST).

export interface SSEEvent {
  event: string;
  data: string;
  /** The event's `id:` (an answer's: the characters sent so far), if it had one. */
  id?: string;
}

/** Splits a growing buffer into complete events; returns them and the unfinished rest. */
export function parseSSE(buffer: string): { events: SSEEvent[]; rest: string } {
  const events: SSEEvent[] = [];
  const blocks = buffer.replace(/\r\n/g, "\n").split("\n\n");
  const rest = blocks.pop() ?? "";
  for (const block of blocks) {
    let event = "message";
    let id: string | undefined;
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      else if (line.startsWith("id:")) id = line.slice(3).trim();
    }
    if (data.length) events.push(id === undefined ? { event, data: data.join("\n") } : { event, data: data.join("\n"), id });
  }
  return { events, rest };
}

export async function* readSSE(body: ReadableStream<Uint8Array>): AsyncGenerator<SSEEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    const parsed = parseSSE(buffer + decoder.decode(value, { stream: true }));
    buffer = parsed.rest;
    yield* parsed.events;
  }
}
