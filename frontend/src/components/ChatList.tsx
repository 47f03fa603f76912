import { useInfiniteQuery } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import { api, errorMessage, type Chat } from "../api/client";
import { keys, useCategories } from "../api/queries";
import { activityGroup, groupedBy } from "../format";
import Categories from "./Categories";
import { routePath } from "../routes";

const PAGE = 30;
// Search as you type, once typing pauses.
const SEARCH_DELAY_MS = 300;

interface Props {
  currentChatId: string | null;
  onSelect(chatId: string | null): void;
  /** Phones: whether the list, a drawer there, is open; Escape closes it. */
  open?: boolean;
  onClose?(): void;
  onShowShortcuts?(): void;
}

/** Pinned chats first under their own heading, then by when they were last active. */
function listHeading(chat: Chat): string {
  return chat.pinned_at ? "Pinned" : activityGroup(new Date(chat.updated_at));
}

function emptyList(query: string, archive: boolean): string {
  if (query) return `No chat matches “${query}”.`;
  return archive ? "No archived chats. Archive one from its header." : "No chats yet. Ask something!";
}

export default function ChatList({ currentChatId, onSelect, open = false, onClose, onShowShortcuts }: Props) {
  const [categoryId, setCategoryId] = useState("");
  const [typed, setTyped] = useState("");
  const [query, setQuery] = useState("");
  const [managing, setManaging] = useState(false);
  // The archive: the chats taken out of the list, browsed on their own.
  const [archive, setArchive] = useState(false);
  const sentinel = useRef<HTMLParagraphElement>(null);

  // One cached list per filter and search: a reply for a filter no longer chosen fills its
  // own entry, never the one on screen.
  const listed = useInfiniteQuery({
    queryKey: keys.chatList(categoryId, query, archive),
    initialPageParam: 0,
    queryFn: async ({ pageParam }) => {
      const { data, error } = await api.GET("/api/v1/chats", {
        params: {
          query: {
            skip: pageParam,
            limit: PAGE,
            category_id: categoryId || undefined,
            q: query || undefined,
            archived: archive ? "only" : undefined,
          },
        },
      });
      if (!data) throw new Error(errorMessage(error, "The chats could not be loaded"));
      return data;
    },
    getNextPageParam: (last) => (last.skip + last.items.length < last.total ? last.skip + last.items.length : undefined),
  });
  const chats = listed.data?.pages.flatMap((page) => page.items) ?? [];
  const loading = listed.isFetching;
  const problem = listed.error?.message ?? null;

  const categories = useCategories();

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

  // Phones: the open drawer closes with Escape wherever the focus is, and takes the focus.
  const newChat = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (!open) return;
    newChat.current?.focus();
    const onKey = (event: KeyboardEvent) => event.key === "Escape" && onClose?.();
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [open, onClose]);

  return (
    <>
    {/* Phones: a tap beside the open drawer closes it. */}
    {open && <div className="drawer-backdrop" data-testid="drawer-backdrop" onClick={onClose} aria-hidden="true" />}
    <Categories open={managing} onClose={() => setManaging(false)} />
    <aside id="chat-list-drawer" className={`sidebar${open ? " open" : ""}`} aria-label="Chats">
      <button ref={newChat} className="primary wide" onClick={() => onSelect(null)}>
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
        <button onClick={() => setManaging(true)} title="Add, rename or delete categories">
          Categories
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
      <div className="chat-list">
        {archive && <h2 className="chat-group">Archived chats</h2>}
        {(query || archive ? [{ heading: "", items: chats }] : groupedBy(chats, listHeading)).map((group) => (
          <section key={group.heading || "matches"} aria-label={group.heading || `Chats matching ${query}`}>
            {group.heading && <h2 className="chat-group">{group.heading}</h2>}
            <ul>
              {group.items.map((chat) => (
                <li key={chat.id} className={chat.id === currentChatId ? "active" : ""}>
                  {/* A link: middle-click and "open in a new tab" work; a plain click stays here. */}
                  <a
                    className="chat-title"
                    href={routePath({ page: "chat", chatId: chat.id })}
                    aria-current={chat.id === currentChatId ? "page" : undefined}
                    title={chat.title}
                    onClick={(event) => {
                      if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
                      event.preventDefault();
                      onSelect(chat.id);
                    }}
                  >
                    {chat.pinned_at && !query && <span className="sr-only">Pinned: </span>}
                    {chat.title}
                    {chat.archived_at && query && <span className="chat-tag">archived</span>}
                    {chat.snippet && (
                      <span className="chat-snippet" data-testid="chat-snippet">
                        {chat.snippet}
                      </span>
                    )}
                  </a>
                </li>
              ))}
            </ul>
          </section>
        ))}
        {hasNextPage && (
          <p ref={sentinel} className="muted small">
            Loading more…
          </p>
        )}
        {!chats.length && !loading && <p className="muted">{emptyList(query, archive)}</p>}
      </div>

      <div className="list-footer">
        <button className="link small" onClick={() => setArchive(!archive)}>
          {archive ? "← All chats" : "Archived chats"}
        </button>
        {onShowShortcuts && (
          <button className="link small" onClick={onShowShortcuts}>
            Keyboard shortcuts <kbd>?</kbd>
          </button>
        )}
      </div>
    </aside>
    </>
  );
}
