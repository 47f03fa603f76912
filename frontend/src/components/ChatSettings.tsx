import { useQuery } from "@tanstack/react-query";
import { keys } from "../api/queries";
import { api, type Schemas } from "../api/client";
import { failureText, unwrap, useWrite } from "../api/mutations";

type Defaults = Schemas["AnswerDefaults"];
type Chat = Schemas["ChatDetail"];


/** This chat's model, strict mode and history length, each "the default" unless chosen (the
 * default named), and the summary of what its questions no longer send whole. */
export default function ChatSettings({ chat, onChanged }: { chat: Chat; onChanged(): void }) {
  // The reader's defaults (their own model, if chosen): cached per session, so the next
  // account in this tab reads its own (a module-level cache kept the last one's).
  const defaults: Defaults | null =
    useQuery({
      queryKey: keys.answerDefaults,
      staleTime: 5 * 60_000,
      queryFn: async () => (await api.GET("/api/v1/chats/answer-settings")).data ?? null,
    }).data ?? null;
  const save = useWrite({
    write: (body: Schemas["ChatUpdate"]) =>
      unwrap(api.PATCH("/api/v1/chats/{chat_id}", { params: { path: { chat_id: chat.id } }, body }), "The setting was not saved"),
    onSettled: onChanged,
  });
  const problem = save.error ? failureText(save.error) : null;
  const change = (body: Schemas["ChatUpdate"]) => save.mutate(body);

  if (!defaults) return null;
  const strictValue = chat.strict == null ? "" : chat.strict ? "strict" : "open";
  return (
    <details className="chat-settings">
      <summary>Answer settings</summary>
      <div className="chat-settings-body">
        <label>
          Model
          <select aria-label="Chat model" value={chat.model ?? ""} onChange={(event) => change({ model: event.target.value || null })}>
            <option value="">Default ({defaults.model})</option>
            {defaults.models.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Answers
          <select
            aria-label="Chat answers"
            value={strictValue}
            onChange={(event) => change({ strict: event.target.value === "" ? null : event.target.value === "strict" })}
          >
            <option value="">Default ({defaults.strict ? "documents only" : "general answers allowed"})</option>
            <option value="strict">Documents only: no citation, no answer</option>
            <option value="open">General answers when the documents have nothing</option>
          </select>
        </label>
        <label>
          Remembers
          <select
            aria-label="Chat history"
            value={chat.history_pairs ?? ""}
            onChange={(event) => change({ history_pairs: event.target.value === "" ? null : Number(event.target.value) })}
          >
            <option value="">Default (last {defaults.history_pairs} exchanges)</option>
            {historyChoices(defaults.history_pairs_limit, chat.history_pairs).map((pairs) => (
              <option key={pairs} value={pairs}>
                {pairs === 0 ? "Nothing: each question on its own" : `${pairs} exchange${pairs === 1 ? "" : "s"}`}
              </option>
            ))}
          </select>
        </label>
        {chat.summary && (
          <div className="chat-summary">
            <h3>Summary of the earlier conversation</h3>
            <p>{chat.summary}</p>
          </div>
        )}
        {problem && (
          <p role="alert" className="error">
            {problem}
          </p>
        )}
      </div>
    </details>
  );
}

/** The history lengths offered: a few steps up to the server's limit, and the chat's own
 * (which the API may have set to any number). */
function historyChoices(limit: number, current: number | null | undefined): number[] {
  const steps = new Set([0, 1, 2, 5, 10, 20, 30, 50, limit].filter((pairs) => pairs <= limit));
  if (current != null) steps.add(current);
  return [...steps].sort((a, b) => a - b);
}
