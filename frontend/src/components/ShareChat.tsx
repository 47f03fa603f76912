import { useState } from "react";
import { api, type ChatDetail } from "../api/client";
import { latestFailure, unwrap, useWrite } from "../api/mutations";
import { keys } from "../api/queries";
import { useModalDialog } from "../dialogs";
import { longDate } from "../format";
import { routePath } from "../routes";

/** Share the open chat read-only by link with the people of this installation: make the link,
 * copy it, bring it up to date with what was asked since, or turn it off. */
export default function ShareChat({ chat, open, onClose, onChanged }: { chat: ChatDetail; open: boolean; onClose(): void; onChanged(): void }) {
  const dialog = useModalDialog(open);
  const [copyFailed, setCopyFailed] = useState(false);
  const [copied, setCopied] = useState(false);
  const link = chat.share_id ? `${window.location.origin}${routePath({ page: "shared", shareId: chat.share_id })}` : null;

  const path = { chat_id: chat.id };
  // Either way the chat is read again: its link is what the server now has.
  const share = useWrite({
    write: () => unwrap(api.PUT("/api/v1/chats/{chat_id}/share", { params: { path } }), "The link could not be made"),
    invalidates: [keys.chats],
    invalidateOnError: true,
    onSettled: onChanged,
  });
  const unshare = useWrite({
    write: () => unwrap(api.DELETE("/api/v1/chats/{chat_id}/share", { params: { path } }), "The link could not be turned off"),
    invalidates: [keys.chats],
    invalidateOnError: true,
    onSettled: onChanged,
  });
  const problem = copyFailed ? "The link could not be copied: select it and copy it yourself" : latestFailure(share, unshare);

  function change(write: typeof share | typeof unshare) {
    setCopyFailed(false);
    setCopied(false);
    write.mutate();
  }

  async function copy() {
    if (!link) return;
    try {
      await navigator.clipboard.writeText(link);
      setCopied(true);
    } catch {
      setCopyFailed(true);
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
            <button onClick={() => change(share)}>Update link</button>
            <button className="danger-text" onClick={() => change(unshare)}>
              Stop sharing
            </button>
          </div>
        </>
      ) : (
        <button className="primary" onClick={() => change(share)}>
          Create link
        </button>
      )}
      <button className="link" onClick={onClose}>
        Close
      </button>
    </dialog>
  );
}
