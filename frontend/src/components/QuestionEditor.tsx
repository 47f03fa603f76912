import { useId, useState } from "react";

/** A question edited in place: Enter (or Send) asks it instead, Escape cancels. */
export default function QuestionEditor({
  original,
  later,
  onSend,
  onCancel,
}: {
  original: string;
  later: number;
  onSend(text: string): void;
  onCancel(): void;
}) {
  const [text, setText] = useState(original);
  const id = useId();
  const changed = text.trim() && text.trim() !== original.trim();
  function submit() {
    if (text.trim()) onSend(text.trim());
  }
  return (
    <form
      className="message user question-editor"
      onSubmit={(event) => {
        event.preventDefault();
        submit();
      }}
    >
      <label htmlFor={id} className="sr-only">
        Edit your question
      </label>
      <textarea
        id={id}
        value={text}
        rows={Math.min(8, Math.max(2, text.split("\n").length))}
        autoFocus
        onChange={(event) => setText(event.target.value)}
        onKeyDown={(event) => {
          if (event.key === "Escape") onCancel();
          else if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) {
            event.preventDefault();
            submit();
          }
        }}
      />
      {later > 0 && (
        <p className="muted small">
          Sending replaces this question and the {later === 1 ? "answer" : `${later} messages`} after it.
        </p>
      )}
      <div className="editor-actions">
        <button type="submit" className="primary" disabled={!text.trim()}>
          {changed ? "Send" : "Ask again"}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

