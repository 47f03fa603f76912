import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import { api, downloadChat, errorMessage, type Chat } from "../api/client";
import { keys, queryClient, refreshChats } from "../api/queries";

const PAGE = 30;
// How long "Undo" is offered after deleting a chat.
const UNDO_MS = 10_000;
// Search as you type, once typing pauses.
const SEARCH_DELAY_MS = 300;

interface Props {
  currentChatId: string | null;
  onSelect(chatId: string | null): void;
  /** Phones: whether the list, a drawer there, is open; Escape closes it. */
  open?: boolean;
  onClose?(): void;
}

export default function ChatList({ currentChatId, onSelect, open = false, onClose }: Props) {
  const [categoryId, setCategoryId] = useState("");
  const [typed, setTyped] = useState("");
  const [query, setQuery] = useState("");
  const [problem, setProblem] = useState<string | null>(null);
  const [renaming, setRenaming] = useState<string | null>(null);
  const [deleted, setDeleted] = useState<{ chat: Chat; wasOpen: boolean } | null>(null);
  const sentinel = useRef<HTMLLIElement>(null);

  // One cached list per filter and search: a reply for a filter no longer chosen fills its
  // own entry, never the one on screen.
  const listed = useInfiniteQuery({
    queryKey: keys.chatList(categoryId, query),
    initialPageParam: 0,
    queryFn: async ({ pageParam }) => {
      const { data, error } = await api.GET("/api/v1/chats", {
        params: { query: { skip: pageParam, limit: PAGE, category_id: categoryId || undefined, q: query || undefined } },
      });
      if (!data) throw new Error(errorMessage(error, "The chats could not be loaded"));
      return data;
    },
    getNextPageParam: (last) => (last.skip + last.items.length < last.total ? last.skip + last.items.length : undefined),
  });
  const chats = listed.data?.pages.flatMap((page) => page.items) ?? [];
  const loading = listed.isFetching;

  const categories =
    useQuery({
      queryKey: keys.categories,
      queryFn: async () => (await api.GET("/api/v1/categories", { params: { query: { limit: 100 } } })).data?.items ?? [],
    }).data ?? [];

  useEffect(() => {
    const timer = window.setTimeout(() => setQuery(typed.trim()), SEARCH_DELAY_MS);
    return () => window.clearTimeout(timer);
  }, [typed]);

  // Load the next page when the end of the list scrolls into view.
  const { hasNextPage, isFetchingNextPage, fetchNextPage } = listed;
  useEffect(() => {
    const node = sentinel.current;
    if (!node || !hasNextPage) return;
    const observer = new IntersectionObserver((entries) => {
      if (entries[0]?.isIntersecting && !isFetchingNextPage) void fetchNextPage();
    });
    observer.observe(node);
    return () => observer.disconnect();
  }, [hasNextPage, isFetchingNextPage, fetchNextPage, chats.length]);

  async function rename(chat: Chat, title: string) {
    setRenaming(null);
    const trimmed = title.trim();
    if (!trimmed || trimmed === chat.title) return;
    const { error } = await api.PATCH("/api/v1/chats/{chat_id}", { params: { path: { chat_id: chat.id } }, body: { title: trimmed } });
    setProblem(error ? errorMessage(error, "The chat could not be renamed") : null);
    void refreshChats();
  }

  // Deleting asks nothing: it can be undone for a while (the server keeps the chat 30 days).
  async function remove(chat: Chat) {
    const { error } = await api.DELETE("/api/v1/chats/{chat_id}", { params: { path: { chat_id: chat.id } } });
    if (error) {
      setProblem(errorMessage(error, "The chat could not be deleted"));
      return;
    }
    const wasOpen = chat.id === currentChatId;
    if (wasOpen) onSelect(null);
    setDeleted({ chat, wasOpen });
    void refreshChats();
  }

  async function undoDelete() {
    if (!deleted) return;
    const { chat, wasOpen } = deleted;
    setDeleted(null);
    const { error } = await api.POST("/api/v1/chats/{chat_id}/restore", { params: { path: { chat_id: chat.id } } });
    setProblem(error ? errorMessage(error, "The chat could not be brought back") : null);
    if (!error && wasOpen) onSelect(chat.id);
    void refreshChats();
  }

  // The undo offer stays a while, then goes.
  useEffect(() => {
    if (!deleted) return;
    const timer = window.setTimeout(() => setDeleted(null), UNDO_MS);
    return () => window.clearTimeout(timer);
  }, [deleted]);

  async function exportChat(chat: Chat, format: "markdown" | "json") {
    try {
      await downloadChat(chat.id, format);
      setProblem(null);
    } catch (caught) {
      setProblem(caught instanceof Error ? caught.message : "The chat could not be exported");
    }
  }

  async function addCategory() {
    const name = window.prompt("Category name")?.trim();
    if (!name) return;
    const { data, error } = await api.POST("/api/v1/categories", { body: { name } });
    setProblem(error ? errorMessage(error, "The category could not be created") : null);
    if (data) void queryClient.invalidateQueries({ queryKey: keys.categories });
  }

  async function fileUnder(chat: Chat, category: string) {
    const { error } = await api.PATCH("/api/v1/chats/{chat_id}", {
      params: { path: { chat_id: chat.id } },
      body: { category_id: category || null },
    });
    setProblem(error ? errorMessage(error, "The chat could not be moved") : null);
    void refreshChats();
  }

  return (
    <aside
      id="chat-list-drawer"
      className={`sidebar${open ? " open" : ""}`}
      aria-label="Chats"
      onKeyDown={(event) => event.key === "Escape" && onClose?.()}
    >
      <button className="primary wide" onClick={() => onSelect(null)}>
        + New chat
      </button>
      <div className="row">
        <label className="grow">
          <span className="sr-only">Filter by category</span>
          <select value={categoryId} onChange={(e) => setCategoryId(e.target.value)} aria-label="Filter by category">
            <option value="">All chats</option>
            {categories.map((category) => (
              <option key={category.id} value={category.id}>
                {category.name}
              </option>
            ))}
          </select>
        </label>
        <button onClick={addCategory} title="New category" aria-label="New category">
          +
        </button>
      </div>
      <label className="chat-search">
        <span className="sr-only">Search chats</span>
        <input
          type="search"
          value={typed}
          onChange={(e) => setTyped(e.target.value)}
          placeholder="Search chats"
          aria-label="Search chats"
          maxLength={200}
        />
      </label>
      {problem && (
        <p role="alert" className="error">
          {problem}
        </p>
      )}
      {deleted && (
        <p role="status" className="undo-bar small">
          Deleted “{deleted.chat.title}”.{" "}
          <button className="link" onClick={() => void undoDelete()}>
            Undo
          </button>
        </p>
      )}
      <ul className="chat-list" aria-label={query ? `Chats matching ${query}` : "Chats"}>
        {chats.map((chat) => (
          <li key={chat.id} className={chat.id === currentChatId ? "active" : ""}>
            {renaming === chat.id ? (
              <input
                className="chat-rename"
                defaultValue={chat.title}
                maxLength={200}
                aria-label={`New title for ${chat.title}`}
                autoFocus
                onFocus={(event) => event.currentTarget.select()}
                onBlur={(event) => void rename(chat, event.currentTarget.value)}
                onKeyDown={(event) => {
                  if (event.key === "Enter") void rename(chat, event.currentTarget.value);
                  if (event.key === "Escape") {
                    event.stopPropagation(); // cancels the rename, not the drawer
                    setRenaming(null);
                  }
                }}
              />
            ) : (
              <button className="chat-title" onClick={() => onSelect(chat.id)} title={chat.title}>
                {chat.title}
              </button>
            )}
            <button className="icon" onClick={() => setRenaming(chat.id)} aria-label={`Rename ${chat.title}`}>
              ✎
            </button>
            <button className="icon" onClick={() => remove(chat)} aria-label={`Delete ${chat.title}`}>
              ✕
            </button>
            {chat.id === currentChatId && categories.length > 0 && (
              <select
                className="chat-category"
                value={chat.category_id ?? ""}
                onChange={(e) => void fileUnder(chat, e.target.value)}
                aria-label={`Category of ${chat.title}`}
              >
                <option value="">No category</option>
                {categories.map((category) => (
                  <option key={category.id} value={category.id}>
                    {category.name}
                  </option>
                ))}
              </select>
            )}
            {chat.id === currentChatId && (
              <span className="chat-export muted small">
                Save as{" "}
                <button className="link" onClick={() => void exportChat(chat, "markdown")} aria-label={`Save ${chat.title} as Markdown`}>
                  Markdown
                </button>{" "}
                ·{" "}
                <button className="link" onClick={() => void exportChat(chat, "json")} aria-label={`Save ${chat.title} as JSON`}>
                  JSON
                </button>
              </span>
            )}
          </li>
        ))}
        {hasNextPage && (
          <li ref={sentinel} className="muted">
            Loading more…
          </li>
        )}
        {!chats.length && !loading && <li className="muted">{query ? `No chat matches “${query}”.` : "No chats yet. Ask something!"}</li>}
      </ul>
    </aside>
  );
}
