import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { act, cleanup, renderHook } from "@testing-library/react";
import type { ReactNode } from "react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Message, StreamHandlers } from "../api/client";
import { useAnswerStream, type Opener, type Reading } from "./useAnswerStream";

const client = vi.hoisted(() => ({ followAnswer: vi.fn(), stopAnswer: vi.fn() }));
vi.mock("../api/client", async (actual) => ({ ...(await actual<typeof import("../api/client")>()), ...client }));

const question = { id: "q1", role: "user", content: "When did the bridge open?" } as Message;
const answer = { id: "a1", role: "assistant", content: "In 1932 [1].", sources: [] } as unknown as Message;

function wrapper({ children }: { children: ReactNode }) {
  return <QueryClientProvider client={new QueryClient()}>{children}</QueryClientProvider>;
}

/** A reading of a new question, with spies for what the conversation is told. */
function asking(open: Opener) {
  return {
    initial: { user: null, question: question.content, text: "", answerId: null },
    open,
    onSaved: vi.fn<(chatId: string) => void>(),
    onDone: vi.fn<Reading["onDone"]>(),
    onEnd: vi.fn<Reading["onEnd"]>(),
  } satisfies Reading;
}

/** An opener that calls `script` with the handlers, then waits until `release` is called
 * (a stream still open) or returns at once. */
function stream(script: (handlers: StreamHandlers) => void, held = false) {
  let release: () => void = () => undefined;
  const open: Opener = (handlers, signal) =>
    new Promise((resolve, reject) => {
      script(handlers);
      if (!held) return resolve();
      release = resolve;
      signal.addEventListener("abort", () => reject(new DOMException("Aborted", "AbortError")));
    });
  return { open, release: () => release() };
}

beforeEach(() => {
  client.followAnswer.mockReset();
  client.stopAnswer.mockReset();
});
afterEach(() => {
  cleanup();
  vi.useRealTimers();
});

