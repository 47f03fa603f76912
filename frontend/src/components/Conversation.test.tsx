import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Message, Schemas, StreamHandlers } from "../api/client";
import Conversation, { unansweredTail } from "./Conversation";

const client = vi.hoisted(() => ({ streamMessage: vi.fn() }));
vi.mock("../api/client", async (actual) => ({ ...(await actual<typeof import("../api/client")>()), ...client }));

const QUESTION = "When did the bridge open?";
const saved = { id: "q1", role: "user", content: QUESTION, chat_id: "c1" } as Message;

function show() {
  const props = {
    onChatCreated: vi.fn(),
    onPickDocument: vi.fn(),
    onSent: vi.fn(),
    onAnswered: vi.fn(),
    onShowSources: vi.fn(),
  };
  const queries = new QueryClient();
  const page = (chatId: string | null) => (
    <QueryClientProvider client={queries}>
      <Conversation chatId={chatId} selectedDocumentIds={[]} collections={[]} header={null} nextMessageScope={null} {...props} />
    </QueryClientProvider>
  );
  const { rerender } = render(page(null));
  /** The page moved to the chat the stream created (the same view stays). */
  const openChat = (chatId: string) => rerender(page(chatId));
  return { ...props, openChat, composer: screen.getByLabelText("Message") as HTMLTextAreaElement };
}

async function send(composer: HTMLTextAreaElement, text: string) {
  fireEvent.change(composer, { target: { value: text } });
  await act(async () => {
    fireEvent.keyDown(composer, { key: "Enter" });
  });
}

beforeEach(() => {
  client.streamMessage.mockReset();
  sessionStorage.clear();
});
afterEach(cleanup);

describe("Conversation", () => {
  it("puts a question whose answer failed back in the composer, and sends it again in its own place", async () => {
    // Saved, then the model could not answer.
    client.streamMessage.mockImplementationOnce(async (_body: Schemas["MessageCreate"], handlers: StreamHandlers) => {
      handlers.onMeta("c1", saved, "a1");
      handlers.onError("The language model is unavailable", 503);
    });
    const { composer, onChatCreated, onAnswered, openChat } = show();
    await send(composer, QUESTION);

    expect(onChatCreated).toHaveBeenCalledWith("c1");
    openChat("c1");
    expect(onAnswered).toHaveBeenCalled();
    expect(composer.value).toBe(QUESTION);
    expect(screen.getByTestId("message-user").textContent).toBe(QUESTION);
    expect(screen.getByTestId("answer-failed").textContent).toContain("The answer could not be written: The language model is unavailable.");
    expect(screen.queryByTestId("message-streaming")).toBeNull();

    // Sent again, it replaces the saved question (not asked, and shown, twice).
    client.streamMessage.mockImplementationOnce(async () => undefined);
    await send(composer, composer.value);
    expect(client.streamMessage.mock.calls[1][0]).toEqual({ chat_id: "c1", content: QUESTION, replaces: "q1" });
  });

  it("keeps the text of a question the server refused before saving it", async () => {
    client.streamMessage.mockImplementationOnce(async (_body: Schemas["MessageCreate"], handlers: StreamHandlers) => {
      handlers.onError("The message is too long", 422);
    });
    const { composer, onChatCreated } = show();
    await send(composer, QUESTION);

    expect(onChatCreated).not.toHaveBeenCalled();
    expect(composer.value).toBe(QUESTION);
    expect(screen.getByTestId("message-failed").textContent).toBe("The message is too long");
    expect(screen.queryByTestId("message-user")).toBeNull();
  });
});

describe("Research mode", () => {
  it("asks the questions sent while it is on in research mode", async () => {
    client.streamMessage.mockImplementation(async () => undefined);
    const { composer } = show();
    const toggle = screen.getByRole("button", { name: "Research" });
    expect(toggle.getAttribute("aria-pressed")).toBe("false");
    await send(composer, QUESTION);
    expect(client.streamMessage.mock.calls[0][0].options).toBeUndefined();

    fireEvent.click(toggle);
    expect(toggle.getAttribute("aria-pressed")).toBe("true");
    await send(composer, "And who built it?");
    expect(client.streamMessage.mock.calls[1][0]).toMatchObject({ content: "And who built it?", options: { research: true } });
  });
});

describe("unansweredTail", () => {
  const message = (id: string, role: "user" | "assistant") => ({ id, role }) as Message;
  it("is the chat's last questions that have no answer, oldest first", () => {
    // A question sent again after a failure replaces these (it was asked a second time).
    const asked = [message("q1", "user"), message("a1", "assistant"), message("q2", "user"), message("q3", "user")];
    expect(unansweredTail(asked).map((m) => m.id)).toEqual(["q2", "q3"]);
    expect(unansweredTail(asked.slice(0, 2))).toEqual([]);
    expect(unansweredTail([])).toEqual([]);
  });
});
