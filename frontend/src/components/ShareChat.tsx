import { useState } from "react";
import { api, errorMessage, type ChatDetail } from "../api/client";
import { refreshChats } from "../api/queries";
import { useModalDialog } from "../dialogs";
import { longDate } from "../format";
import { routePath } from "../routes";

/** Share the open chat read-only by link with the people of this installation: make the link,
 * copy it, bring it up to date with what was asked since, or turn it off. */
export default function ShareChat({ chat, open, onClose, onChanged }: { chat: ChatDetail; open: boolean; onClose(): void; onChanged(): void }) {
  const dialog = useModalDialog(open);
  const [problem, setProblem] = useState<string | null>(null);
  const [copied, setCopied] = useState(false);
  const link = chat.share_id ? `${window.location.origin}${routePath({ page: "shared", shareId: chat.share_id })}` : null;

  async function share() {
    const { error } = await api.PUT("/api/v1/chats/{chat_id}/share", { params: { path: { chat_id: chat.id } } });
    setProblem(error ? errorMessage(error, "The link could not be made") : null);
    setCopied(false);
    onChanged();
    void refreshChats();
  }

  async function unshare() {
    const { error } = await api.DELETE("/api/v1/chats/{chat_id}/share", { params: { path: { chat_id: chat.id } } });
    setProblem(error ? errorMessage(error, "The link could not be turned off") : null);
    onChanged();
    void refreshChats();
  }

  async function copy() {
    if (!link) return;
    try {
      await navigator.clipboard.writeText(link);
      setCopied(true);
    } catch {
      setProblem("The link could not be copied: select it and copy it yourself");
    }
  }

  return (
    <dialog ref={dialog} className="share-chat" aria-labelledby="share-title" onClose={onClose}>
      <h2 id="share-title">Share this chat</h2>
      <p className="small">
        Anyone signed in to this docchat who has the link can read the questions and answers, never change them. Each
        sees a source only if they may read its document themselves.
      </p>
      {problem && (
        <p role="alert" className="error small">
          {problem}
        </p>
      )}
      {link ? (
        <>
          <label className="share-link">
            <span className="small muted">
              Link (shared {chat.shared_at ? longDate(chat.shared_at) : ""}; later messages are not in it until you update it)
            </span>
            <input readOnly value={link} onFocus={(event) => event.currentTarget.select()} />
          </label>
          <div className="row">
            <button className="primary" onClick={() => void copy()}>
              {copied ? "Copied" : "Copy link"}
            </button>
            <button onClick={() => void share()}>Update link</button>
            <button className="danger-text" onClick={() => void unshare()}>
              Stop sharing
            </button>
          </div>
        </>
      ) : (
        <button className="primary" onClick={() => void share()}>
          Create link
        </button>
      )}
      <button className="link" onClick={onClose}>
        Close
      </button>
    </dialog>
  );
}