describe("useAnswerStream", () => {
  it("re-attaches after a dropped connection, from where the reader was, and finishes the answer", async () => {
    vi.useFakeTimers();
    // The connection drops after the first words: no "done", no error.
    const { open } = stream((handlers) => {
      handlers.onMeta("c1", question, "a1");
      handlers.onDelta("In 1932", "7");
    });
    client.followAnswer.mockImplementation(async (_id: string, _at: string, handlers: StreamHandlers) => {
      handlers.onDelta(" [1].", "12");
      handlers.onDone(answer);
    });
    const { result } = renderHook(() => useAnswerStream(), { wrapper });
    const reading = asking(open);
    let done: Promise<void> = Promise.resolve();
    act(() => {
      done = result.current.read(reading);
    });
    await act(async () => {
      await vi.runAllTimersAsync();
      await done;
    });

    expect(client.followAnswer).toHaveBeenCalledTimes(1);
    expect(client.followAnswer.mock.calls[0].slice(0, 2)).toEqual(["a1", "7"]);
    expect(reading.onSaved).toHaveBeenCalledWith("c1");
    expect(reading.onDone).toHaveBeenCalledWith(answer, question, true);
    expect(reading.onEnd).toHaveBeenCalledWith({ unanswered: null, giveBack: false });
    expect(result.current.failure).toBeNull();
    expect(result.current.pending).toBeNull();
  });

  it("gives up after its last re-attach and says the connection was lost", async () => {
    vi.useFakeTimers();
    const { open } = stream((handlers) => handlers.onMeta("c1", question, "a1"));
    client.followAnswer.mockResolvedValue(undefined); // every re-attach drops again
    const { result } = renderHook(() => useAnswerStream(), { wrapper });
    const reading = asking(open);
    let done: Promise<void> = Promise.resolve();
    act(() => {
      done = result.current.read(reading);
    });
    await act(async () => {
      await vi.runAllTimersAsync();
      await done;
    });

    expect(client.followAnswer).toHaveBeenCalledTimes(5);
    expect(result.current.failure).toEqual({ questionId: "q1", detail: expect.stringContaining("connection to the server was lost") });
    // The question was saved: it stays in the chat, without an answer, and goes back to the composer.
    expect(reading.onEnd).toHaveBeenCalledWith({ unanswered: question, giveBack: true });
  });

  it("shows each research step as it comes, once, when a re-attached reader is told them again", async () => {
    const step = (number: number) => ({ number, action: "search" as const, said: `Searched 'step ${number}': 2 passages` });
    let finish: () => void = () => undefined;
    const { open, release } = stream((handlers) => {
      handlers.onMeta("c1", question, "a1");
      handlers.onStep(step(2));
      handlers.onStep(step(1));
      handlers.onStep(step(2)); // told again
      finish = () => handlers.onDone(answer);
    }, true);
    const { result } = renderHook(() => useAnswerStream(), { wrapper });
    let done: Promise<void> = Promise.resolve();
    await act(async () => {
      done = result.current.read(asking(open));
    });
    expect(result.current.pending?.steps?.map((taken) => taken.number)).toEqual([1, 2]);
    await act(async () => {
      finish();
      release();
      await done;
    });
  });

  it("stops a saved answer on the server, saying so until the stream ends", async () => {
    let ended: () => void = () => undefined;
    client.stopAnswer.mockResolvedValue(undefined);
    const { open, release } = stream((handlers) => {
      handlers.onMeta("c1", question, "a1");
      ended = () => {
        handlers.onError("Stopped before the first word", 410);
        release();
      };
    }, true);
    const { result } = renderHook(() => useAnswerStream(), { wrapper });
    const reading = asking(open);
    let done: Promise<void> = Promise.resolve();
    await act(async () => {
      done = result.current.read(reading);
    });
    expect(result.current.pending?.answerId).toBe("a1");

    await act(async () => result.current.stop());
    expect(client.stopAnswer).toHaveBeenCalledWith("a1");
    expect(result.current.stopping).toBe(true);

    await act(async () => {
      ended();
      await done;
    });
    expect(result.current.stopping).toBe(false);
    expect(result.current.pending).toBeNull();
    // 410: stopped before its first word; the question stays, without an answer, and no failure.
    expect(result.current.failure).toBeNull();
    expect(reading.onEnd).toHaveBeenCalledWith({ unanswered: question, giveBack: false });
  });

  it("cancels a question the server does not have yet: its text goes back to the composer", async () => {
    const { open } = stream(() => undefined, true);
    const { result } = renderHook(() => useAnswerStream(), { wrapper });
    const reading = asking(open);
    let done: Promise<void> = Promise.resolve();
    await act(async () => {
      done = result.current.read(reading);
    });
    await act(async () => {
      result.current.stop();
      await done;
    });

    expect(client.stopAnswer).not.toHaveBeenCalled();
    expect(reading.onSaved).not.toHaveBeenCalled();
    expect(reading.onEnd).toHaveBeenCalledWith({ unanswered: null, giveBack: true });
    expect(result.current.failure).toBeNull();
  });

  it("lets the reader stop again when the stop request failed", async () => {
    client.stopAnswer.mockRejectedValue(new Error("The server could not be reached"));
    let finish: () => void = () => undefined;
    const { open, release } = stream((handlers) => {
      handlers.onMeta("c1", question, "a1");
      finish = () => handlers.onDone(answer);
    }, true);
    const { result } = renderHook(() => useAnswerStream(), { wrapper });
    let done: Promise<void> = Promise.resolve();
    await act(async () => {
      done = result.current.read(asking(open));
    });
    await act(async () => result.current.stop());
    expect(client.stopAnswer).toHaveBeenCalledWith("a1");
    expect(result.current.stopping).toBe(false);
    expect(result.current.pending?.answerId).toBe("a1");
    await act(async () => {
      finish();
      release();
      await done;
    });
  });
});
