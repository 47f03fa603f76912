import { forwardRef, useState } from "react";
import { api, downloadChat, type ChatDetail, type Schemas } from "../api/client";
import { latestFailure, unwrap, useWrite } from "../api/mutations";
import { keys, useCategories } from "../api/queries";
import ShareChat from "./ShareChat";

interface Props {
  chat: ChatDetail;
  onChanged(): void;
  /** The chat was deleted (it can be brought back for a while). */
  onDeleted(chat: ChatDetail): void;
}

/** The open chat's name and what can be done with it: rename, file under a category, pin,
 * archive, share by link, save as a file, delete. Here rather than in the list, so a chat opened by its address or from a
 * search has them too. */
const ChatHeader = forwardRef<HTMLHeadingElement, Props>(function ChatHeader({ chat, onChanged, onDeleted }, title) {
  const [renaming, setRenaming] = useState(false);
  const [sharing, setSharing] = useState(false);
  // Phones: the actions fold behind "⋯" so the conversation keeps the screen.
  const [menuOpen, setMenuOpen] = useState(false);
  const categories = useCategories();

  const update = useWrite({
    write: ({ body, failure }: { body: Schemas["ChatUpdate"]; failure: string }) =>
      unwrap(api.PATCH("/api/v1/chats/{chat_id}", { params: { path: { chat_id: chat.id } }, body }), failure),
    invalidates: [keys.chats],
    invalidateOnError: true,
    onSettled: onChanged,
  });
  const change = (body: Schemas["ChatUpdate"], failure: string) => update.mutate({ body, failure });
  const exportChat = useWrite({ write: (format: "markdown" | "json") => downloadChat(chat.id, format) });
  // Deleting asks nothing: it can be undone for a while (the server keeps the chat 30 days).
  const destroy = useWrite({
    write: () => unwrap(api.DELETE("/api/v1/chats/{chat_id}", { params: { path: { chat_id: chat.id } } }), "The chat could not be deleted"),
    invalidates: [keys.chats],
    onSuccess: () => onDeleted(chat),
  });
  const problem = latestFailure(update, exportChat, destroy);

  function rename(text: string) {
    setRenaming(false);
    const trimmed = text.trim();
    if (trimmed && trimmed !== chat.title) change({ title: trimmed }, "The chat could not be renamed");
  }

  return (
    <div className="chat-header" onKeyDown={(event) => event.key === "Escape" && setMenuOpen(false)}>
      <ShareChat chat={chat} open={sharing} onClose={() => setSharing(false)} onChanged={onChanged} />
      {renaming ? (
        <input
          className="chat-rename"
          defaultValue={chat.title}
          maxLength={200}
          aria-label="New name of the chat"
          autoFocus
          onFocus={(event) => event.currentTarget.select()}
          onBlur={(event) => rename(event.currentTarget.value)}
          onKeyDown={(event) => {
            if (event.key === "Enter") rename(event.currentTarget.value);
            if (event.key === "Escape") setRenaming(false);
          }}
        />
      ) : (
        <h1 ref={title} className="chat-name" tabIndex={-1} title={chat.title}>
          {chat.title}
        </h1>
      )}
      <button
        className="icon chat-menu-toggle"
        aria-expanded={menuOpen}
        aria-controls={`chat-actions-${chat.id}`}
        aria-label="Chat actions"
        onClick={() => setMenuOpen(!menuOpen)}
      >
        ⋯
      </button>
      <div
        className={`chat-actions${menuOpen ? " open" : ""}`}
        id={`chat-actions-${chat.id}`}
        // The folded menu (phones) closes once an action is chosen (or with Escape, above).
        onClick={(event) => event.target instanceof HTMLButtonElement && setMenuOpen(false)}
      >
        <button className="link small" onClick={() => setRenaming(true)} hidden={renaming}>
          Rename
        </button>
        {categories.length > 0 && (
          <select
            className="chat-category small"
            value={chat.category_id ?? ""}
            onChange={(event) => change({ category_id: event.target.value || null }, "The chat could not be moved")}
            aria-label="Category of this chat"
          >
            <option value="">No category</option>
            {categories.map((category) => (
              <option key={category.id} value={category.id}>
                {category.name}
              </option>
            ))}
          </select>
        )}
        <button
          className="link small"
          title="Pinned chats stay at the top of the list"
          onClick={() => change({ pinned: chat.pinned_at === null }, "The chat could not be pinned")}
        >
          {chat.pinned_at === null ? "Pin" : "Unpin"}
        </button>
        <button
          className="link small"
          title={chat.archived_at === null ? "Out of the list; a search still finds it" : "Back into the list"}
          onClick={() => change({ archived: chat.archived_at === null }, "The chat could not be archived")}
        >
          {chat.archived_at === null ? "Archive" : "Unarchive"}
        </button>
        <button className="link small" onClick={() => setSharing(true)} aria-haspopup="dialog">
          Share{chat.share_id && <span className="sr-only"> (a link is on)</span>}
          {chat.share_id && <span className="share-on" aria-hidden="true" title="Shared by link" />}
        </button>
        <span className="small muted">
          Save as{" "}
          <button className="link" onClick={() => exportChat.mutate("markdown")} aria-label="Save this chat as Markdown">
            Markdown
          </button>{" "}
          ·{" "}
          <button className="link" onClick={() => exportChat.mutate("json")} aria-label="Save this chat as JSON">
            JSON
          </button>
        </span>
        <button className="link small danger-text" onClick={() => destroy.mutate()}>
          Delete
        </button>
      </div>
      {problem && (
        <p role="alert" className="error small">
          {problem}
        </p>
      )}
    </div>
  );
});

export default ChatHeader;
