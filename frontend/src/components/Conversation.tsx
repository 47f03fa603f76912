import { Fragment, useEffect, useId, useRef, useState, type KeyboardEvent, type ReactNode } from "react";
import { api, followAnswer, positionAfter, streamMessage, type Message, type Schemas, type Source } from "../api/client";
import AnswerMessage, { AnswerText } from "./AnswerMessage";
import { AttachmentList, useAttachments } from "./Attachments";
import { MentionList, mentionAt, optionId, useDocumentMatches, withoutMention, type Match } from "./MentionPicker";
import QuestionEditor from "./QuestionEditor";
import QuestionFilters, { filterCount, NO_FILTERS, requestFilters, type Filters } from "./QuestionFilters";
import { LiveResearchSteps } from "./ResearchSteps";
import { useAnswerStream, type Opener, type Pending } from "./useAnswerStream";
import { NARROW_SCREEN, useMediaQuery } from "../media";

interface Props {
  chatId: string | null;
  selectedDocumentIds: string[];
  collections: Schemas["CollectionRead"][];
  /** Above the messages: what the chat answers from. */
  header: ReactNode;
  /** In the composer: the documents picked for the next message. */
  nextMessageScope: ReactNode;
  onChatCreated(chatId: string): void;
  /** A document picked with "@" in the composer, for the next message. */
  onPickDocument(document: Match): void;
  /** The question is saved: the picks for it have been used. */
  onSent(): void;
  onAnswered(): void;
  onShowSources(sources: Source[] | null, highlighted: number | null, reveal?: boolean): void;
}

/** The chat's last questions that have no answer (failed, or stopped before their first word),
 * oldest first: what a question sent again in their place replaces. */
export function unansweredTail(list: Message[]): Message[] {
  let at = list.length;
  while (at > 0 && list[at - 1].role === "user") at -= 1;
  return list.slice(at);
}

