import { useState, type FormEvent } from "react";
import { api, type Message, type Schemas } from "../api/client";
import { latestFailure, unwrap, useWrite } from "../api/mutations";
import { keys } from "../api/queries";

type Rating = Schemas["Rating"];

const PRIVACY = "Ratings are shown to administrators with the question and the answer, to improve answers.";

/** A thumb (the outline of Feather's "thumbs-up" icon, MIT licence); turned over for "down".
 * Drawn, not an emoji: machines without an emoji font would show empty boxes. */
function Thumb({ down = false }: { down?: boolean }) {
  return (
    <svg
      width="16"
      height="16"
      viewBox="0 0 24 24"
      fill="none"
      stroke="currentColor"
      strokeWidth="2"
      strokeLinecap="round"
      strokeLinejoin="round"
      aria-hidden="true"
      style={down ? { transform: "rotate(180deg)" } : undefined}
    >
      <path d="M14 9V5a3 3 0 0 0-3-3l-4 9v11h11.28a2 2 0 0 0 2-1.7l1.38-9a2 2 0 0 0-2-2.3zM7 22H4a2 2 0 0 1-2-2v-7a2 2 0 0 1 2-2h3" />
    </svg>
  );
}

/** Copy text, with a fallback where the clipboard API is unavailable (plain http). */
async function copyText(text: string): Promise<void> {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.appendChild(area);
  area.select();
  document.execCommand("copy");
  area.remove();
}

/** Under an answer: copy it, rate it up or down, and say why (stored on the server); the last
 * answer can also be regenerated (`onRegenerate`). */
export default function AnswerActions({ message, onRegenerate }: { message: Message; onRegenerate?: () => void }) {
  const [rating, setRating] = useState<Rating | null>(message.feedback?.rating ?? null);
  const [comment, setComment] = useState(message.feedback?.comment ?? "");
  const [commenting, setCommenting] = useState(false);
  const [copied, setCopied] = useState(false);
  const [status, setStatus] = useState<string | null>(null);
  const url = "/api/v1/chats/{chat_id}/messages/{message_id}/feedback" as const;
  const path = { chat_id: message.chat_id, message_id: message.id };

  async function copy() {
    try {
      await copyText(message.content);
      setCopied(true);
      window.setTimeout(() => setCopied(false), 2000);
    } catch {
      // Said instead of an earlier rating's failure: the last thing done is what the line reports.
      rate.reset();
      unrate.reset();
      setStatus("Copying was refused by the browser");
    }
  }

  // Ratings are what the administrators' review lists.
  const rate = useWrite({
    write: (body: Schemas["FeedbackWrite"]) => unwrap(api.PUT(url, { params: { path }, body }), "The rating was not saved"),
    invalidates: [keys.admin],
    onSuccess(saved) {
      setRating(saved.rating);
      setComment(saved.comment ?? "");
    },
  });
  const unrate = useWrite({
    write: () => unwrap(api.DELETE(url, { params: { path } }), "The rating was not removed"),
    invalidates: [keys.admin],
    onSuccess() {
      setRating(null);
      setComment("");
      setCommenting(false);
    },
  });
  const shown = latestFailure(rate, unrate) ?? status;

  function toggle(next: Rating) {
    setStatus(null);
    if (rating === next) {
      unrate.mutate();
      return;
    }
    // A thumbs down asks what was wrong (optional); a thumbs up offers it.
    rate.mutate({ rating: next, comment: comment || null }, { onSuccess: () => setCommenting(next === "down") });
  }

  function saveComment(event: FormEvent) {
    event.preventDefault();
    if (!rating) return;
    setStatus(null);
    rate.mutate(
      { rating, comment: comment.trim() || null },
      {
        onSuccess() {
          setCommenting(false);
          setStatus("Thanks: your comment was saved");
        },
      },
    );
  }

  return (
    <div className="answer-actions" role="group" aria-label="Answer actions" title={PRIVACY}>
      <button className="icon" onClick={() => void copy()} aria-label="Copy answer">
        {copied ? "Copied" : "Copy"}
      </button>
      {onRegenerate && (
        <button className="icon" onClick={onRegenerate} title="Ask the same question again for a new answer">
          Regenerate
        </button>
      )}
      <button className="icon" aria-pressed={rating === "up"} onClick={() => toggle("up")} aria-label="Good answer">
        <Thumb />
      </button>
      <button className="icon" aria-pressed={rating === "down"} onClick={() => toggle("down")} aria-label="Bad answer">
        <Thumb down />
      </button>
      {rating && !commenting && (
        <button className="link small" onClick={() => setCommenting(true)}>
          {comment ? "Edit comment" : "Add a comment"}
        </button>
      )}
      {commenting && (
        <form className="feedback-form" onSubmit={saveComment}>
          <label>
            {rating === "down" ? "What was wrong? (optional)" : "What was good? (optional)"}
            <textarea value={comment} maxLength={2000} rows={2} onChange={(event) => setComment(event.target.value)} />
          </label>
          <p className="muted small">{PRIVACY}</p>
          <button type="submit">Save comment</button>
          <button type="button" className="link" onClick={() => setCommenting(false)}>
            Close
          </button>
        </form>
      )}
      {shown && (
        <span role="status" className="muted small">
          {shown}
        </span>
      )}
    </div>
  );
}
