import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { api, errorMessage, type Schemas } from "../api/client";
import { keys } from "../api/queries";
import { quoteOf } from "../citations";
import { AnswerText } from "../components/AnswerMessage";
import { longDate } from "../format";

type SharedMessage = Schemas["SharedMessage"];

const PAGE = 50;

/** A chat someone shared by link, read-only: its questions and answers, and each source the
 * reader may read themselves (the server leaves out the others, keeping their numbers). */
export default function SharedChatPage({ shareId }: { shareId: string }) {
  const about = useQuery({
    queryKey: keys.shared(shareId),
    retry: false,
    queryFn: async () => {
      const { data, error } = await api.GET("/api/v1/shared-chats/{share_id}", { params: { path: { share_id: shareId } } });
      if (!data) throw new Error(errorMessage(error, "The shared chat could not be loaded"));
      return data;
    },
  });
  const messages = useInfiniteQuery({
    queryKey: [...keys.shared(shareId), "messages"],
    enabled: about.isSuccess,
    initialPageParam: 0,
    queryFn: async ({ pageParam }) => {
      const { data, error } = await api.GET("/api/v1/shared-chats/{share_id}/messages", {
        params: { path: { share_id: shareId }, query: { skip: pageParam, limit: PAGE } },
      });
      if (!data) throw new Error(errorMessage(error, "The shared chat could not be loaded"));
      return data;
    },
    getNextPageParam: (last) => (last.skip + last.items.length < last.total ? last.skip + last.items.length : undefined),
  });

  if (about.error) {
    return (
      <main className="shared-page">
        <h1>Shared chat</h1>
        <p role="alert" className="error">
          {about.error.message}
        </p>
        <a href="/">Back to your chats</a>
      </main>
    );
  }
  if (!about.data) return <p className="loading">Loading…</p>;
  const items = messages.data?.pages.flatMap((page) => page.items) ?? [];
  return (
    <main className="shared-page">
      <header className="shared-header">
        <h1>{about.data.title}</h1>
        <p className="muted small">
          Shared by {about.data.yours ? "you" : about.data.owner_name} on {longDate(about.data.shared_at)} · read-only
          {about.data.yours && " · what you ask in the chat later is not shown here until you update the link"}
        </p>
      </header>
      <div className="messages">
        {items.map((message) =>
          message.role === "user" ? (
            <article key={message.id} className="message user" data-testid="shared-question">
              <p className="user-text">{message.content}</p>
            </article>
          ) : (
            <SharedAnswer key={message.id} message={message} />
          ),
        )}
        {messages.hasNextPage && (
          <button className="link" onClick={() => void messages.fetchNextPage()} disabled={messages.isFetchingNextPage}>
            Show more
          </button>
        )}
        {messages.error && (
          <p role="alert" className="error">
            {messages.error.message}
          </p>
        )}
      </div>
    </main>
  );
}

function SharedAnswer({ message }: { message: SharedMessage }) {
  const [highlighted, setHighlighted] = useState<number | null>(null);
  const sources = message.sources ?? [];
  function cite(n: number) {
    setHighlighted(n);
    document.getElementById(`shared-source-${message.id}-${n}`)?.scrollIntoView?.({ block: "nearest" });
  }
  return (
    <article className="message assistant" data-testid="shared-answer">
      <AnswerText message={message} onCite={cite} />
      {message.stopped && <p className="muted small">Stopped</p>}
      {sources.length > 0 && (
        <ol className="shared-sources" aria-label="Sources">
          {sources.map((source, index) => (
            <li
              key={index}
              id={`shared-source-${message.id}-${index + 1}`}
              className={highlighted === index + 1 ? "highlighted" : undefined}
              data-testid="shared-source"
            >
              {source ? (
                <>
                  <strong>{source.document_name}</strong>
                  {(source.page != null || source.location) && (
                    <span className="muted"> · {[source.page != null ? `page ${source.page}` : null, source.location].filter(Boolean).join(", ")}</span>
                  )}
                  <span className="cite-quote">“{quoteOf(source)}”</span>
                </>
              ) : (
                <span className="muted">A document you may not read</span>
              )}
            </li>
          ))}
        </ol>
      )}
    </article>
  );
}
