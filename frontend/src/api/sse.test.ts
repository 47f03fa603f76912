import { describe, expect, it } from "vitest";
import { parseSSE, readSSE } from "./sse";

describe("parseSSE", () => {
  it("splits complete events and keeps the unfinished rest", () => {
    const { events, rest } = parseSSE('event: delta\ndata: {"text":"Hi"}\n\nevent: done\ndata: {"a"');
    expect(events).toEqual([{ event: "delta", data: '{"text":"Hi"}' }]);
    expect(rest).toBe('event: done\ndata: {"a"');
  });

  it("joins multi-line data and defaults the event name", () => {
    const { events } = parseSSE("data: one\ndata: two\n\n");
    expect(events).toEqual([{ event: "message", data: "one\ntwo" }]);
  });

  it("keeps an event's id and skips keep-alive comments", () => {
    const { events } = parseSSE(': keep-alive\n\nid: 12\nevent: delta\ndata: {"text":"more"}\n\n');
    expect(events).toEqual([{ event: "delta", data: '{"text":"more"}', id: "12" }]);
  });

  it("accepts CRLF line endings", () => {
    expect(parseSSE("event: meta\r\ndata: {}\r\n\r\n").events).toEqual([{ event: "meta", data: "{}" }]);
  });
});

describe("readSSE", () => {
  it("reassembles events cut across network chunks, including multi-byte characters", async () => {
    const bytes = new TextEncoder().encode('event: delta\ndata: {"text":"héllo"}\n\nevent: done\ndata: {}\n\n');
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 7) controller.enqueue(bytes.slice(i, i + 7));
        controller.close();
      },
    });
    const events = [];
    for await (const event of readSSE(body)) events.push(event);
    expect(events.map((e) => e.event)).toEqual(["delta", "done"]);
    expect(JSON.parse(events[0].data).text).toBe("héllo");
  });
});