export default function Conversation({
  chatId,
  selectedDocumentIds,
  collections,
  header,
  nextMessageScope,
  onChatCreated,
  onPickDocument,
  onSent,
  onAnswered,
  onShowSources,
}: Props) {
  const [messages, setMessages] = useState<Message[]>([]);
  // The unsent text survives a reload or a new login (kept per chat for this browser tab).
  const draftKey = `docchat.draft.${chatId ?? "new"}`;
  const [draft, setDraft] = useState(() => sessionStorage.getItem(draftKey) ?? "");
  // Touch keyboards have no Shift+Enter: phones get the short hint (it also fits their width).
  const narrow = useMediaQuery(NARROW_SCREEN);
  const { pending, failure, stopping, read, stop } = useAnswerStream();
  // The saved question whose answer failed and whose text went back to the composer: sent
  // again, it takes that question's place (sent as a new one, the chat showed it twice and
  // the model read it twice, once as history).
  const [returned, setReturned] = useState<Message | null>(null);
  const draftNow = useRef(draft);
  draftNow.current = draft;
  // The question being edited in place, and the one being replaced while its answer comes.
  const [editing, setEditing] = useState<string | null>(null);
  const [replacing, setReplacing] = useState<string | null>(null);
  // Research mode for the questions sent from here on (each part of a question searched too).
  const [research, setResearch] = useState(false);
  // Filters on the documents the questions sent from here on search (kind, year, name).
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const [filtering, setFiltering] = useState(false);
  // "@name" being typed at the caret: the documents it names, the highlighted one, and the
  // "@" whose list Escape closed.
  const composer = useRef<HTMLTextAreaElement>(null);
  const [caret, setCaret] = useState(0);
  const [active, setActive] = useState(0);
  const [dismissed, setDismissed] = useState<number | null>(null);
  const mention = mentionAt(draft, caret);
  const mentioning = mention && mention.start !== dismissed ? mention : null;
  const { matches, answered } = useDocumentMatches(mentioning ? mentioning.query : null);
  const listId = useId();
  // Files attached to the next message (paper clip or drop), picked for it once uploaded.
  const attachments = useAttachments((document) => onPickDocument({ id: document.id, name: document.filename, status: document.status }));
  const filePicker = useRef<HTMLInputElement>(null);
  const [dropping, setDropping] = useState(false);
  const bottom = useRef<HTMLDivElement>(null);
  const createdHere = useRef<string | null>(null);
  // A collection to ask within, for this chat's next messages (none: the usual scope).
  const [collectionId, setCollectionId] = useState("");
  useEffect(() => {
    if (chatId && chatId === createdHere.current) return; // already on screen from the stream
    setMessages([]);
    setReturned(null);
    if (!chatId) return;
    let current = true;
    void (async () => {
      const loaded: Message[] = [];
      for (let skip = 0; ; skip += 100) {
        const { data } = await api.GET("/api/v1/chats/{chat_id}/messages", {
          params: { path: { chat_id: chatId }, query: { skip, limit: 100 } },
        });
        if (!data) break;
        loaded.push(...data.items);
        if (loaded.length >= data.total) break;
      }
      if (!current) return;
      // An answer still being written (in another tab, before a reload): shown as it goes.
      const last = loaded[loaded.length - 1];
      const writing = last?.role === "assistant" && last.status === "streaming";
      setMessages(writing ? loaded.slice(0, -1) : loaded);
      if (writing) void resume(last, loaded);
    })();
    return () => {
      current = false;
    };
    // Once per chat opened; `resume` is remade each render.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [chatId]);

  useEffect(() => {
    if (draft) sessionStorage.setItem(draftKey, draft);
    else sessionStorage.removeItem(draftKey);
  }, [draft, draftKey]);

  useEffect(() => {
    bottom.current?.scrollIntoView?.({ block: "end" });
  }, [messages, pending?.text]);

  function send() {
    const question = draft.trim();
    if (!question || pending || attachments.uploading) return;
    setDraft("");
    const tail = unansweredTail(messages);
    // The question put back after a failure (edited or not) is asked in place of the chat's
    // unanswered questions, that one among them.
    void ask(question, returned && tail.some((message) => message.id === returned.id) ? tail[0] : null);
  }

  /** Ask `question`; with `replaces` (regenerate, or an edited question), it and what follows
   * it give way on screen now and on the server once the new answer is saved. */
  async function ask(question: string, replaces: Message | null) {
    if (pending || (!chatId && replaces)) return;
    setEditing(null);
    setReturned(null);
    setReplacing(replaces?.id ?? null);
    // Messages from the replaced question on; read when they are swapped (the list may grow).
    const before = (list: Message[]) => (replaces ? list.slice(0, Math.max(0, list.findIndex((m) => m.id === replaces.id))) : list);
    const narrowing = requestFilters(filters);
    const chosen = { ...(research ? { research: true } : {}), ...(narrowing ? { filters: narrowing } : {}) };
    const options = Object.keys(chosen).length ? { options: chosen } : {};
    const body: Schemas["MessageCreate"] = replaces
      ? // The replaced question's documents are asked about again (the server's default).
        { chat_id: chatId, content: question, replaces: replaces.id, ...options }
      : { chat_id: chatId, content: question, document_ids: selectedDocumentIds, collection_ids: collectionId ? [collectionId] : [], ...options };
    await write({ user: null, question, text: "", answerId: null }, (handlers, signal) => streamMessage(body, handlers, signal), before);
  }

  /** Follow an answer the server is still writing, from the text listed so far. */
  async function resume(answer: Message, listed: Message[]) {
    const at = listed.findIndex((message) => message.id === answer.id);
    const questionId = at > 0 ? listed[at - 1].id : null;
    await write(
      { user: null, question: "", text: answer.content, answerId: answer.id },
      (handlers, signal) => followAnswer(answer.id, positionAfter(answer.content), handlers, signal),
      (list) => list,
      questionId,
    );
  }

  /** Read an answer into the conversation: `before` is what stays of the list when it is done
   * (without the messages it replaces). */
  function write(initial: Pending, open: Opener, before: (list: Message[]) => Message[], questionId: string | null = null) {
    return read({
      initial,
      open,
      questionId,
      onSaved(newChatId) {
        if (!chatId) {
          createdHere.current = newChatId;
          onChatCreated(newChatId);
        }
        onSent();
      },
      onDone(message, asked, visible) {
        setMessages((previous) => [...before(previous), ...(asked ? [asked] : []), message]);
        if (message.sources?.length && visible) onShowSources(message.sources, null, false);
      },
      onEnd({ unanswered, giveBack }) {
        // A failed replacement replaced nothing: the earlier messages stay, on the server too.
        setReplacing(null);
        if (giveBack) {
          // Refused, failed, or stopped before the question was saved (too long, signed out,
          // server down), or the model could not answer: the text goes back to the composer.
          if (unanswered && !draftNow.current) setReturned(unanswered);
          setDraft((current) => current || initial.question);
          // Written here too: when the session has ended, this view is already gone.
          if (!sessionStorage.getItem(draftKey)) sessionStorage.setItem(draftKey, initial.question);
        }
        // Saved, but no answer came (stopped before its first word, or failed).
        if (unanswered) setMessages((previous) => [...previous, unanswered]);
        onAnswered();
      },
    });
  }

  /** Ask a question that has no answer again (its text leaves the composer if it went back
   * there when it failed). */
  function retry(question: Message) {
    setDraft((current) => (current === question.content ? "" : current));
    void ask(question.content, question);
  }

  function pick(match: Match) {
    if (!mentioning) return;
    const rest = withoutMention(draft, mentioning, caret);
    setDraft(rest.text);
    setCaret(rest.caret);
    setActive(0);
    onPickDocument(match);
    window.setTimeout(() => composer.current?.setSelectionRange(rest.caret, rest.caret), 0);
  }

  function onMentionKey(event: KeyboardEvent<HTMLTextAreaElement>): boolean {
    if (!mentioning) return false;
    if (event.key === "Escape") {
      setDismissed(mentioning.start);
      return true;
    }
    if (!matches.length) return false;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      const step = event.key === "ArrowDown" ? 1 : matches.length - 1;
      setActive((current) => (current + step) % matches.length);
      return true;
    }
    if ((event.key === "Enter" || event.key === "Tab") && !event.shiftKey) {
      pick(matches[Math.min(active, matches.length - 1)]);
      return true;
    }
    return false;
  }

  function onKeyDown(event: KeyboardEvent<HTMLTextAreaElement>) {
    if (onMentionKey(event)) {
      event.preventDefault();
      return;
    }
    if (event.key === "Escape" && !event.shiftKey && pending) {
      event.preventDefault();
      stop();
      return;
    }
    if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      send();
    }
  }

  const replacedAt = replacing ? messages.findIndex((message) => message.id === replacing) : -1;
  const shown = replacedAt >= 0 ? messages.slice(0, replacedAt) : messages;
  const lastQuestion = [...shown].reverse().find((message) => message.role === "user") ?? null;

  return (
    <section
      className={`conversation${dropping ? " dropping" : ""}`}
      aria-label="Conversation"
      onDragOver={(event) => {
        if (!event.dataTransfer.types.includes("Files")) return;
        event.preventDefault();
        setDropping(true);
      }}
      onDragLeave={(event) => {
        if (!event.currentTarget.contains(event.relatedTarget as Node | null)) setDropping(false);
      }}
      onDrop={(event) => {
        if (!event.dataTransfer.files.length) return;
        event.preventDefault();
        setDropping(false);
        attachments.attach(event.dataTransfer.files);
      }}
    >
      {dropping && (
        <p className="drop-hint" aria-hidden="true">
          Drop to attach to your next message
        </p>
      )}
      {header}
      <div className="messages" aria-live="polite">
        {!shown.length && !pending && (
          <div className="empty">
            <h2>Ask about your documents</h2>
            <p className="muted">Upload files on the right (or attach them with the paper clip), then ask a question. Answers cite the pages they use.</p>
          </div>
        )}
        {shown.map((message, index) =>
          message.role === "assistant" ? (
            <AnswerMessage
              key={message.id}
              message={message}
              onShowSources={onShowSources}
              onRegenerate={
                index === shown.length - 1 && !pending && lastQuestion ? () => void ask(lastQuestion.content, lastQuestion) : undefined
              }
            />
          ) : (
            <Fragment key={message.id}>
              {editing === message.id ? (
                <QuestionEditor
                  original={message.content}
                  later={shown.length - index - 1}
                  onSend={(text) => void ask(text, message)}
                  onCancel={() => setEditing(null)}
                />
              ) : (
                <article className="message user">
                  <p className="user-text" data-testid="message-user">
                    {message.content}
                  </p>
                  {!pending && (
                    <button className="link small edit-question" onClick={() => setEditing(message.id)} aria-label={`Edit the question: ${message.content.slice(0, 60)}`}>
                      Edit
                    </button>
                  )}
                </article>
              )}
              {shown[index + 1]?.role !== "assistant" &&
                (index + 1 < shown.length || !pending) &&
                (failure?.questionId === message.id ? (
                  <p className="no-answer answer-failed small" role="alert" data-testid="answer-failed">
                    The answer could not be written: {failure.detail.replace(/\.?$/, ".")}
                    {!pending && (
                      <button className="link small" onClick={() => retry(message)}>
                        Try again
                      </button>
                    )}
                  </p>
                ) : (
                  <p className="no-answer muted small" data-testid="no-answer">
                    No answer: stopped or failed before the first word
                    {!pending && (
                      <button className="link small" onClick={() => retry(message)}>
                        Try again
                      </button>
                    )}
                  </p>
                ))}
            </Fragment>
          ),
        )}
        {pending && (
          <>
            {pending.question && (
              // `data-saved`: the server has stored the question (Stop now keeps it).
              <article className="message user" data-testid="message-pending" data-saved={pending.user ? "true" : "false"}>
                <p className="user-text">{pending.question}</p>
              </article>
            )}
            <article className="message assistant streaming" data-testid="message-streaming" aria-busy="true">
              <LiveResearchSteps steps={pending.steps ?? []} />
              <AnswerText message={{ content: pending.text || "…", sources: null }} onCite={() => undefined} />
            </article>
          </>
        )}
        {failure && !failure.questionId && (
          <p role="alert" className="error" data-testid="message-failed">
            {failure.detail}
          </p>
        )}
        <div ref={bottom} />
      </div>
      <div className="composer">
        {collections.length > 1 && (
          <label className="scope-picker small">
            Ask within
            <select value={collectionId} onChange={(e) => setCollectionId(e.target.value)}>
              <option value="">{chatId ? "this chat's documents (or all you can read)" : "all documents you can read"}</option>
              {collections.map((collection) => (
                <option key={collection.id} value={collection.id}>
                  the collection {collection.name}
                </option>
              ))}
            </select>
          </label>
        )}
        {nextMessageScope}
        {filtering && <QuestionFilters filters={filters} onChange={setFilters} />}
        <AttachmentList items={attachments.items} onCancel={attachments.cancel} />
        <button className="icon attach" onClick={() => filePicker.current?.click()} title="Attach files to your next message" aria-label="Attach files">
          <svg viewBox="0 0 24 24" width="20" height="20" aria-hidden="true">
            <path
              d="M16.5 6.5v10a4.5 4.5 0 0 1-9 0V5a3 3 0 0 1 6 0v10.5a1.5 1.5 0 0 1-3 0V6.5"
              fill="none"
              stroke="currentColor"
              strokeWidth="1.8"
              strokeLinecap="round"
            />
          </svg>
        </button>
        <button
          className={`research-toggle filter-toggle small${filterCount(filters) ? " on" : ""}`}
          aria-expanded={filtering}
          aria-label={filterCount(filters) ? `Filters (${filterCount(filters)})` : "Filters"}
          onClick={() => setFiltering((open) => !open)}
          title="Search only documents of a kind, a year or a name in the questions you send next"
        >
          <svg viewBox="0 0 24 24" width="16" height="16" aria-hidden="true">
            <path d="M4 5h16l-6 7.5V19l-4-2v-4.5z" fill="none" stroke="currentColor" strokeWidth="2" strokeLinejoin="round" />
          </svg>
          <span className="research-label">{filterCount(filters) ? `Filters (${filterCount(filters)})` : "Filters"}</span>
        </button>
        <button
          className={`research-toggle small${research ? " on" : ""}`}
          aria-pressed={research}
          aria-label="Research"
          onClick={() => setResearch((on) => !on)}
          title="Research mode: each part of a question (“what does A do, and when did B…”) is searched on its own as well as the whole question; a model that calls tools then searches, lists and reads further on its own"
        >
          <svg viewBox="0 0 24 24" width="16" height="16" aria-hidden="true">
            <circle cx="10" cy="10" r="6" fill="none" stroke="currentColor" strokeWidth="2" />
            <path d="M14.5 14.5 20 20M7.5 10h5M10 7.5v5" fill="none" stroke="currentColor" strokeWidth="2" strokeLinecap="round" />
          </svg>
          <span className="research-label">Research</span>
        </button>
        <input
          ref={filePicker}
          type="file"
          multiple
          hidden
          data-testid="attach-input"
          onChange={(event) => {
            if (event.target.files) attachments.attach(event.target.files);
            event.target.value = "";
          }}
        />
        <label htmlFor="composer" className="sr-only">
          Message
        </label>
        {mentioning && (
          <MentionList
            id={listId}
            query={mentioning.query}
            answered={answered === mentioning.query}
            matches={matches}
            active={Math.min(active, Math.max(0, matches.length - 1))}
            onPick={pick}
          />
        )}
        <textarea
          id="composer"
          ref={composer}
          rows={2}
          placeholder={narrow ? "Ask a question (@ picks a document)" : "Ask a question (@ picks a document; Enter sends, Shift+Enter adds a line)"}
          value={draft}
          aria-controls={mentioning && matches.length ? listId : undefined}
          aria-activedescendant={mentioning && matches.length ? optionId(listId, Math.min(active, matches.length - 1)) : undefined}
          onChange={(e) => {
            setDraft(e.target.value);
            if (!e.target.value.trim()) setReturned(null); // emptied: what comes next is new
            setCaret(e.target.selectionStart);
            setActive(0);
          }}
          onSelect={(e) => setCaret(e.currentTarget.selectionStart)}
          onKeyDown={onKeyDown}
        />
        {pending ? (
          <button onClick={stop} className="danger" disabled={stopping}>
            {stopping ? "Stopping…" : "Stop"}
          </button>
        ) : (
          <button
            onClick={send}
            className="primary"
            disabled={!draft.trim() || attachments.uploading}
            title={attachments.uploading ? "Waiting for the attached files to upload" : undefined}
          >
            Send
          </button>
        )}
      </div>
    </section>
  );
}
